"""``kill -9`` of a streaming writer at random points, many rounds: committed transactions stay
visible, the rest are invisible (and aborted once the housekeeper reaps them), no half-written
row ever appears; later writers, compaction and cleaning go on working."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter
from acid_platform.table.verify import verify_table

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
ROUNDS = 12


def _journal(path: Path) -> tuple[dict[int, list[int]], set[int], set[int]]:
    """Rows of each begun transaction, the surely committed ones, the maybe committed one."""
    rows: dict[int, list[int]] = {}
    committed: set[int] = set()
    maybe: set[int] = set()
    text = path.read_text()
    lines = text.splitlines()
    if not text.endswith("\n"):
        lines = lines[:-1]  # cut short by the kill
    for line in lines:
        word, k, *rest = line.split(" ")
        if word == "begin" and rest:
            rows[int(k)] = [int(x) for x in rest[0].split(",")]
        elif word == "committing":
            maybe.add(int(k))
        elif word == "committed":
            committed.add(int(k))
    return rows, committed, maybe - committed


def _visible(wh: Warehouse, seed: int | None = None) -> dict[int, str]:
    """The rows a new snapshot reads (only those of round ``seed``'s writer, if given)."""
    rows = {r["id"]: r["v"] for r in wh.table("t").scan().to_arrow().to_pylist()}
    return rows if seed is None else {i: v for i, v in rows.items() if i // 1_000_000 == seed}


def _check(
    visible: dict[int, str], known: dict[str, set[int]], rows: dict[int, list[int]]
) -> set[int]:
    """Every visible row is a committed (or in-commit) transaction's, whole and unchanged;
    returns the transactions seen."""
    assert all(v == f"v{i}" for i, v in visible.items())  # no half-written row
    seen = {k for k, ids in rows.items() if any(i in visible for i in ids)}
    for k in seen:
        assert all(i in visible for i in rows[k]), f"transaction {k} is visible only in part"
    assert set(visible) == {i for k in seen for i in rows[k]}  # nothing else
    assert known["committed"] <= seen <= known["committed"] | known["maybe"]
    return seen


def _round(wh: Warehouse, tmp: Path, seed: int, rng: random.Random) -> set[int]:
    journal = tmp / f"journal-{seed}"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acid_platform_tests.streaming.procs",
            wh.root,
            wh.metastore.url,
            str(seed),
            str(journal),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        target = rng.randint(1, 40)  # lines of journal: the kill lands anywhere in a batch
        deadline = time.monotonic() + 120
        while not journal.exists() or len(journal.read_text().splitlines()) < target:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"the writer exited ({proc.returncode}): {err}")
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.001)
        time.sleep(rng.random() * 0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    rows, committed, maybe = _journal(journal)
    known = {"committed": committed, "maybe": maybe}
    seen = _check(_visible(wh, seed), known, rows)  # right after the kill
    deadline = time.monotonic() + 120
    while any(r["Transaction State"] == "OPEN" for r in wh.metastore.show_transactions()):
        wh.metastore.reap_timed_out(timeout_s=0.2)  # the housekeeper, once it is silent
        assert time.monotonic() < deadline, "the dead writer's transactions were never reaped"
        time.sleep(0.05)
    assert _check(_visible(wh, seed), known, rows) == seen  # reaped: still the same
    return {i for k in seen for i in rows[k]}


def test_kill_9_streaming_writer_rounds(wh: Warehouse, tmp_path: Path) -> None:
    wh.create_table("t", [("id", "bigint"), ("v", "string")], bucket_columns=["id"], num_buckets=2)
    rng = random.Random(20240501)
    expected: set[int] = set()
    crashed_side_files = 0
    for seed in range(1, ROUNDS + 1):
        expected |= _round(wh, tmp_path, seed, rng)
        crashed_side_files += len(list(Path(wh.table("t").spec.location).glob("*/*_flush_length")))
        assert set(_visible(wh)) == expected
        if seed % 4 == 0:  # compaction and cleaning between rounds, over the crashed deltas
            compact_table(wh, "t", kind="minor" if seed % 8 else "major")
            run_cleaner(wh)
            assert set(_visible(wh)) == expected
    assert crashed_side_files  # crashed writers left side files, which readers went by
    # a later writer, a major compaction and the cleaner all work over what the crashes left
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(3)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .connect()
    )
    conn.begin_transaction()
    conn.write([b"-1,v-1", b"-2,v-2"])
    conn.commit_transaction()
    conn.close()
    expected |= {-1, -2}
    assert set(_visible(wh)) == expected
    assert [f for f in verify_table(wh, "t") if not f.passed] == []
    (info,) = compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    names = [p.name for p in Path(wh.table("t").spec.location).iterdir()]
    assert names == [f"base_{info.highest_write_id:07d}_v{info.txn_id:07d}"]
    assert set(_visible(wh)) == expected
    assert all(v == f"v{i}" for i, v in _visible(wh).items())
