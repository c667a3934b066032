"""The health report (``Warehouse.health``, ``SHOW TABLE STATUS``, ``acid health``): each field
against table states built with real files and a real metastore, checked against the files on
disk and the initiator's own decision."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.compaction import Initiator, run_cleaner, run_initiator
from acid_platform.compaction.health import STATUS_SCHEMA
from acid_platform.errors import SqlSyntaxError
from acid_platform_tests.helpers import acid_dirs

PARTITIONED = """
create table t (id int, v string) partitioned by (ds string)
stored as orc tblproperties ('transactional'='true');
insert into t values (1, 'a', 'a'), (2, 'b', 'a'), (3, 'c', 'a'), (4, 'd', 'a');
insert into t values (5, 'e', 'a'), (6, 'f', 'a');
delete from t where id in (1, 2, 5);
insert into t values (7, 'g', 'b');
"""


def bucket_sizes(partition_dir: Path, prefix: str = "") -> list[int]:
    """Sizes of the bucket files of the current directories starting with ``prefix``."""
    return [
        os.path.getsize(partition_dir / d / f)
        for d in acid_dirs(partition_dir)
        if d.startswith(prefix)
        for f in os.listdir(partition_dir / d)
        if f.startswith("bucket_")
    ]


def test_deltas_deletes_amplification_and_small_files_per_partition(wh: Warehouse) -> None:
    wh.sql(PARTITIONED)
    part_a = Path(wh.root) / "t" / "ds=a"
    sizes = bucket_sizes(part_a)
    insert_bytes = sum(bucket_sizes(part_a, "delta_"))

    report = wh.health("t", small_file_bytes=max(sizes))

    assert report.table == "default.t"
    a, b = report.partitions
    assert (a.partition, a.deltas, a.delete_deltas, a.files) == ("ds=a", 2, 1, 3)
    assert (b.partition, b.deltas, b.delete_deltas, b.files) == ("ds=b", 1, 0, 1)
    assert (a.insert_events, a.delete_events, a.live_rows) == (6, 3, 3)
    assert a.bytes == sum(sizes) and a.insert_bytes == insert_bytes
    assert a.delete_ratio == 0.5 and b.delete_ratio == 0.0
    # three of six inserted rows live: a reader reads all bytes for half the insert bytes
    assert a.read_amplification == pytest.approx(sum(sizes) / (insert_bytes / 2))
    assert (a.read_amplification or 0.0) > 2.0
    assert b.read_amplification == 1.0
    assert a.small_files == sum(1 for s in sizes if s < max(sizes)) < 3
    assert wh.health("t", small_file_bytes=1).partitions[0].small_files == 0
    assert wh.health("t").partitions[0].small_files == 3  # under Hive's 16 MB
    assert report.max_deltas == (3, "ds=a")
    assert report.oldest_open_txn is None


def test_major_compaction_resets_the_layout_and_an_open_txn_holds_the_cleaner(
    wh: Warehouse,
) -> None:
    wh.sql(PARTITIONED)
    other = Warehouse.open(wh.root)
    txn = other.transaction()  # opened before the compactor commits: the cleaner must wait for it
    try:
        wh.compact("t", {"ds": "a"}, "major", wait=True)
        report = wh.health("t")
        a = report.partitions[0]
        assert (a.deltas, a.delete_deltas, a.files, a.delete_ratio) == (0, 0, 1, 0.0)
        assert (a.live_rows, a.read_amplification) == (3, 1.0)
        assert report.oldest_open_txn is not None
        assert report.oldest_open_txn.txn_id == txn.id
        assert report.oldest_open_txn.age_s >= 0
        assert report.backlog.ready_for_cleaning == 1
        assert report.backlog.held_by_open_txn == 1
        assert report.backlog.obsolete_paths == 3  # delta_1, delta_2, delete_delta_3
        assert not run_cleaner(wh).entries  # held back indeed
        assert wh.health("t").backlog.obsolete_paths == 3
    finally:
        other.rollback()
        other.close()
    report = wh.health("t")
    assert report.oldest_open_txn is None and report.backlog.held_by_open_txn == 0
    run_cleaner(wh)
    report = wh.health("t")
    assert (report.backlog.ready_for_cleaning, report.backlog.obsolete_paths) == (0, 0)
    a, b = report.partitions
    assert a.compaction is not None and a.compaction.type is None
    assert a.compaction.reason.startswith("no uncompacted or aborted writes")
    assert b.compaction is not None and "1 deltas <= " in b.compaction.reason


def test_what_the_initiator_would_do_and_why_queues_nothing(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")])
    for i in range(11):
        t.insert([{"id": i}])
    wh.create_table("manual", [("id", "int")], properties={"no_auto_compaction": "true"})
    wh.table("manual").insert([{"id": 1}])

    (p,) = wh.health("t").partitions
    assert p.compaction is not None
    assert (p.compaction.type, p.compaction.partition) == ("major", None)
    assert p.compaction.reason == Initiator(wh).decide("default", "t").reason
    assert "11 deltas > hive.compactor.delta.num.threshold 10 and no base" in p.compaction.reason
    assert wh.show_compactions() == []  # a report queues nothing
    (m,) = wh.health("manual").partitions
    assert m.compaction is not None and m.compaction.reason == "no_auto_compaction=true"

    queued = [d for d in run_initiator(wh) if d.cq_id is not None]
    assert [(d.table, d.type) for d in queued] == [("t", "major")]
    report = wh.health("t")
    assert report.backlog.queued == 1
    assert report.partitions[0].compaction is not None
    assert report.partitions[0].compaction.reason == "a compaction is already queued"
    assert report.rows()[0]["compaction"] == "none"


def test_show_table_status_is_the_report_of_each_matching_table(wh: Warehouse) -> None:
    wh.sql(PARTITIONED)
    wh.sql("create database db2; create table db2.u (id int); insert into db2.u values (1)")
    status = wh.sql("SHOW TABLE STATUS LIKE 't*|nothing'")
    assert status.schema == STATUS_SCHEMA
    assert status.to_pylist() == wh.health("t").rows()
    assert [r["partition"] for r in status.to_pylist()] == ["ds=a", "ds=b"]
    row = status.to_pylist()[0]
    assert (row["deltas"], row["delete_deltas"], row["live_rows"], row["delete_ratio"]) == (
        2,
        1,
        3,
        0.5,
    )
    other = wh.sql("show table status in db2").to_pylist()
    assert [(r["tab_name"], r["partition"], r["live_rows"]) for r in other] == [("db2.u", None, 1)]
    assert wh.sql("SHOW TABLE STATUS FROM db2 LIKE 'x*'").num_rows == 0
    assert wh.sql("SHOW TABLE STATUS FROM db2 LIKE 'x*'").schema == STATUS_SCHEMA
    with pytest.raises(SqlSyntaxError):
        wh.sql("SHOW TABLE STATS")


def test_acid_health_prints_the_report_in_each_output_mode(wh: Warehouse) -> None:
    wh.sql(PARTITIONED)
    expected = wh.health("t").rows()
    runner = CliRunner()

    result = runner.invoke(app, ["health", "default.t", "-w", wh.root, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected

    result = runner.invoke(app, ["health", "-w", wh.root, "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split(",")[:4] == ["tab_name", "partition", "deltas", "delete_deltas"]
    assert [line.split(",")[:4] for line in lines[1:]] == [
        ["default.t", "ds=a", "2", "1"],
        ["default.t", "ds=b", "1", "0"],
    ]

    result = runner.invoke(app, ["health", "t", "-w", wh.root])
    assert result.exit_code == 0, result.output
    assert "ds=a" in result.stdout and "read_amplification" in result.stdout

    result = runner.invoke(app, ["health", "nosuch.t", "-w", wh.root])
    assert result.exit_code == 1
    assert "nosuch" in result.output
