"""Above ``hive.transactional.events.mem`` delete events are merged in key order instead of held:
the same rows, memory bounded by batches rather than by the table's delete events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.errors import InvalidSettingError
from acid_platform.format import (
    EventWriter,
    ValidWriteIdList,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.format.delete_merge import (
    ENV_DELETE_EVENTS_CAP,
    SortMergeDeletes,
    delete_events_cap,
)
from acid_platform.format.merge_on_read import ReadStats
from acid_platform_tests.helpers import open_warehouse

SCHEMA = pa.schema([("k", pa.int64())])
B0 = encode_bucket(0)
ALL = 9223372036854775807


def _write(path: Path, events: pa.Table, batch_size: int = 1024) -> None:
    write_acid_version_file(path.parent)
    # a small stripe size: several stripes per file, so the merge crosses stripe boundaries
    with EventWriter(path, SCHEMA, stripe_size=1024, batch_size=batch_size) as w:
        for part in events.to_batches(max_chunksize=4096):
            w.write(pa.Table.from_batches([part]))


def _table(tmp_path: Path, n: int = 200_000) -> tuple[Path, list[int]]:
    """delta_1 with n rows (rowIds 0..n-1), then deletes in three delete deltas (one by an
    aborted write id); the values a reader sees."""
    t = tmp_path / "t"
    # random values: pyarrow cuts stripes by encoded size, and a counting column encodes to little
    values = np.random.default_rng(7).integers(0, 1 << 60, n)
    _write(
        t / delta_dir_name(1, 1, 0) / bucket_file_name(0),
        insert_events(pa.table({"k": values}), 1, B0),
    )
    gone: set[int] = set()
    for write_id, step in ((2, 3), (3, 7), (4, 5)):
        rows = np.arange(step, n, step, dtype=np.int64)
        _write(
            t / delete_delta_dir_name(write_id, write_id, 0) / bucket_file_name(0),
            delete_events(np.ones(len(rows)), np.full(len(rows), B0), rows, write_id, SCHEMA),
        )
        if write_id != 3:  # write id 3 aborted below
            gone |= set(rows.tolist())
    return t, [int(values[r]) for r in range(n) if r not in gone]


def test_sort_merge_reads_the_same_rows_with_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("acid_platform.format.delete_merge.MERGE_BATCH_ROWS", 1024)
    t, expected = _table(tmp_path)
    ids = ValidWriteIdList.parse(f"db.t:4:{ALL}::3")
    held = ReadStats()
    assert read_acid(t, ids, columns=["k"], stats=held).column("k").to_pylist() == expected
    assert held.delete_sort_merges == 0
    merged = ReadStats()
    got = read_acid(t, ids, columns=["k"], stats=merged, delete_events_cap=1000)
    assert got.column("k").to_pylist() == expected
    assert merged.delete_sort_merges == 1
    assert merged.rows_deleted == held.rows_deleted
    # held: every valid event of the split; merged: a batch per file and one stripe's events
    assert held.delete_set_bytes >= 8 * held.rows_deleted
    assert held.stripes_read > 4
    assert merged.delete_set_bytes < held.delete_set_bytes / 4


def test_keys_going_back_reopen_the_merge(tmp_path: Path) -> None:
    t, _ = _table(tmp_path, n=10_000)
    fs = pafs.LocalFileSystem()
    paths = sorted(str(p) for p in t.glob("delete_delta_*/bucket_*"))
    merge = SortMergeDeletes(
        fs, paths, ValidWriteIdList.parse(f"db.t:4:{ALL}::"), 1, batch_rows=100
    )
    keys = np.arange(0, 10, dtype=np.int64)
    ones, b0 = np.ones(10, np.int64), np.full(10, B0, np.int32)
    first = merge.contains(ones, b0, keys + 9000)
    assert merge.contains(ones, b0, keys).tolist() == [
        k % 3 == 0 and k > 0 or k % 5 == 0 and k > 0 or k % 7 == 0 and k > 0 for k in range(10)
    ]
    assert merge.reopened == 1
    assert first.tolist() == [(k % 3 == 0 or k % 5 == 0 or k % 7 == 0) for k in range(9000, 9010)]
    # unsorted keys within one call are answered too
    shuffled = np.array([7, 2, 9, 3], np.int64) + 5000
    assert merge.contains(ones[:4], b0[:4], shuffled).tolist() == [
        (k % 3 == 0 or k % 5 == 0 or k % 7 == 0) for k in shuffled.tolist()
    ]


def test_cap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert delete_events_cap() == 10_000_000  # Hive's hive.transactional.events.mem
    monkeypatch.setenv(ENV_DELETE_EVENTS_CAP, "5")
    assert delete_events_cap() == 5
    assert delete_events_cap(7) == 7


def test_the_session_setting_reaches_scans(tmp_path: Path) -> None:
    with open_warehouse(tmp_path, None, "sqlite") as wh:
        wh.sql("CREATE TABLE t (k INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
        wh.sql("INSERT INTO t VALUES (1), (2), (3), (4)")
        wh.sql("DELETE FROM t WHERE k IN (2, 3)")
        assert wh.table("t").scan().delete_events_cap is None  # the process default
        wh.sql("SET hive.transactional.events.mem=0")
        scan = wh.table("t").scan()
        assert scan.delete_events_cap == 0
        assert sorted(scan.to_arrow().column("k").to_pylist()) == [1, 4]
        assert wh.sql("SELECT k FROM t ORDER BY k").to_pylist() == [{"k": 1}, {"k": 4}]
        wh.sql("SET hive.transactional.events.mem=lots")
        with pytest.raises(InvalidSettingError, match="hive.transactional.events.mem"):
            wh.table("t").scan()
