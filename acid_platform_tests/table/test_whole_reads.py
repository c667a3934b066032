"""Splits read whole (issue 34): a bucket with no delete events whose files the snapshot sees
whole is read in one decoding call per file, many files to a thread's task
(``table.scan.whole_tasks``, ``format.WholeFileRead``). The rows must be exactly those of the
per-split merge-on-read path, in the same order, whatever the table went through.

Hypothesis drives random histories on a partitioned table — inserts into random partitions,
deletes (delete deltas in some partitions, not others), transactions rolled back (deltas of
aborted write ids left on disk), ``char``/``varchar`` and decimal columns — and compares three
reads of a column subset:
``to_arrow`` (whole splits batched), ``to_arrow`` with batching turned off, and the streaming
``to_batches`` (one split at a time), against an in-memory oracle of the rows.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_platform import Warehouse
from acid_platform.errors import MissingAcidVersionError, MissingFileError
from acid_platform.format import types as t
from acid_platform.format.file_reader import ACID_KIND, DataFileRef, WholeFileRead, reads_whole
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.writer import insert_events
from acid_platform.table import scan as scan_module
from acid_platform_tests.helpers import open_warehouse

Row = dict[str, Any]
DAYS = 4
COLUMNS = [("id", "int"), ("s", "varchar(3)"), ("c", "char(2)"), ("amount", "decimal(7,2)")]


@contextlib.contextmanager
def _warehouse() -> Iterator[Warehouse]:
    with tempfile.TemporaryDirectory() as tmp, open_warehouse(Path(tmp)) as wh:
        yield wh


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda r: tuple((v is not None, v) for v in r))


@contextlib.contextmanager
def _per_split() -> Iterator[None]:
    """Every split read through ``read_balanced`` (the per-split path), none whole."""
    real = scan_module.whole_tasks
    scan_module.whole_tasks = lambda tasks: []
    try:
        yield
    finally:
        scan_module.whole_tasks = real


def _reads(table: Any, columns: list[str] | None) -> dict[str, pa.Table]:
    """The same scan three ways: whole splits batched, merge-on-read per split, streamed."""
    batched = table.scan(columns=columns).to_arrow()
    with _per_split():
        per_split = table.scan(columns=columns).to_arrow()
    streamed = table.scan(columns=columns).to_batches().read_all()
    return {"batched": batched, "per_split": per_split, "streamed": streamed}


def _check(table: Any, oracle: list[Row], columns: list[str] | None) -> None:
    reads = _reads(table, columns)
    names = columns if columns is not None else reads["batched"].schema.names
    expected = _sorted([tuple(r.get(c) for c in names) for r in oracle])
    for how, got in reads.items():
        assert got.schema.names == names, how
        assert got.schema == reads["per_split"].schema, how
    # the same rows in the same order as the per-split path, and the oracle's rows
    assert reads["batched"].to_pylist() == reads["per_split"].to_pylist()
    assert reads["streamed"].to_pylist() == reads["per_split"].to_pylist()
    got = [tuple(r.values()) for r in reads["batched"].to_pylist()]
    assert _sorted(got) == expected


def _row(i: int, day: int) -> Row:
    return {
        "id": i,
        "s": None if i % 5 == 0 else f"v{i}"[:3],
        "c": f"{i % 7}".ljust(2),
        "amount": Decimal(i * 3) / 100,
        "day": day,
    }


_step = st.one_of(
    st.tuples(st.just("insert"), st.lists(st.integers(0, DAYS - 1), min_size=1, max_size=12)),
    st.tuples(st.just("delete"), st.integers(0, 6)),
    st.tuples(st.just("abort"), st.lists(st.integers(0, DAYS - 1), min_size=1, max_size=5)),
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(steps=st.lists(_step, min_size=1, max_size=7), subset=st.integers(0, 3))
def test_batched_whole_splits_return_the_per_split_rows(
    steps: list[tuple[str, Any]], subset: int
) -> None:
    with _warehouse() as wh:
        table = wh.create_table("t", COLUMNS, partition_columns=[("day", "int")])
        oracle: list[Row] = []
        next_id = 0
        for kind, arg in steps:
            if kind == "insert":
                rows = [_row(next_id + k, day) for k, day in enumerate(arg)]
                next_id += len(arg)
                table.insert(pa.Table.from_pylist(rows, schema=_schema(table)))
                oracle += rows
            elif kind == "delete":  # every 7th id from ``arg``: delete deltas in some partitions
                table.delete(f"id % 7 = {arg}")
                oracle = [r for r in oracle if r["id"] % 7 != arg]
            elif kind == "abort":  # a delta of an aborted write id stays on disk
                rows = [_row(10_000 + next_id + k, day) for k, day in enumerate(arg)]
                next_id += len(arg)
                wh.transaction()
                table.insert(pa.Table.from_pylist(rows, schema=_schema(table)))
                wh.rollback()
        choices: list[list[str] | None] = [None, ["amount"], ["day"], ["c", "id", "day", "s"]]
        _check(table, oracle, choices[subset])


def _schema(table: Any) -> pa.Schema:
    return table.scan().schema


def _days(wh: Warehouse) -> tuple[Any, list[Row]]:
    """A table of 20 rows over the days, one deleted: day 3 has delete events (read per split),
    the others are read whole."""
    table = wh.create_table("t", COLUMNS, partition_columns=[("day", "int")])
    rows = [_row(i, i % DAYS) for i in range(20)]
    table.insert(pa.Table.from_pylist(rows, schema=_schema(table)))
    table.delete("id = 3")
    return table, rows


def test_a_history_mixes_both_paths_and_aborted_deltas(tmp_path: Path) -> None:
    with open_warehouse(tmp_path) as wh:
        table, rows = _days(wh)
        wh.transaction()
        table.insert(pa.Table.from_pylist([_row(99, 0), _row(98, 1)], schema=_schema(table)))
        wh.rollback()
        table.insert(pa.Table.from_pylist([_row(50, 1)], schema=_schema(table)))
        aborted = [d for d in (tmp_path / "wh").rglob("day=0/delta_*") if d.is_dir()]
        assert len(aborted) == 2  # the first insert's and the rolled-back one's
        tasks = table.scan().split_tasks()
        whole = scan_module.whole_tasks(tasks)
        assert 0 < len(whole) < len(tasks)
        assert all(tasks[i].split.delete_files for i in range(len(tasks)) if i not in whole)
        oracle = [r for r in rows if r["id"] != 3] + [_row(50, 1)]
        for columns in (None, ["day"], ["amount", "day"]):
            _check(table, oracle, columns)


def test_a_missing_file_is_the_typed_error_on_both_paths(tmp_path: Path) -> None:
    with open_warehouse(tmp_path) as wh:
        table, _ = _days(wh)
        victims = sorted((tmp_path / "wh").rglob("day=*/delta_*/bucket_*"))
        assert victims
        victims[0].unlink()
        with pytest.raises(MissingFileError):
            table.scan().to_arrow()
        with _per_split(), pytest.raises(MissingFileError):
            table.scan().to_arrow()


def test_a_file_gone_after_planning_fails_the_read_as_on_the_per_split_path(
    tmp_path: Path,
) -> None:
    with open_warehouse(tmp_path) as wh:
        table = wh.create_table("t", COLUMNS, partition_columns=[("day", "int")])
        table.insert(pa.Table.from_pylist([_row(i, i % 2) for i in range(6)]))
        scan = table.scan()
        tasks = scan.split_tasks()
        assert scan_module.whole_tasks(tasks) == list(range(len(tasks)))
        Path(tasks[0].split.data_files[0].path).unlink()
        with pytest.raises(FileNotFoundError):
            scan.to_arrow()


def test_only_files_the_snapshot_sees_whole_are_read_whole() -> None:
    plain = DataFileRef("/x/bucket_00000", ACID_KIND)
    assert reads_whole(plain)
    assert not reads_whole(DataFileRef("/x/bucket_00000", ACID_KIND, filter_write_ids=True))
    assert not reads_whole(DataFileRef("/x/bucket_00000", ACID_KIND, logical_length=10))
    assert not reads_whole(
        DataFileRef("/x/bucket_00000", ACID_KIND, flush_length_path="/x/bucket_00000_flush_length")
    )
    assert not reads_whole(DataFileRef("/x/000000_0", "original"))


def test_a_file_without_the_acid_version_is_refused_as_by_the_split_reader(
    tmp_path: Path,
) -> None:
    schema = pa.schema([("id", pa.int32())])
    path = str(tmp_path / "bucket_00000")
    po.write_table(insert_events(pa.table({"id": pa.array([1], pa.int32())}), 1, 536870912), path)
    fs = pa.fs.LocalFileSystem()
    with pytest.raises(MissingAcidVersionError) as whole:
        WholeFileRead(fs, ["id"], schema).read(path)
    with pytest.raises(MissingAcidVersionError) as split:
        OrcDataFile(fs, path, expect_acid=True)
    assert str(whole.value) == str(split.value)
    assert t.is_event_schema(po.ORCFile(path).schema)
