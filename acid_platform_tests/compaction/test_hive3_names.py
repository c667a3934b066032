"""``acid.compactor.hive3.compatible``: compaction output under Hive 3's names (no ``_v<T>``),
staged in a hidden directory and renamed before the commit (issue 14 item 6)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner, run_worker
from acid_platform.compaction.config import HIVE3_COMPATIBLE
from acid_platform.compaction.hooks import HIVE3_WORKER_STEPS, WORKER_STEPS, on_checkpoint
from acid_platform.compaction.staging import STAGING_PREFIX, parse_staging_name
from acid_platform.errors import CompactionError, NotEnoughHistoryError, RenameUnsupportedError
from acid_platform.table.fsck import fsck_table
from acid_platform_tests.helpers import acid_dirs, kill_compaction_at, open_warehouse
from acid_platform_tests.s3_server import S3Server

from .conftest import KV, kv_schema, snapshot_rows, table_rows

HIVE3 = {HIVE3_COMPATIBLE: "true"}


def _make_table(wh: Warehouse, properties: dict[str, str] | None = None) -> Path:
    """Three inserts, an update and a delete: write ids 1..5, inserts and delete deltas."""
    t = wh.create_table(
        "t", KV, bucket_columns=["k"], num_buckets=2, properties=properties or HIVE3
    )
    for start in range(0, 60, 20):
        t.insert([{"k": k, "v": f"v{k}"} for k in range(start, start + 20)])
    t.update({"v": "'u'"}, where="k % 5 = 0")
    t.delete("k % 7 = 0")
    return Path(t.spec.location)


def _staging(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.startswith(STAGING_PREFIX))


def _marker(d: Path) -> dict[str, str]:
    data: dict[str, str] = json.loads((d / "_metadata_acid").read_text())
    return data


def test_major_and_minor_output_get_hive3_names_and_the_compacted_marker(wh: Warehouse) -> None:
    t = wh.create_table("t", KV, bucket_columns=["k"], num_buckets=2, properties=HIVE3)
    for start in range(0, 60, 20):
        t.insert([{"k": k, "v": f"v{k}"} for k in range(start, start + 20)])
    d = Path(t.spec.location)
    before = table_rows(wh, "t")
    (minor,) = compact_table(wh, "t", kind="minor")
    assert minor.state.value == "ready for cleaning"
    run_cleaner(wh)
    assert acid_dirs(d) == ["delta_0000001_0000003"]
    assert _marker(d / "delta_0000001_0000003") == {
        "thisFileVersion": "0",
        "dataFormat": "compacted",
    }
    assert (d / "delta_0000001_0000003" / "_orc_acid_version").read_text() == "2"
    assert table_rows(wh, "t") == before

    t.insert([{"k": 100, "v": "new"}])
    compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert acid_dirs(d) == ["base_0000004"]
    assert _marker(d / "base_0000004")["dataFormat"] == "compacted"
    after = table_rows(wh, "t")
    assert after == sorted([*before, (4, 536936448, 0, 100, "new")])  # bucket 1

    t.delete("k % 7 = 0")
    t.delete("k % 5 = 0")
    compact_table(wh, "t", kind="minor")  # delete deltas only: one directory
    run_cleaner(wh)
    assert acid_dirs(d) == ["base_0000004", "delete_delta_0000005_0000006"]
    assert table_rows(wh, "t") == [r for r in after if r[3] % 7 and r[3] % 5]
    assert _staging(d) == []
    assert fsck_table(wh, "t").problems == ()  # recorded under the final names


def test_a_minor_compaction_of_both_kinds_is_written_as_one_base(wh: Warehouse) -> None:
    """delta_1_5 + delete_delta_1_5 would need two renames, and either one alone hides the other
    kind's inputs: one base_5 is one atomic rename."""
    d = _make_table(wh)
    before = table_rows(wh, "t")
    (minor,) = compact_table(wh, "t", kind="minor")
    assert minor.state.value == "ready for cleaning" and minor.type is not None
    assert minor.type.value == "minor"
    run_cleaner(wh)
    assert acid_dirs(d) == ["base_0000005"]
    assert table_rows(wh, "t") == before


def test_the_default_stays_hive_4s_and_a_table_property_beats_the_warehouse(
    wh: Warehouse,
) -> None:
    d = _make_table(wh, {"orc.compress": "ZLIB"})
    (info,) = compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert acid_dirs(d) == [f"base_0000005_v{info.txn_id:07d}"]

    wh.set_conf(HIVE3_COMPATIBLE, "true")
    wh.table("t").insert([{"k": 100, "v": "new"}])
    compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert acid_dirs(d) == ["base_0000006"]

    wh.metastore.alter_table_properties("default", "t", {HIVE3_COMPATIBLE: "false"})
    wh.table("t").insert([{"k": 101, "v": "new"}])
    (info,) = compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert acid_dirs(d) == [f"base_0000007_v{info.txn_id:07d}"]


def test_staged_output_is_hidden_from_readers_until_renamed(wh: Warehouse) -> None:
    d = _make_table(wh)
    before = table_rows(wh, "t")
    seen: dict[str, object] = {}

    def look(step: str) -> None:
        if step == "worker.staged":
            seen["staged"] = _staging(d)
            seen["dirs"] = acid_dirs(d)
            seen["rows"] = table_rows(wh, "t")
        if step == "worker.renamed_one":
            seen["renamed"] = acid_dirs(d)

    with on_checkpoint(look):
        (info,) = compact_table(wh, "t", kind="major")
    assert seen["staged"] == [f"{STAGING_PREFIX}{info.txn_id}_base_0000005"]
    assert "base_0000005" not in seen["dirs"]  # type: ignore[operator]
    assert seen["rows"] == before
    assert "base_0000005" in seen["renamed"]  # type: ignore[operator]
    assert parse_staging_name(f"{STAGING_PREFIX}{info.txn_id}_base_0000005") == (
        info.txn_id,
        "base_0000005",
    )


@pytest.mark.parametrize("hive3", [True, False])
def test_a_snapshot_older_than_the_base_fails_loudly_instead_of_reading_it(
    wh: Warehouse, hive3: bool
) -> None:
    """The trade-off: a reader whose snapshot has a write id <= N open must not read base_N
    (that write's rows are in it). Hive 4's ``_v`` hides the base from it, so it reads the
    older directories; a Hive 3 name cannot hide it, so (Hive's isValidBase, then Hive's
    ACID_NOT_ENOUGH_HISTORY) the read fails and is retried with a new snapshot. Never wrong
    rows either way."""
    d = _make_table(wh, HIVE3 if hive3 else {"orc.compress": "ZLIB"})
    ms = wh.metastore
    before = table_rows(wh, "t")
    wh.transaction()
    wh.table("t").insert([{"k": 500, "v": "late"}])  # write id 6, open in the old snapshot
    old_txns = ms.valid_txns()
    old_ids = ms.valid_write_ids(None, "default", "t", valid_txns=old_txns)
    wh.commit()
    compact_table(wh, "t", kind="major")
    if hive3:
        assert "base_0000006" in acid_dirs(d)
        with pytest.raises(NotEnoughHistoryError, match="base_0000006"):
            snapshot_rows(d, old_ids, old_txns, kv_schema())
    else:
        assert snapshot_rows(d, old_ids, old_txns, kv_schema()) == before
    new_txns = ms.valid_txns()
    new_ids = ms.valid_write_ids(None, "default", "t", valid_txns=new_txns)
    assert snapshot_rows(d, new_ids, new_txns, kv_schema()) == table_rows(wh, "t")
    assert len(table_rows(wh, "t")) == len(before) + 1


def _revoke_retry_clean(wh: Warehouse, cq: int) -> None:
    assert wh.metastore.revoke_timed_out_workers(timeout_s=0) == [cq]
    (outcome,) = run_worker(wh)
    assert outcome.state.value == "ready for cleaning"
    run_cleaner(wh)


_KILL_STEPS = [s for s in WORKER_STEPS if s != "worker.committed"] + list(HIVE3_WORKER_STEPS)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "step"),
    [("major", s) for s in _KILL_STEPS] + [("minor", s) for s in HIVE3_WORKER_STEPS],
)
def test_worker_killed_at_any_step(wh: Warehouse, tmp_path: Path, kind: str, step: str) -> None:
    """kill -9 anywhere, the rename included: the table reads the same (never a row twice),
    the retried compaction and the cleaner finish, no staging directory is left."""
    d = _make_table(wh)
    before = table_rows(wh, "t")
    ms = wh.metastore
    cq = ms.enqueue_compaction("default", "t", None, kind)
    assert cq is not None
    kill_compaction_at(step, "worker", ms.url, tmp_path)
    assert table_rows(wh, "t") == before  # right after the kill
    if step == "worker.renamed_one":
        assert "base_0000005" in acid_dirs(d)  # visible, its txn never to commit
    _revoke_retry_clean(wh, cq)
    assert table_rows(wh, "t") == before
    assert _staging(d) == []
    assert acid_dirs(d) == ["base_0000005"]  # a minor one of both kinds too
    assert fsck_table(wh, "t").problems == ()


def test_a_leftover_staging_directory_is_removed_by_the_cleaner(wh: Warehouse) -> None:
    d = _make_table(wh)
    before = table_rows(wh, "t")

    def fail(step: str) -> None:
        if step == "worker.staged":
            raise OSError("disk gone")

    with on_checkpoint(fail), pytest.raises(CompactionError, match="disk gone"):
        compact_table(wh, "t", kind="major")
    # a failing worker removes its own staging; a killed one cannot: leave one behind
    aborted = wh.metastore.open_txn()
    wh.metastore.abort_txn(aborted)
    stale = d / f"{STAGING_PREFIX}{aborted}_base_0000005"
    stale.mkdir()
    (stale / "bucket_00000").write_bytes(b"half")
    running = wh.metastore.open_txn()  # a live compactor's staging stays
    live = d / f"{STAGING_PREFIX}{running}_base_0000005"
    live.mkdir()
    assert table_rows(wh, "t") == before
    compact_table(wh, "t", kind="major")
    run_cleaner(wh)
    assert _staging(d) == [live.name]
    assert table_rows(wh, "t") == before
    wh.metastore.abort_txn(running)


def test_an_object_store_refuses_the_setting(tmp_path: Path, s3: S3Server) -> None:
    with open_warehouse(tmp_path, s3=s3) as wh:
        with pytest.raises(RenameUnsupportedError, match="atomic directory rename"):
            wh.set_conf(HIVE3_COMPATIBLE, "true")
        wh.set_conf(HIVE3_COMPATIBLE, "false")
        t = wh.create_table("t", KV, properties=HIVE3)
        t.insert([{"k": 1, "v": "a"}])
        t.insert([{"k": 2, "v": "b"}])
        with pytest.raises(CompactionError, match="RenameUnsupportedError.*object store"):
            compact_table(wh, "t", kind="major")


def test_only_well_formed_staging_names_parse() -> None:
    assert parse_staging_name("_tmp_compactor_x_base_0000005") is None
    assert parse_staging_name("_tmp_compactor_5_notadir") is None
    assert parse_staging_name("_tmp_compactor_5_delta_0000001_0000002") == (
        5,
        "delta_0000001_0000002",
    )


def test_a_minor_compaction_over_an_aborted_write_is_cleaned_to_the_end(wh: Warehouse) -> None:
    """Compacted output under Hive 3's names holds no aborted event (its marker says so): the
    cleaner finishes the entry instead of keeping it for the aborted id inside its range."""
    t = wh.create_table("t", KV, properties=HIVE3)
    t.insert([{"k": 1, "v": "a"}])
    wh.transaction()
    wh.table("t").insert([{"k": 2, "v": "gone"}])
    wh.rollback()
    t.insert([{"k": 3, "v": "c"}])
    (info,) = compact_table(wh, "t", kind="minor")
    report = run_cleaner(wh)
    assert report.cleaned_ids == (info.id,)
    assert wh.metastore.get_compaction(info.id).state.value == "succeeded"
    assert acid_dirs(Path(t.spec.location)) == ["delta_0000001_0000003"]
    assert sorted(r["k"] for r in wh.table("t").scan().to_arrow().to_pylist()) == [1, 3]
