"""The DataFrame API for DML (:mod:`acid_platform.engines.spark.acid_table`): ``AcidTable``'s
delete / update / merge on the shared local session and a real warehouse, rows checked against
an oracle computed here, untouched rows keeping their ROW__IDs."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from acid_platform import Warehouse
from acid_platform.engines.spark import AcidTable
from acid_platform.errors import NoSuchObjectError, SemanticError

ROWS = [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2"), (4, "d", "d2"), (5, "e", "d3")]


def _table(spark: SparkSession, layout: str) -> AcidTable:
    ddl = {
        "plain": "",
        "partitioned": "PARTITIONED BY (ds)",
        "bucketed": "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 2 BUCKETS",
    }[layout]
    spark.sql(f"CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid {ddl}")
    spark.sql("INSERT INTO db.t VALUES " + ", ".join(f"({i}, '{v}', '{ds}')" for i, v, ds in ROWS))
    return AcidTable.forName(spark, "db.t")


def _rows(wh: Warehouse) -> list[tuple[object, ...]]:
    """The table as the embedded engine reads it (not through Spark)."""
    return sorted(tuple(r.values()) for r in wh.query("SELECT * FROM db.t").to_pylist())


def _row_ids(spark: SparkSession) -> dict[int, tuple[int, int, int]]:
    rows = spark.sql("SELECT id, _acid_writeid, _acid_bucketid, _acid_rowid FROM db.t").collect()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


@pytest.mark.parametrize("layout", ["plain", "partitioned", "bucketed"])
def test_delete_update_merge_equal_the_oracle(
    spark: SparkSession, wh: Warehouse, layout: str
) -> None:
    wh.create_database("db")
    t = _table(spark, layout)
    ids = _row_ids(spark)
    spark.createDataFrame([(2,), (9,)], "k INT").createOrReplaceTempView("gone")

    deleted = t.delete("id IN (SELECT k FROM gone)")  # a subquery, as in Spark SQL
    assert [r.asDict() for r in deleted.collect()] == [{"num_affected_rows": 1}]  # as spark.sql's
    oracle = [r for r in ROWS if r[0] != 2]
    assert _rows(wh) == oracle
    t.delete(F.col("ds") == F.lit("d3"))  # a Column
    oracle = [r for r in oracle if r[2] != "d3"]
    assert _rows(wh) == oracle
    assert {i: ids[i] for i in (1, 3, 4)} == _row_ids(spark)

    t.update(F.col("id") >= 3, {"v": F.upper(F.col("v")), "ds": "concat(ds, '+')"})
    oracle = [(i, v.upper(), ds + "+") if i >= 3 else (i, v, ds) for i, v, ds in oracle]
    assert _rows(wh) == oracle
    assert _row_ids(spark)[1] == ids[1]

    source = spark.createDataFrame(
        [
            (1, "x", "d1", False),
            (3, None, "d2+", True),
            (4, "y", "d2+", False),
            (7, "g", "d4", False),
        ],
        "id INT, v STRING, ds STRING, gone BOOLEAN",
    )
    result = (
        t.alias("t")
        .merge(source.alias("s"), F.col("t.id") == F.col("s.id"))
        .whenNotMatchedInsert(values={"id": "s.id", "v": F.lit("new"), "ds": "s.ds"})
        .whenMatchedDelete("s.gone")
        .whenMatchedUpdate(F.col("s.id") == 1, {"v": "s.v"})
        .whenMatchedUpdateAll()
        .execute()
    )
    # as spark.sql's: affected, updated, deleted, inserted
    assert tuple(result.collect()[0]) == (4, 2, 1, 1)
    oracle = [(1, "x", "d1"), (4, "y", "d2+"), (7, "new", "d4")]
    assert _rows(wh) == oracle
    # the source's view is gone once the statement ran
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("acid_merge_source_")]

    # INSERT *, NOT MATCHED BY SOURCE, no aliases: the source is `source`, the target its name
    more = spark.createDataFrame(
        [(8, "h", "d1", False)], "id INT, v STRING, ds STRING, gone BOOLEAN"
    )
    (
        t.merge(more.select("id", "v", "ds"), "t.id = source.id")
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceUpdate("t.id = 1", {"v": "concat(v, '!')"})
        .whenNotMatchedBySourceDelete(F.col("id") == 7)
        .execute()
    )
    assert _rows(wh) == [(1, "x!", "d1"), (4, "y", "d2+"), (8, "h", "d1")]
    assert t.toDF().count() == 3


def test_bad_input_fails_and_writes_nothing(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_database("db")
    t = _table(spark, "partitioned")
    with pytest.raises(NoSuchObjectError, match="table db.nope does not exist"):
        AcidTable.forName(spark, "db.nope")
    with pytest.raises(SemanticError, match="give the columns to set"):
        t.update("id = 1", {})
    with pytest.raises(SemanticError, match="at least one when"):
        t.merge(t.toDF(), "true").execute()
    with pytest.raises(SemanticError, match="expected Spark SQL text or a Column"):
        t.delete(3)  # type: ignore[arg-type]
    with pytest.raises(AnalysisException, match="nope"):
        t.delete(F.col("nope") == 1)
    twice = spark.createDataFrame([(1,), (1,)], "k INT")
    with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
        t.merge(twice, "id = source.k").whenMatchedUpdate(set={"v": "'z'"}).execute()
    assert _rows(wh) == sorted(ROWS)
    assert not [v for v in spark.catalog.listTables() if v.name.startswith("acid_merge_source_")]
