"""Compaction in Spark SQL: ``CALL system.compact(…)`` and ``CALL system.show_compactions()``
on the shared local session, against a real warehouse (see
:mod:`acid_platform.engines.spark.maintenance`), and Hive's ``ALTER TABLE … COMPACT`` and
``SHOW COMPACTIONS``, which the session (built with the session extension, as every session the
project builds) parses as those ``CALL``s (:mod:`acid_platform.engines.spark.extensions`)."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.compaction import run_worker
from acid_platform.engines.spark.extensions import EXTENSION, has_extension, note_missing
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


@pytest.mark.parametrize(
    ("statement", "show"),
    [
        (
            "CALL system.compact(table => 'db.p', type => 'major', partition => 'ds=a', "
            "wait => true)",
            "CALL system.show_compactions()",
        ),
        ("ALTER TABLE db.p PARTITION (ds = 'a') COMPACT 'major' AND WAIT", "SHOW COMPACTIONS"),
    ],
    ids=["call", "hive"],
)
def test_compact_major_and_wait_writes_a_base_and_show_compactions_lists_it(
    spark: SparkSession, wh: Warehouse, statement: str, show: str
) -> None:
    expected = _partitioned(spark, wh)
    part_a = Path(wh.root) / "db.db" / "p" / "ds=a"
    assert not [d for d in acid_dirs(part_a) if d.startswith("base_")]

    done = spark.sql(statement)
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

    shown = spark.sql(show)
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
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    """As a CALL or as Hive's statement; a table of Spark's own catalog is a non-ACID table."""
    spark.sql("CREATE TABLE db.t (id INT) USING acid")
    spark.sql("INSERT INTO db.t VALUES (1)")
    wh.create_table("db.plain", [("id", "int")], properties={"transactional": "false"})
    spark.sql(f"CREATE TABLE default.spark_own (i INT) USING parquet LOCATION '{tmp_path}'")
    non_acid = "UnsupportedOperationError: Compaction is not allowed on non-ACID table "
    refused = {
        "CALL system.compact('db.nope')": "NoSuchObjectError: ",
        "CALL system.compact('db.plain', 'major')": non_acid + "db.plain",
        "CALL system.compact('db.t', 'huge')": "SemanticError: compaction of db.t: type 'huge'",
        "CALL system.compact('db.t', partition => 'ds=x')": "InvalidPartitionError: ",
        "CALL system.show_compactions('db.nope')": "NoSuchObjectError: ",
        "CALL system.compact('spark_own')": non_acid + "default.spark_own",
        "ALTER TABLE db.nope COMPACT 'major'": "NoSuchObjectError: table db.nope does not exist",
        "ALTER TABLE db.plain COMPACT 'major'": non_acid + "db.plain",
        "ALTER TABLE spark_own COMPACT 'major'": non_acid + "default.spark_own",
        "ALTER TABLE db.t COMPACT 'huge'": "SemanticError: compaction of db.t: type 'huge'",
        "ALTER TABLE db.t PARTITION (ds = 'x') COMPACT 'major'": "InvalidPartitionError: ",
        "ALTER TABLE other.db.t COMPACT 'major'": "NoSuchObjectError: table other.db.t is not",
        "ALTER TABLE db.t COMPACT 'rebalance' CLUSTERED INTO 4 BUCKETS": (
            "expected the end of the statement, not 'CLUSTERED'; Spark SQL takes ALTER TABLE"
        ),
        "ALTER TABLE db.t COMPACT major": "expected the compaction type",
        "SHOW COMPACTIONS db.t TYPE 'major'": (
            "expected the end of the statement, not 'TYPE'; Spark SQL takes SHOW COMPACTIONS"
        ),
        "SHOW COMPACTIONS db.nope": "NoSuchObjectError: ",
    }
    try:
        for statement, message in refused.items():
            with pytest.raises(IllegalArgumentException) as raised:
                spark.sql(statement).collect()
            text = str(raised.value)
            assert text.startswith(message), (statement, text)
            assert "\n" not in text.strip(), (statement, text)
    finally:
        spark.sql("DROP TABLE default.spark_own")
    with pytest.raises(AnalysisException, match="ROUTINE_NOT_FOUND"):
        spark.sql("CALL system.vacuum('db.t')")
    assert spark.sql("CALL system.show_compactions()").count() == 0
    assert sorted(r.procedure_name for r in spark.sql("SHOW PROCEDURES IN system").collect()) == [
        "compact",
        "show_compactions",
    ]


def _plan(spark: SparkSession, text: str) -> str:
    """The session parser's plan of ``text``, as text."""
    parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001 - the JVM parser
    return str(parser.parsePlan(text).toString())


def test_the_session_has_the_extension_and_its_statements_are_the_procedures_calls(
    spark: SparkSession,
) -> None:
    assert has_extension(spark)
    rewritten = {
        "ALTER TABLE db.t COMPACT 'major'": (
            "CALL system.compact(table => 'db.t', type => 'major', wait => false)"
        ),
        "alter table `db`.`t` partition (ds = '2024-01-01', h=3) compact 'minor' and wait "
        "pool 'etl';": (
            "CALL system.compact(table => 'db.t', type => 'minor', wait => true, "
            "partition => 'ds=2024-01-01/h=3', pool => 'etl')"
        ),
        "-- a comment\nALTER TABLE spark_catalog.db.t PARTITION (k='a/b=c') COMPACT 'major'": (
            "CALL system.compact(table => 'db.t', type => 'major', wait => false, "
            "partition => 'k=a%2Fb%3Dc')"
        ),
        "ALTER TABLE t COMPACT 'major'": (
            "CALL system.compact(table => 'default.t', type => 'major', wait => false)"
        ),
        "SHOW COMPACTIONS": "CALL system.show_compactions()",
        "show compactions db.t": "CALL system.show_compactions(table => 'db.t')",
    }
    for hive, call in rewritten.items():
        assert _plan(spark, hive) == _plan(spark, call), hive
    # every other text is Spark's, a COMPACT in a string or a column name too
    for text in (
        "SELECT 'ALTER TABLE t COMPACT' AS compact",
        "ALTER TABLE db.t ADD COLUMNS (compact INT)",
        "ALTER TABLE db.t SET TBLPROPERTIES ('x' = 'COMPACT')",
    ):
        assert "Call" not in _plan(spark, text)


def test_alter_table_compact_in_the_current_database_and_show_compactions_of_a_table(
    spark: SparkSession, wh: Warehouse
) -> None:
    _partitioned(spark, wh)
    spark.sql("ALTER TABLE db.p PARTITION (ds = 'a') COMPACT 'major' AND WAIT")
    spark.sql("USE db")
    try:  # a table without a database is in the current one; no partition: each partition
        queued = spark.sql("ALTER TABLE p COMPACT 'minor' POOL 'etl'").collect()
    finally:
        spark.sql("USE default")
    assert sorted((r.Partition, r.Type, r.State, r["Pool name"]) for r in queued) == [
        ("ds=a", "MINOR", "initiated", "etl"),
        ("ds=b", "MINOR", "initiated", "etl"),
    ]
    shown = spark.sql("SHOW COMPACTIONS")
    assert shown.columns == list(SHOW_COMPACTIONS_COLUMNS)
    assert sorted((r.Partition, r.Type, r.State) for r in shown.collect()) == [
        ("ds=a", "MAJOR", "ready for cleaning"),
        ("ds=a", "MINOR", "initiated"),
        ("ds=b", "MINOR", "initiated"),
    ]
    assert spark.sql("SHOW COMPACTIONS db.p").count() == 3


def test_a_session_without_the_extension_is_told_how_to_get_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Spark's own parser refuses Hive's statements (a ``ParseException``); registering on such
    a session says, at INFO, which settings add them."""
    without = SimpleNamespace(conf={"spark.sql.extensions": "io.delta.sql.DeltaSparkSession"})
    with caplog.at_level(logging.INFO, "acid_platform.engines.spark.extensions"):
        note_missing(without)  # type: ignore[arg-type]
        note_missing(SimpleNamespace(conf={"spark.sql.extensions": f"x.Y, {EXTENSION}"}))  # type: ignore[arg-type]
    (record,) = caplog.records
    assert f"spark.sql.extensions={EXTENSION}" in record.getMessage()
    assert "ALTER TABLE … COMPACT" in record.getMessage()
