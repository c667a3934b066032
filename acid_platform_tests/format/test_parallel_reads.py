"""Reading fast without reading differently: column groups decoded on several threads, rows
dropped as they are decoded, and reads restricted to given ROW__IDs (key-index stripe skipping)."""

from __future__ import annotations

import decimal
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.format import (
    DeleteLookup,
    DeleteSet,
    EventWriter,
    ReadSplit,
    ValidWriteIdList,
    acid_state,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    parallel,
    plan_splits,
    read_acid,
    read_balanced,
    write_acid_version_file,
)
from acid_platform.format.file_reader import ORIGINAL_KIND
from acid_platform.format.merge_on_read import ReadStats
from acid_platform.format.reader import OrcDataFile

B0 = encode_bucket(0)
ALL = 9223372036854775807
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("price", pa.decimal128(7, 2)),
        ("qty", pa.int32()),
        ("tags", pa.list_(pa.string())),
    ]
)
N = 60_000


def _rows(n: int = N, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
            "price": pa.array(
                [None if i % 5 == 0 else decimal.Decimal(int(i % 1000)) / 100 for i in ids],
                pa.decimal128(7, 2),
            ),
            "qty": pa.array(ids % 100, pa.int32()),
            "tags": pa.array([[f"t{i % 3}"] * (i % 3) for i in ids], pa.list_(pa.string())),
        },
        schema=SCHEMA,
    )


def _write(path: Path, events: pa.Table, stripe_size: int = 1024) -> None:
    write_acid_version_file(path.parent)
    with EventWriter(path, SCHEMA, stripe_size=stripe_size) as w:
        for batch in events.to_batches(max_chunksize=1024):
            w.write(batch)


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel column groups even for the tests' small stripes."""
    monkeypatch.setenv("ACID_READ_THREADS", "3")
    monkeypatch.setattr("acid_platform.format.reader.PARALLEL_MIN_ROWS", 1)


def test_column_groups_balance_cost_and_keep_order() -> None:
    cols = [
        ("a", pa.int64()),
        ("d1", pa.decimal128(7, 2)),
        ("b", pa.int64()),
        ("d2", pa.decimal128(7, 2)),
        ("c", pa.int64()),
    ]
    groups = parallel.column_groups(cols, 2)
    assert sorted(c for g in groups for c in g) == sorted(c for c, _ in cols)
    assert [g for g in groups if "d1" in g] != [g for g in groups if "d2" in g]  # split the heavy
    for g in groups:
        assert g == [c for c, _ in cols if c in g]
    assert parallel.column_groups(cols[:1], 4) == [["a"]]


@pytest.mark.slow
def test_parallel_stripe_read_equals_serial_read(
    tmp_path: Path, threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bucket_00000"
    _write(path, insert_events(_rows(), 1, B0))
    fs = pafs.LocalFileSystem()
    requests: list[list[str] | None] = [
        None,
        ["row"],
        ["originalTransaction", "rowId", "row.price", "row.id", "row.tags"],
        ["row.name", "row.qty"],
    ]
    with OrcDataFile(fs, str(path)) as f:
        assert f.num_stripes > 1
        parallel_batches = [
            f.read_stripe(i, cols) for cols in requests for i in range(f.num_stripes)
        ]
        keep = np.arange(f.stripe_rows()[0]) % 3 == 0
        parallel_kept = f.read_stripe(0, ["rowId", "row.price", "row.name"], keep=keep)
    monkeypatch.setenv("ACID_READ_THREADS", "1")
    with OrcDataFile(fs, str(path)) as f:
        serial = [f.read_stripe(i, cols) for cols in requests for i in range(f.num_stripes)]
        serial_kept = f.read_stripe(0, ["rowId", "row.price", "row.name"]).filter(pa.array(keep))
    for p, s in zip(parallel_batches, serial, strict=True):
        assert p.schema.remove_metadata() == s.schema.remove_metadata()
        assert p.to_pylist() == s.to_pylist()
    assert parallel_kept.to_pylist() == serial_kept.to_pylist()


def test_parallel_read_keeps_null_rows_of_delete_events(tmp_path: Path, threads: None) -> None:
    path = tmp_path / "bucket_00000"
    _write(path, delete_events([1, 1, 1], [B0] * 3, [0, 1, 2], 2, SCHEMA))
    with OrcDataFile(pafs.LocalFileSystem(), str(path)) as f:
        batch = f.read_stripe(0, ["row.id", "row.name"])
    assert batch.column("row").null_count == 3


def test_read_acid_is_the_same_with_threads(
    tmp_path: Path, threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = tmp_path / "t"
    _write(t / delta_dir_name(1, 1) / bucket_file_name(0), insert_events(_rows(), 1, B0))
    _write(
        t / delete_delta_dir_name(2, 2) / bucket_file_name(0),
        delete_events(np.ones(500), np.full(500, B0), np.arange(0, 5000, 10), 2, SCHEMA),
    )
    ids = ValidWriteIdList.parse(f"db.t:2:{ALL}::")
    got = read_acid(t, ids, with_row_id=True, schema=SCHEMA)
    monkeypatch.setenv("ACID_READ_THREADS", "1")
    want = read_acid(t, ids, with_row_id=True, schema=SCHEMA)
    assert got.num_rows == N - 500
    assert got.equals(want)


def test_nested_parallel_work_on_a_pool_thread_runs_inline() -> None:
    seen: list[str] = []

    def inner() -> int:
        seen.append(threading.current_thread().name)
        return 1

    def outer() -> list[int]:
        return parallel.run_parallel([inner, inner, inner])

    # outer runs on a pool thread for the second task: its nested tasks must not wait for slots
    results = parallel.run_parallel([outer, outer])
    assert results == [[1, 1, 1], [1, 1, 1]]
    assert len(seen) == 6


def test_delete_set_intersects_key_ranges() -> None:
    ds = DeleteSet.from_arrays([1, 1, 3], [B0, B0, B0], [5, 9, 0])
    assert ds.intersects(None, (1, B0, 5))
    assert not ds.intersects((1, B0, 5), (1, B0, 8))
    assert ds.intersects((1, B0, 5), (1, B0, 9))
    assert not ds.intersects((1, B0, 9), (2, B0, 100))
    assert ds.intersects((1, B0, 9), (3, B0, 0))
    assert not ds.intersects((3, B0, 0), (9, B0, 0))
    assert not DeleteSet.empty().intersects(None, (9, B0, 9))


def test_read_by_row_ids_reads_only_stripes_that_hold_them(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _write(t / delta_dir_name(1, 1) / bucket_file_name(0), insert_events(_rows(), 1, B0))
    _write(
        t / delta_dir_name(2, 2) / bucket_file_name(1),
        insert_events(_rows(100, start=N), 2, encode_bucket(1)),
    )
    _write(
        t / delete_delta_dir_name(3, 3) / bucket_file_name(0),
        delete_events([1], [B0], [3], 3, SCHEMA),
    )
    ids = ValidWriteIdList.parse(f"db.t:3:{ALL}::")
    wanted = DeleteSet.from_arrays([1, 1, 1, 2], [B0, B0, B0, encode_bucket(1)], [3, 4, 7, 99])
    stats = ReadStats()
    got = read_acid(t, ids, columns=["id", "name"], schema=SCHEMA, row_ids=wanted, stats=stats)
    # rowId 3 is deleted: wanted but not visible
    assert got.column("id").to_pylist() == [4, 7, N + 99]
    assert stats.stripes_skipped > 0 and stats.stripes_read == 2
    everything = read_acid(t, ids, with_row_id=True, schema=SCHEMA)
    rid = everything.column("row__id").combine_chunks()
    all_ids = DeleteSet.from_arrays(
        rid.field("writeid").to_numpy(), rid.field("bucketid").to_numpy(), rid.field("rowid")
    )
    assert read_acid(t, ids, with_row_id=True, schema=SCHEMA, row_ids=all_ids).equals(everything)
    assert read_acid(t, ids, schema=SCHEMA, row_ids=DeleteSet.empty()).num_rows == 0


def _bucket_with_deltas(t: Path) -> pa.Table:
    """Bucket 0: a base and six small deltas; bucket 1: one delta; deletes in both buckets.
    Returns the rows a reader must see, in split then file order."""
    B1 = encode_bucket(1)
    base = _rows(20_000)
    _write(t / base_dir_name(1) / bucket_file_name(0), insert_events(base, 1, B0))
    parts = [base.filter(pa.array(np.arange(20_000) % 9 != 0))]
    for w in range(2, 8):
        rows = _rows(1_000, start=w * 100_000)
        _write(t / delta_dir_name(w, w) / bucket_file_name(0), insert_events(rows, w, B0))
        parts.append(rows.filter(pa.array(np.arange(1_000) % 9 != 0)) if w == 3 else rows)
    other = _rows(5_000, start=900_000)
    _write(t / delta_dir_name(8, 8) / bucket_file_name(1), insert_events(other, 8, B1))
    parts.append(other.slice(1))
    gone = np.arange(0, 20_000, 9)
    gone3 = np.arange(0, 1_000, 9)
    _write(
        t / delete_delta_dir_name(9, 9) / bucket_file_name(0),
        delete_events(
            np.concatenate([np.ones(len(gone)), np.full(len(gone3), 3)]),
            np.full(len(gone) + len(gone3), B0),
            np.concatenate([gone, gone3]),
            9,
            SCHEMA,
        ),
    )
    _write(
        t / delete_delta_dir_name(10, 10) / bucket_file_name(1),
        delete_events([8], [B1], [0], 10, SCHEMA),
    )
    return pa.concat_tables(parts)


@pytest.mark.parametrize("read_threads", ["1", "2", "3"])
def test_files_of_one_bucket_read_on_several_threads_keep_rows_and_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_threads: str
) -> None:
    """A base and many deltas in one bucket are read as one task per file (read_balanced): the
    rows, their order and the read's counters are those of a serial read."""
    t = tmp_path / "t"
    want = _bucket_with_deltas(t)
    ids = ValidWriteIdList.parse(f"db.t:10:{ALL}::")
    monkeypatch.setenv("ACID_READ_THREADS", read_threads)
    stats = ReadStats()
    got = read_acid(t, ids, schema=SCHEMA, stats=stats)
    assert got.equals(want)
    assert stats.rows_deleted == 20_000 // 9 + 1 + 1_000 // 9 + 1 + 1
    assert stats.delete_events == stats.rows_deleted
    assert [Path(f).parent.name for f in stats.files] == [
        base_dir_name(1),
        *(delta_dir_name(w, w) for w in range(2, 8)),
        delta_dir_name(8, 8),
    ]


def test_read_balanced_splits_files_only_where_each_file_stands_alone(tmp_path: Path) -> None:
    """Each event file of a split is a task of its own; a split with original files (their
    synthetic row ids count on from the file before) or with delete events merged in key order
    (one cursor) is one task. Each split's results come back in file order."""
    t = tmp_path / "t"
    _bucket_with_deltas(t)
    fs = pafs.LocalFileSystem()
    ids = ValidWriteIdList.parse(f"db.t:10:{ALL}::")
    splits = plan_splits(acid_state(str(t), ids, filesystem=fs), ids)
    calls: list[tuple[int, int]] = []

    def read(i: int, split: ReadSplit, deleted: DeleteLookup, stats: ReadStats) -> list[str]:
        calls.append((i, len(split.data_files)))
        return [Path(ref.path).parent.name for ref in split.data_files]

    got = read_balanced(splits, read, fs, ids)
    assert got == [[Path(ref.path).parent.name for ref in s.data_files] for s in splits]
    assert sorted(calls) == [(0, 1)] * 7 + [(1, 1)]
    calls.clear()
    read_balanced(splits, read, fs, ids, delete_events_cap=0)  # above the cap: merged in order
    assert sorted(calls) == [(0, 7), (1, 1)]
    calls.clear()
    original = replace(splits[0].data_files[0], kind=ORIGINAL_KIND)
    with_original = replace(splits[0], data_files=(original, *splits[0].data_files[1:]))
    read_balanced([with_original], read, fs, ids)
    assert calls == [(0, 7)]
