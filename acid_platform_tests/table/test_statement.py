"""The statement lifecycle (``table.statement``): one metrics type, reader leases, detached writes."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform import Warehouse
from acid_platform.errors import NotNullViolationError
from acid_platform.table.inserts import prepare_rows
from acid_platform.table.statement import (
    StatementMetrics,
    WriteOutcome,
    abort_detached,
    begin_detached,
    commit_detached,
    read_snapshot,
)
from acid_platform.table.writes import EventSink, run_writes
from acid_platform_tests.helpers import acid_dirs, warehouse_fixture

#: The statement lifecycle on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])

FIELDS = [
    "table",
    "txn_id",
    "write_id",
    "statement_ids",
    "rows_inserted",
    "rows_updated",
    "rows_deleted",
    "dirs_written",
    "files_written",
    "bytes_written",
    "duration_s",
]


def test_every_write_path_returns_the_same_frozen_metrics(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], not_null=["v"])
    outs = [
        t.insert([{"id": i, "v": "a"} for i in range(5)]),
        t.update({"v": "'b'"}, "id < 2"),
        t.delete("id = 4"),
        t.merge([{"id": 1, "v": "m"}, {"id": 9, "v": "n"}], "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(),
    ]
    for out in outs:
        assert isinstance(out, StatementMetrics) and list(out.as_dict()) == FIELDS
        with pytest.raises(dataclasses.FrozenInstanceError):
            out.rows_inserted = 0  # type: ignore[misc]
    assert [(o.rows_inserted, o.rows_updated, o.rows_deleted) for o in outs] == [
        (5, 0, 0),
        (0, 2, 0),
        (0, 0, 1),
        (1, 1, 0),
    ]
    assert [o.write_id for o in outs] == [1, 2, 3, 4]
    assert outs[3].statement_ids == (0, 1)  # MERGE: one statement id per branch
    assert outs[3].rows_affected == 2
    fs = t.location.filesystem  # dirs_written are paths inside the table's store
    for out in outs:
        assert out.files_written == sum(
            1
            for d in out.dirs_written
            for f in fs.get_file_info(pafs.FileSelector(d))
            if f.base_name.startswith("bucket_")
        )
    sql = wh.sql("UPDATE t SET v = 'c' WHERE id = 0")
    assert sql.column_names == FIELDS
    assert sql.column("rows_updated").to_pylist() == [1]


def test_a_read_snapshot_is_a_reader_lease_while_in_use(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")])
    t.insert([{"id": 1}])
    with read_snapshot(wh, [t.spec]) as snapshots:
        assert len(wh.metastore.show_read_leases()) == 1
        assert snapshots[t.name].write_ids.is_write_id_valid(1)
    assert wh.metastore.show_read_leases() == []
    with wh.transaction() as txn, read_snapshot(wh, [t.spec]) as snapshots:
        assert wh.metastore.show_read_leases() == []  # the transaction's own snapshot
        assert snapshots[t.name] == txn.snapshot(t.spec)


def test_a_detached_write_commits_or_leaves_nothing_visible(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")], not_null=["v"])
    spec = t.spec
    rows, _ = prepare_rows(spec, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], None)

    write = begin_detached(wh.metastore, spec, wh.conf, overwrite=False, agent="test")
    written = run_writes([EventSink(spec, t.location, write.write_id).insert_writes("", rows, 0)])
    metrics = commit_detached(wh.metastore, write, WriteOutcome(2, written=written))
    assert (metrics.txn_id, metrics.write_id, metrics.rows_inserted) == (write.txn_id, 1, 2)
    assert metrics.files_written == 1 and metrics.dirs_written == (written.dirs[0],)
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2]

    failed = begin_detached(wh.metastore, spec, wh.conf, overwrite=True, agent="test")
    EventSink(spec, t.location, failed.write_id).write_inserts("", rows, 0, overwrite=True)
    abort_detached(wh.metastore, failed, WriteOutcome())
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2]
    assert "base_0000002" in acid_dirs(t.spec.location)  # written, aborted, invisible

    empty = begin_detached(wh.metastore, spec, wh.conf, overwrite=True, agent="test")
    out = commit_detached(wh.metastore, empty, WriteOutcome())
    assert t.scan().to_arrow().num_rows == 0 and out.dirs_written[0].endswith("base_0000003")

    with pytest.raises(NotNullViolationError):
        prepare_rows(spec, pa.table({"id": [3], "v": pa.array([None], pa.string())}), None)


def test_a_detached_row_level_write_locks_records_and_reports_as_a_dml_statement(
    wh: Warehouse,
) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    t.insert([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    first = t.scan(with_row_id=True).to_arrow().to_pylist()[0]

    write = begin_detached(wh.metastore, t.spec, wh.conf, agent="test", command="delete")
    assert write.command == "DELETE"
    assert [lock["Type"] for lock in wh.metastore.show_locks()] == ["EXCL_WRITE"]
    ids = pa.table({k: [v] for k, v in first["row__id"].items()}).select(
        ["writeid", "bucketid", "rowid"]
    )
    written = EventSink(t.spec, t.location, write.write_id).write_deletes("", ids, 0)
    metrics = commit_detached(wh.metastore, write, WriteOutcome(rows_deleted=1, written=written))
    assert (metrics.rows_deleted, metrics.rows_affected, metrics.statement_ids) == (1, 1, (0,))
    assert metrics.dirs_written[0].endswith("delete_delta_0000002_0000002_0000")
    assert [r["id"] for r in t.scan().to_arrow().to_pylist()] == [2]
    assert wh.metastore.show_locks() == []
