"""Spark SQL DML on a table by its warehouse path: ``acid.`<path>``` (as Delta's
``delta.`<path>```) in SELECT, DELETE, UPDATE and MERGE INTO, the same table that
``spark.read.format("acid").load(<path>)`` reads (Spark's own SQL on files takes file formats
only; the session catalog resolves these identifiers, :file:`jvm/AcidCatalog.java`)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("layout", ["", "PARTITIONED BY (ds)"], ids=["plain", "partitioned"])
def test_dml_on_a_table_by_its_path(spark: SparkSession, wh: Warehouse, layout: str) -> None:
    wh.create_database("db")
    spark.sql(f"CREATE TABLE db.t (k INT, v STRING, ds STRING) USING acid {layout}")
    spark.sql("INSERT INTO db.t VALUES (1,'a','d1'),(2,'b','d1'),(3,'c','d2'),(4,'d','d2')")
    path = f"acid.`{wh.table('db.t').spec.location}`"

    spark.sql(f"DELETE FROM {path} WHERE k IN (SELECT 2)")
    spark.sql(f"UPDATE {path} SET v = upper(v) WHERE ds = 'd2'")
    spark.sql(
        f"MERGE INTO {path} t USING (SELECT 4 AS k, 'm' AS v, 'd2' AS ds UNION ALL "
        "SELECT 9, 'n', 'd3') s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    want = [(1, "a", "d1"), (3, "C", "d2"), (4, "m", "d2"), (9, "n", "d3")]
    assert (
        sorted(tuple(r.values()) for r in wh.query("SELECT k, v, ds FROM db.t").to_pylist()) == want
    )
    assert sorted(tuple(r) for r in spark.sql(f"SELECT k, v, ds FROM {path}").collect()) == want
    loaded = spark.read.format("acid").load(wh.table("db.t").spec.location)
    assert sorted(tuple(r) for r in loaded.select("k", "v", "ds").collect()) == want
