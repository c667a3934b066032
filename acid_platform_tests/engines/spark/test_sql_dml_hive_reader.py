"""Files that Spark SQL DELETE / UPDATE / MERGE write (:mod:`acid_platform.engines.spark.row_level`)
read through Hive's own ACID reader (Hive 2.3's ``OrcInputFormat`` in the PySpark wheel, see
:mod:`.hive23`) exactly as through the embedded engine and Spark, after every statement; a 1%
DELETE adds a ``delete_delta`` and rewrites nothing (issue 32's interop proof)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform_tests.engines.spark.hive23 import KV, hive_23_rows, ordered

pytestmark = pytest.mark.slow
HWM = 1_000_000  # every write id of these tables is committed: none aborted


def _files(root: Path) -> dict[str, str]:
    """Each data file under ``root`` by relative path: a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("bucket_*")
    }


def _agree(
    spark: SparkSession, wh: Warehouse, table: str, buckets: int
) -> list[tuple[object, ...]]:
    """The rows of ``table``, the same through Hive 2.3's reader, the embedded engine and Spark."""
    location = Path(wh.table(table).spec.location)
    parts = sorted(p for p in location.iterdir() if p.is_dir() and "=" in p.name)
    if parts:  # ds is a partition column: in the directory's name, not in the files
        hive = [
            (*r, part.name.partition("=")[2])
            for part in parts
            for r in hive_23_rows(spark, part, HWM, buckets=buckets)
        ]
    else:
        hive = hive_23_rows(spark, location, HWM, (*KV, ("ds", "string")), buckets)
    embedded = ordered(
        tuple(r.values()) for r in wh.query(f"SELECT k, v, ds FROM {table}").to_pylist()
    )
    sparks = ordered(tuple(r) for r in spark.sql(f"SELECT k, v, ds FROM {table}").collect())
    assert ordered(hive) == embedded == sparks
    return embedded


@pytest.mark.parametrize(
    ("layout", "buckets"),
    [
        ("", 1),
        ("PARTITIONED BY (ds)", 1),
        ("PARTITIONED BY (ds) CLUSTERED BY (k) INTO 4 BUCKETS", 4),
    ],
    ids=["plain", "partitioned", "bucketed"],
)
def test_hive_reads_what_spark_sql_dml_wrote(
    spark: SparkSession, wh: Warehouse, layout: str, buckets: int
) -> None:
    wh.create_database("db")
    spark.sql(f"CREATE TABLE db.t (k INT, v STRING, ds STRING) USING acid {layout}")
    spark.sql(
        "INSERT INTO db.t SELECT CAST(id AS INT), concat('v', id), "
        "concat('d', CAST(id % 3 AS STRING)) FROM range(300)"
    )
    location = Path(wh.table("db.t").spec.location)
    oracle = {(k, f"v{k}", f"d{k % 3}") for k in range(300)}
    assert set(_agree(spark, wh, "db.t", buckets)) == oracle

    # a 1% DELETE: delete_delta directories beside the files, which stay byte for byte
    before = _files(location)
    spark.sql("DELETE FROM db.t WHERE k IN (SELECT CAST(id * 100 + 7 AS INT) FROM range(3))")
    after = _files(location)
    assert {f: d for f, d in after.items() if f in before} == before
    added = sorted(set(after) - set(before))
    assert added and all("/delete_delta_" in f"/{f}" for f in added), added
    oracle -= {(k, v, ds) for k, v, ds in oracle if k in (7, 107, 207)}
    assert set(_agree(spark, wh, "db.t", buckets)) == oracle

    spark.sql("UPDATE db.t SET v = upper(v) WHERE k % 50 = 1")
    oracle = {(k, v.upper() if k % 50 == 1 else v, ds) for k, v, ds in oracle}
    assert set(_agree(spark, wh, "db.t", buckets)) == oracle

    spark.createDataFrame(
        [(2, None, "d2"), (3, "m3", "d0"), (400, "n400", "d1"), (401, "n401", "d2")],
        "k INT, v STRING, ds STRING",
    ).createOrReplaceTempView("src")
    spark.sql(
        "MERGE INTO db.t t USING src s ON t.k = s.k "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    oracle = {(k, "m3" if k == 3 else v, ds) for k, v, ds in oracle if k != 2} | {
        (400, "n400", "d1"),
        (401, "n401", "d2"),
    }
    assert set(_agree(spark, wh, "db.t", buckets)) == oracle
