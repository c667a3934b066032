"""The one scan planner: what it plans and reads is what reading each partition directory on its
own gives (warehouse tables, partitioned and bucketed, and tables Hive wrote); it lists each
directory once; it streams; it holds its snapshot's reader lease exactly while it is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import ScanClosedError, UnknownColumnError
from acid_platform.format import (
    Snapshot,
    ValidTxnList,
    ValidWriteIdList,
    acid_state,
    list_partition_dirs,
    read_acid,
    to_hive_type,
)
from acid_platform.format.fs import Location, resolve
from acid_platform.metastore import TableSpec
from acid_platform.table import dml_read, lit
from acid_platform.table.partitions import parse_partition_name
from acid_platform.table.scan import plan_scan
from acid_platform.table.schema import data_schema, table_schema
from acid_platform_tests.helpers import copy_nation_table, warehouse_fixture
from acid_platform_tests.table.conftest import emp_rows
from acid_platform_tests.table.counting import CountingFileSystem, CountingWarehouse

ALL = 9223372036854775807
COLS = [("id", "int"), ("name", "string"), ("salary", "bigint"), ("note", "string")]

#: The scan planner on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


def _old_scan(spec: TableSpec, location: Location, snapshot: Snapshot) -> pa.Table:
    """What a scan gave before the planner: every partition directory listed and read on its own
    by ``read_acid``, its partition values appended as typed constants."""
    schema = table_schema(spec)
    pieces = []
    for name, path in list_partition_dirs(
        location.path, list(spec.partition_column_names), location.filesystem
    ):
        rows = read_acid(
            path,
            snapshot.write_ids,
            snapshot.valid_txns,
            with_row_id=True,
            schema=data_schema(spec),
            filesystem=location.filesystem,
        )
        for col, text in parse_partition_name(name) if name else []:
            field = schema.field(col)
            rows = rows.append_column(
                field, pa.array([text] * rows.num_rows, pa.string()).cast(field.type)
            )
        pieces.append(rows)
    return pa.concat_tables(pieces)


def _check_planner_matches_old_scan(
    spec: TableSpec, location: Location, snapshot: Snapshot
) -> pa.Table:
    scan = plan_scan(spec, location, snapshot, with_row_id=True)
    files = scan.plan_files()
    listed = list_partition_dirs(
        location.path, list(spec.partition_column_names), location.filesystem
    )
    assert [(p.name, p.path) for p in files] == listed
    for part in files:
        assert part.state == acid_state(
            part.path, snapshot.write_ids, snapshot.valid_txns, filesystem=location.filesystem
        )
    tasks = scan.split_tasks()
    assert [t.partition for t in tasks] == sorted(t.partition for t in tasks)
    old = _old_scan(spec, location, snapshot)
    streamed = pa.Table.from_batches(list(scan.to_batches()), schema=scan.schema)
    assert streamed.equals(old)
    again = plan_scan(spec, location, snapshot, with_row_id=True).to_arrow()
    assert again.equals(old)
    return old


def _snapshot(wh: Warehouse, spec: TableSpec) -> Snapshot:
    txns = wh.metastore.valid_txns()
    return Snapshot(txns, wh.metastore.valid_write_ids(None, spec.db, spec.name, valid_txns=txns))


# --------------------------------------------------------------------------- equivalence


@pytest.mark.parametrize(
    "wh", ["sqlite", pytest.param("s3", marks=pytest.mark.slow)], indirect=True
)  # on S3: every file of nine buckets read three ways, one request each
def test_partitioned_bucketed_table_after_dml_reads_as_before(wh: Warehouse) -> None:
    t = wh.create_table(
        "emp",
        COLS,
        partition_columns=[("dept", "string")],
        bucket_columns=["id"],
        num_buckets=3,
    )
    t.insert(emp_rows(200))
    t.update({"salary": "salary + 1"}, "id % 7 = 0")
    t.delete("id % 5 = 1")
    t.merge(
        pa.table({"id": pa.array([1, 2, 500], pa.int32()), "dept": ["b", "c", "a"]}),
        "t.id = s.id",
    ).when_matched_delete().when_not_matched_insert({"id": "s.id", "dept": "s.dept"}).execute()
    spec = t.spec
    old = _check_planner_matches_old_scan(spec, t.location, _snapshot(wh, spec))
    assert old.num_rows == len(t.scan().to_arrow())
    tasks = plan_scan(spec, t.location, _snapshot(wh, spec)).split_tasks()
    assert len({(task.partition, task.split.bucket_id) for task in tasks}) == len(tasks) > 3


def test_table_scan_is_the_planner_with_filters_and_projections(wh: Warehouse) -> None:
    t = wh.create_table("emp", COLS, partition_columns=[("dept", "string")])
    t.insert(emp_rows(300))
    everything = _old_scan(t.spec, t.location, _snapshot(wh, t.spec))
    rows = everything.drop_columns(["row__id"]).to_pylist()
    got = t.scan(
        columns=["dept", "id"], where="dept = 'b' AND id > 200 AND name IS NOT NULL"
    ).to_arrow()
    assert got.column_names == ["dept", "id"]
    assert got.to_pylist() == [
        {"dept": r["dept"], "id": r["id"]}
        for r in rows
        if r["dept"] == "b" and r["id"] > 200 and r["name"] is not None
    ]
    streamed = pa.Table.from_batches(
        list(
            t.scan(
                columns=["dept", "id"], where="dept = 'b' AND id > 200 AND name IS NOT NULL"
            ).to_batches()
        )
    )
    assert streamed.equals(got)
    scan = t.scan(where="dept = 'b' AND id > 200")
    assert [p.name for p in scan.plan_files()] == ["dept=b"]  # pruned by the partition conjunct
    scan.close()
    count = t.scan(columns=[], where="id < 10").to_arrow()
    assert count.num_columns == 0 and count.num_rows == 10
    with pytest.raises(UnknownColumnError, match="nope"):
        t.scan(columns=["nope"])


def _spec_of(
    name: str, path: Path, columns: pa.Schema, partitions: pa.Schema | None = None
) -> TableSpec:
    return TableSpec(
        "hive",
        name,
        tuple((f.name, to_hive_type(f.type)) for f in columns),
        tuple((f.name, to_hive_type(f.type)) for f in partitions or []),
        location=str(path),
        properties={"transactional": "true"},
    )


def test_hive_written_tables_read_as_before(tmp_path: Path, hive_fixtures: Path) -> None:
    # the 25,000-row nation table of Trino's tests with two delete deltas
    nation = copy_nation_table(tmp_path / "nation")
    wids = ValidWriteIdList.parse(f"default.nation:4:{ALL}::")
    schema = read_acid(nation, wids).schema
    old = _check_planner_matches_old_scan(
        _spec_of("nation", nation, schema), resolve(nation), Snapshot(None, wids)
    )
    assert old.num_rows == 23_000
    # original (pre-ACID) files with a delete delta
    originals = tmp_path / "originals"
    shutil.copytree(hive_fixtures / "trino/fullacidNationTableWithOriginalFiles", originals)
    wids = ValidWriteIdList.parse(f"default.nation:10000001:{ALL}::")
    schema = read_acid(originals, wids).schema
    _check_planner_matches_old_scan(
        _spec_of("originals", originals, schema), resolve(originals), Snapshot(None, wids)
    )


def test_hive_written_partitioned_table_reads_as_before(
    tmp_path: Path, hive_fixtures: Path
) -> None:
    dump = hive_fixtures / "apache-hive/repl_dump/hive/test_hcube_2/tbl6"
    meta = json.loads((dump / "_metadata").read_text())
    wids = ValidWriteIdList.parse(meta["repl.valid.writeid.list"])
    txns = ValidTxnList.parse(meta["repl.valid.txnid.list"])
    table = tmp_path / "tbl6"
    for part in ("fld1=1", "fld1=2"):
        shutil.copytree(dump / part / "data", table / part)
    schema = read_acid(table / "fld1=1", wids).schema
    spec = _spec_of("tbl6", table, schema, pa.schema([("fld1", pa.int32())]))
    old = _check_planner_matches_old_scan(spec, resolve(table), Snapshot(txns, wids))
    assert sorted(old.column("fld1").to_pylist()) == [1, 2]


# --------------------------------------------------------------------------- listings


@pytest.mark.parametrize("small_target_bytes", [-1, 1 << 30], ids=["two-phase", "one-pass"])
def test_one_update_lists_each_partition_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_target_bytes: int
) -> None:
    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", small_target_bytes)
    counter = CountingWarehouse.counter = CountingFileSystem()
    wh = CountingWarehouse.open(tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0"})
    try:
        t = wh.create_table("emp", COLS, partition_columns=[("dept", "string")])
        t.insert(emp_rows(300))
        partitions = [
            p for _, p in list_partition_dirs(t.location.path, ["dept"], t.location.filesystem)
        ]
        assert len(partitions) == 3
        counter.listed.clear()
        assert t.update({"note": lit("upd")}, "id % 50 = 1").rows_updated == 6
        assert {p: counter.listed.get(p, 0) for p in partitions} == dict.fromkeys(partitions, 1)
        assert counter.listed[t.location.path] == 1  # the partition listing itself
        assert sorted(r["id"] for r in t.scan(where="note = 'upd'").to_arrow().to_pylist()) == list(
            range(1, 300, 50)
        )
    finally:
        wh.close()


# --------------------------------------------------------------------------- leases


def test_a_streamed_scan_holds_its_reader_lease_until_exhausted(wh: Warehouse) -> None:
    t = wh.create_table("emp", COLS, partition_columns=[("dept", "string")])
    t.insert(emp_rows(30))
    assert wh.metastore.show_read_leases() == []
    reader = t.scan(columns=["id"]).to_batches()
    assert len(wh.metastore.show_read_leases()) == 1
    assert sum(b.num_rows for b in reader) == 30
    assert wh.metastore.show_read_leases() == []

    scan = t.scan()
    assert len(wh.metastore.show_read_leases()) == 1
    assert len(scan.plan_files()) == 3
    scan.close()
    assert wh.metastore.show_read_leases() == []
    with pytest.raises(ScanClosedError, match="default.emp"):
        scan.to_arrow()

    with t.scan() as scan:
        assert scan.to_arrow().num_rows == 30
        assert wh.metastore.show_read_leases() == []
        with pytest.raises(ScanClosedError):
            scan.to_batches()


def test_a_scan_in_a_transaction_uses_its_snapshot_and_no_lease(wh: Warehouse) -> None:
    t = wh.create_table("emp", COLS)
    t.insert([{"id": 1}])
    with wh.transaction():
        t.insert([{"id": 2}])
        reader = t.scan(columns=["id"]).to_batches()
        assert wh.metastore.show_read_leases() == []
        assert sorted(reader.read_all().column("id").to_pylist()) == [1, 2]
