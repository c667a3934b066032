"""``kill -9`` of a worker and of a cleaner at each of their steps: the table always reads
correctly afterwards, and the next worker/cleaner finishes the job.

The child process stops at the chosen step by itself (``ACID_TEST_PAUSE_AT``) and tells
us so through a marker file; only then is it killed, so the kill lands exactly there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner, run_worker
from acid_platform.compaction.hooks import (
    CLEANER_STEPS,
    WORKER_STEPS,
)
from acid_platform.errors import CompactionTimeoutError
from acid_platform_tests.helpers import acid_dirs, kill_compaction_at, open_warehouse

from .conftest import KV, table_rows

pytestmark = pytest.mark.slow


def _make_table(wh: Warehouse) -> Path:
    """A bucketed table (two output files per compaction) with inserts, updates and deletes."""
    t = wh.create_table("t", KV, bucket_columns=["k"], num_buckets=2)
    for start in range(0, 60, 20):
        t.insert([{"k": k, "v": f"v{k}"} for k in range(start, start + 20)])
    t.update({"v": "'u'"}, where="k % 5 = 0")
    t.delete("k % 7 = 0")
    return Path(t.spec.location)


@pytest.mark.parametrize(
    ("kind", "step"),
    [("major", s) for s in WORKER_STEPS]
    + [("minor", "worker.batch_written"), ("minor", "worker.files_written")],
)
def test_worker_killed_at_any_step(wh: Warehouse, tmp_path: Path, kind: str, step: str) -> None:
    d = _make_table(wh)
    before = table_rows(wh, "t")
    dirs_before = acid_dirs(d)
    ms = wh.metastore
    cq = ms.enqueue_compaction("default", "t", None, kind)
    assert cq is not None
    kill_compaction_at(step, "worker", wh.metastore.url, tmp_path)

    assert table_rows(wh, "t") == before  # right after the kill
    entry = ms.get_compaction(cq)
    committed = step == "worker.committed"
    assert entry.state.value == ("ready for cleaning" if committed else "working")
    killed_txn = entry.txn_id
    if not committed:
        assert set(dirs_before) <= set(acid_dirs(d))  # only new, invisible directories
        assert ms.revoke_timed_out_workers(timeout_s=0) == [cq]
        assert table_rows(wh, "t") == before
        (outcome,) = run_worker(wh)
        assert outcome.state.value == "ready for cleaning"
    run_cleaner(wh)
    assert table_rows(wh, "t") == before
    left = acid_dirs(d)
    assert not [n for n in left if n.endswith(f"_v{killed_txn:07d}")] or committed
    assert all("_v" in n for n in left)  # every input was compacted and cleaned
    assert len(left) == (1 if kind == "major" else 2)


@pytest.mark.parametrize("step", CLEANER_STEPS)
def test_cleaner_killed_at_any_step(wh: Warehouse, tmp_path: Path, step: str) -> None:
    d = _make_table(wh)
    before = table_rows(wh, "t")
    (info,) = compact_table(wh, "t", kind="major")
    wh.transaction()  # an aborted write too, so the cleaner has aborted directories to remove
    wh.table("t").insert([{"k": 1000, "v": "gone"}])
    wh.rollback()
    kill_compaction_at(step, "cleaner", wh.metastore.url, tmp_path)

    assert table_rows(wh, "t") == before
    state = wh.metastore.get_compaction(info.id).state.value
    assert state == ("succeeded" if step == "cleaner.marked" else "ready for cleaning")
    report = run_cleaner(wh)  # idempotent: picks up where the killed one stopped
    assert table_rows(wh, "t") == before
    assert acid_dirs(d) == [f"base_0000005_v{info.txn_id:07d}"]
    assert wh.metastore.get_compaction(info.id).state.value == "succeeded"
    assert step == "cleaner.marked" or report.cleaned_ids == (info.id,)


# --------------------------------------------------------------------------- issue 13 item 2

KILL_TIMEOUT = {"hive.txn.timeout": "2s", "acid.lock.wait.timeout.s": "3"}
_PG_STEPS = ("worker.claimed", "worker.files_written")


@pytest.mark.parametrize(
    ("backend", "step"),
    [("sqlite", s) for s in WORKER_STEPS if s != "worker.committed"]
    + [("postgresql", s) for s in _PG_STEPS],
)
def test_after_a_killed_worker_writers_and_and_wait_go_on_by_themselves(
    tmp_path: Path, backend: str, step: str
) -> None:
    """No manual revoke: the next writer is not blocked, and ``COMPACT … AND WAIT`` takes the
    dead worker's entry back once its compactor txn times out (hive.txn.timeout) and runs it."""
    with open_warehouse(tmp_path, KILL_TIMEOUT, backend) as wh:
        d = _make_table(wh)
        cq = wh.metastore.enqueue_compaction("default", "t", None, "major")
        assert cq is not None
        kill_compaction_at(step, "worker", wh.metastore.url, tmp_path)
        dead = wh.metastore.get_compaction(cq)
        assert dead.state.value == "working" and dead.txn_id is not None

        wh.table("t").update({"v": "'after'"}, "k = 1")  # the next writer is not blocked
        expected = sorted(
            (r["k"], r["v"]) for r in wh.table("t").scan(columns=["k", "v"]).to_arrow().to_pylist()
        )
        (info,) = compact_table(wh, "t", kind="major")  # AND WAIT: takes the entry back
        assert info.id == cq and info.state.value == "ready for cleaning"
        assert info.txn_id != dead.txn_id
        assert wh.metastore.get_txn_state(dead.txn_id).value == "aborted"
        run_cleaner(wh)
        rows = sorted(
            (r["k"], r["v"]) for r in wh.table("t").scan(columns=["k", "v"]).to_arrow().to_pylist()
        )
        assert rows == expected
        assert [n for n in acid_dirs(d) if n.startswith("delta")] == []


def test_and_wait_gives_up_after_its_time_limit_naming_the_queue_state(wh: Warehouse) -> None:
    _make_table(wh)
    ms = wh.metastore
    cq = ms.enqueue_compaction("default", "t", None, "major")
    held = ms.claim_compaction("busy-host-7")  # a live worker elsewhere holds it
    assert held is not None and held.id == cq
    wh.set_conf("hive.compactor.wait.timeout", "300ms")
    with pytest.raises(CompactionTimeoutError) as info:
        compact_table(wh, "t", kind="major")
    message = str(info.value)
    assert f"compaction {cq} is working by worker busy-host-7 (compactor txn {held.txn_id})" in (
        message
    )
    assert "hive.compactor.wait.timeout" in message and "stay queued" in message
    assert ms.get_compaction(cq).state.value == "working"  # a live worker's entry is left alone
