"""Spark SQL DELETE / UPDATE / MERGE INTO on tables by name (:mod:`acid_platform.engines.spark.row_level`):
Spark's analyser and rewrite, the acid writer's events — checked against the embedded engine's view
of the same table, ROW__IDs of untouched rows kept, Hive's layout on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow


def _rows(wh: Warehouse, table: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in wh.query(f"SELECT * FROM {table}").to_pylist())


def _row_ids(spark: SparkSession, table: str) -> dict[int, tuple[int, int, int]]:
    rows = spark.sql(
        f"SELECT id, _acid_writeid, _acid_bucketid, _acid_rowid FROM {table}"
    ).collect()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _dirs(wh: Warehouse, table: str) -> list[str]:
    root = Path(wh.root)
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_dir() and ("delta_" in p.name or "base_" in p.name) and table in str(p)
    )


@pytest.mark.parametrize("layout", ["plain", "partitioned", "bucketed"])
def test_delete_update_merge_by_name(spark: SparkSession, wh: Warehouse, layout: str) -> None:
    wh.create_database("db")
    ddl = {
        "plain": "",
        "partitioned": "PARTITIONED BY (ds)",
        "bucketed": "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 4 BUCKETS",
    }[layout]
    spark.sql(f"CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid {ddl}")
    spark.sql(
        "INSERT INTO db.t VALUES (1,'a','d1'),(2,'b','d1'),(3,'c','d2'),(4,'d','d2'),(5,'e','d3')"
    )
    spark.createDataFrame([(2,), (4,)], "k INT").createOrReplaceTempView("gone")
    before = _row_ids(spark, "db.t")

    spark.sql("DELETE FROM db.t WHERE id IN (SELECT k FROM gone)")
    assert _rows(wh, "db.t") == [(1, "a", "d1"), (3, "c", "d2"), (5, "e", "d3")]
    after = _row_ids(spark, "db.t")
    assert all(after[i] == before[i] for i in (1, 3, 5))

    spark.sql("UPDATE db.t SET v = upper(v) WHERE id >= (SELECT max(k) FROM gone)")
    assert _rows(wh, "db.t") == [(1, "a", "d1"), (3, "c", "d2"), (5, "E", "d3")]
    assert _row_ids(spark, "db.t")[1] == before[1]

    spark.createDataFrame(
        [(1, "x", "d1"), (3, None, "d2"), (7, "g", "d4"), (8, "h", "d1")],
        "id INT, v STRING, ds STRING",
    ).createOrReplaceTempView("src")
    spark.sql(
        "MERGE INTO db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED AND s.id > 7 THEN INSERT * "
        "WHEN NOT MATCHED THEN INSERT (id, v, ds) VALUES (s.id, 'new', s.ds) "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = concat(t.v, '!')"
    )
    assert _rows(wh, "db.t") == [
        (1, "x", "d1"),
        (5, "E!", "d3"),
        (7, "new", "d4"),
        (8, "h", "d1"),
    ]
    assert any("delete_delta_" in d for d in _dirs(wh, "t"))
