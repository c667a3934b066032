"""Compaction in Spark SQL: ``CALL system.compact(…)`` and ``CALL system.show_compactions()``
on the shared local session, against a real warehouse (see
:mod:`acid_platform.engines.spark.maintenance`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.compaction import run_worker
from acid_platform.metastore.show import SHOW_COMPACTIONS_COLUMNS
from acid_platform_tests.helpers import acid_dirs


def _rows(spark: SparkSession, table: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.table(table).collect())


def _partitioned(spark: SparkSession, wh: Warehouse) -> list[tuple[object, ...]]:
    """db.p: partitions ds=a (3 inserts, an update, a delete) and ds=b (one insert); its rows."""
    spark.sql("CREATE TABLE db.p (id INT, v STRING, ds STRING) USING acid PARTITIONED BY (ds)")
    for i in range(3):
        spark.sql(f"INSERT INTO db.p VALUES ({i}, 'v{i}', 'a')")
    spark.sql("INSERT INTO db.p VALUES (10, 'w', 'b')")
    wh.sql("UPDATE db.p SET v = 'changed' WHERE id = 1")
    wh.sql("DELETE FROM db.p WHERE id = 2")
    return [(0, "v0", "a"), (1, "changed", "a"), (10, "w", "b")]


def test_compact_major_and_wait_writes_a_base_and_show_compactions_lists_it(
    spark: SparkSession, wh: Warehouse
) -> None:
    expected = _partitioned(spark, wh)
    part_a = Path(wh.root) / "db.db" / "p" / "ds=a"
    assert not [d for d in acid_dirs(part_a) if d.startswith("base_")]

    done = spark.sql(
        "CALL system.compact(table => 'db.p', type => 'major', partition => 'ds=a', wait => true)"
    )
    assert done.columns == list(SHOW_COMPACTIONS_COLUMNS)
    (entry,) = done.collect()
    assert (entry.Database, entry.Table, entry.Partition, entry.Type, entry.State) == (
        "db",
        "p",
        "ds=a",
        "MAJOR",
        "ready for cleaning",
    )
    # the partition now has a base holding the 5 writes of ds=a (write ids 1-3, 5, 6)
    bases = [d for d in acid_dirs(part_a) if d.startswith("base_")]
    assert bases == [f"base_{entry['Highest WriteId']:07d}_v{entry['TxnId']:07d}"]
    assert not [d for d in acid_dirs(part_a.with_name("ds=b")) if d.startswith("base_")]
    assert _rows(spark, "db.p") == expected

    shown = spark.sql("CALL system.show_compactions()")
    assert shown.columns == list(SHOW_COMPACTIONS_COLUMNS)
    assert dict(shown.dtypes) == {
        **{c: "string" for c in SHOW_COMPACTIONS_COLUMNS},
        "CompactionId": "bigint",
        "Duration(ms)": "bigint",
        "TxnId": "bigint",
        "Next TxnId": "bigint",
        "Highest WriteId": "bigint",
        "Enqueue Time": "timestamp",
        "Start Time": "timestamp",
        "Commit Time": "timestamp",
    }
    (listed,) = shown.collect()
    assert listed == entry
    assert isinstance(listed["Enqueue Time"], datetime)
    assert listed["Error message"] is None and listed["Pool name"] is None
    # the same entry as HiveQL's SHOW COMPACTIONS, which reads the same queue
    hive = wh.sql("SHOW COMPACTIONS").to_pylist()
    assert [(int(r["CompactionId"]), r["State"]) for r in hive] == [
        (entry.CompactionId, entry.State)
    ]


def test_compact_without_wait_queues_for_the_compactor(spark: SparkSession, wh: Warehouse) -> None:
    expected = _partitioned(spark, wh)
    queued = spark.sql("CALL system.compact('db.p', 'minor', pool => 'etl')").collect()
    # a partitioned table with no partition named: one entry per partition, queued only
    assert sorted((r.Partition, r.Type, r.State, r["Pool name"]) for r in queued) == [
        ("ds=a", "MINOR", "initiated", "etl"),
        ("ds=b", "MINOR", "initiated", "etl"),
    ]
    part_a = Path(wh.root) / "db.db" / "p" / "ds=a"
    before = acid_dirs(part_a)
    assert spark.sql("CALL system.show_compactions(table => 'db.p')").count() == 2

    run_worker(wh)  # the compactor service takes the queued entries
    shown = spark.sql("CALL system.show_compactions()").collect()
    assert sorted((r.Partition, r.State) for r in shown) == [
        ("ds=a", "ready for cleaning"),
        ("ds=b", "ready for cleaning"),
    ]
    (a,) = [r for r in shown if r.Partition == "ds=a"]
    # a minor compaction of write ids 1-6 (the update and delete's delete events included)
    assert [d for d in acid_dirs(part_a) if d not in before] == [
        f"delete_delta_0000001_0000006_v{a.TxnId:07d}",
        f"delta_0000001_0000006_v{a.TxnId:07d}",
    ]
    assert _rows(spark, "db.p") == expected


def test_bad_input_fails_with_one_line_and_queues_nothing(
    spark: SparkSession, wh: Warehouse
) -> None:
    spark.sql("CREATE TABLE db.t (id INT) USING acid")
    spark.sql("INSERT INTO db.t VALUES (1)")
    wh.create_table("db.plain", [("id", "int")], properties={"transactional": "false"})

    refused = {
        "CALL system.compact('db.nope')": "NoSuchObjectError: ",
        "CALL system.compact('db.plain', 'major')": (
            "UnsupportedOperationError: Compaction is not allowed on non-ACID table db.plain"
        ),
        "CALL system.compact('db.t', 'huge')": "SemanticError: compaction of db.t: type 'huge'",
        "CALL system.compact('db.t', partition => 'ds=x')": "InvalidPartitionError: ",
        "CALL system.show_compactions('db.nope')": "NoSuchObjectError: ",
    }
    for statement, message in refused.items():
        with pytest.raises(IllegalArgumentException) as raised:
            spark.sql(statement).collect()
        text = str(raised.value)
        assert text.startswith(message), (statement, text)
        assert "\n" not in text.strip(), (statement, text)
    with pytest.raises(AnalysisException, match="ROUTINE_NOT_FOUND"):
        spark.sql("CALL system.vacuum('db.t')")
    assert spark.sql("CALL system.show_compactions()").count() == 0
    assert sorted(r.procedure_name for r in spark.sql("SHOW PROCEDURES IN system").collect()) == [
        "compact",
        "show_compactions",
    ]
