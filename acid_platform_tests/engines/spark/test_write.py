"""Writing DataFrames: ``df.write.format("acid")`` and ``SparkEngine.write``, read back embedded."""

from __future__ import annotations

import json
import os
from operator import itemgetter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from acid_platform import Warehouse
from acid_platform.engines.spark import SparkEngine
from acid_platform.errors import (
    NotNullViolationError,
    SchemaMismatchError,
)
from acid_platform.format import bucket_for, decode_bucket
from acid_platform_tests.engines.spark.conftest import rows_of

SCHEMA = StructType([StructField("id", IntegerType()), StructField("v", StringType())])


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.name != "_orc_acid_version"
    )


@pytest.mark.slow
def test_append_and_overwrite_read_back_identically(spark: SparkSession, wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    rows = [(i, f"v{i}") for i in range(10)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    df.write.format("acid").mode("append").save("t")
    df.where("id < 3").write.format("acid").mode("append").save("default.t")
    got = rows_of(t.scan().to_arrow())
    want = sorted(
        [{"id": i, "v": v} for i, v in rows] + [{"id": i, "v": f"v{i}"} for i in range(3)],
        key=itemgetter("id"),
    )
    assert got == want
    # one file per task, named by the task's partition id; ROW__IDs carry that writer id
    files = _files(Path(t.location.path))
    first = [f for f in files if f.startswith("delta_0000001_0000001_0000/")]
    assert first == [
        "delta_0000001_0000001_0000/bucket_00000",
        "delta_0000001_0000001_0000/bucket_00001",
    ]
    second = {f.rsplit("/", 1)[1] for f in files if f.startswith("delta_0000002_0000002_0000/")}
    assert second and second <= {"bucket_00000", "bucket_00001"}
    writers = {
        decode_bucket(r["row__id"]["bucketid"])[0]
        for r in t.scan(with_row_id=True).to_arrow().to_pylist()
    }
    assert writers <= {0, 1} and len(writers) == 2

    spark.createDataFrame([(100, "new")], SCHEMA).write.format("acid").mode("overwrite").save("t")
    assert t.scan().to_arrow().to_pylist() == [{"id": 100, "v": "new"}]
    assert any(f.startswith("base_0000003/") for f in _files(Path(t.location.path)))
    spark.createDataFrame([], SCHEMA).write.format("acid").mode("overwrite").save("t")
    assert t.scan().to_arrow().num_rows == 0


def test_partitioned_append_converts_types_and_overwrites_only_written_partitions(
    spark: SparkSession, wh: Warehouse
) -> None:
    t = wh.create_table(
        "p", [("id", "bigint"), ("v", "string")], partition_columns=[("ds", "string")]
    )
    df = spark.createDataFrame(
        [(i, f"v{i}", "a" if i % 2 else "b") for i in range(8)], "id INT, v STRING, DS STRING"
    )
    df.write.format("acid").mode("append").save("p")
    assert sorted(wh.metastore.list_partitions("default", "p")) == ["ds=a", "ds=b"]
    # the commit recorded what the executors wrote (issue 13, item 6)
    record = wh.metastore.recorded_files("default", "p")
    assert sorted(record.partitions) == ["ds=a", "ds=b"]
    written = sorted(Path(t.spec.location).glob("ds=a/delta_*/bucket_*"))
    assert written and all(
        record.partitions["ds=a"].dirs[f.parent.name].files[f.name] == f.stat().st_size
        for f in written
    )
    spark.createDataFrame([(99, "x", "a")], "id INT, v STRING, ds STRING").write.format(
        "acid"
    ).mode("overwrite").save("p")
    got = rows_of(t.scan().to_arrow())
    assert got == [{"id": i, "v": f"v{i}", "ds": "b"} for i in range(0, 8, 2)] + [
        {"id": 99, "v": "x", "ds": "a"}
    ]


def test_bucketed_rows_land_in_hives_bucket(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine
) -> None:
    t = wh.create_table("b", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=3)
    df = spark.createDataFrame([(i, str(i)) for i in range(30)], SCHEMA).repartition(2)
    df.write.format("acid").mode("append").save("b")  # tasks share buckets: a statement each
    engine.write(df.where("id < 10"), t)  # grouped by bucket: one writer per bucket
    with pytest.raises(Exception, match="grouped by bucket"):
        df.write.format("acid").mode("overwrite").save("b")
    scanned = t.scan(with_row_id=True).to_arrow().to_pylist()
    assert len(scanned) == 40
    for r in scanned:
        assert decode_bucket(r["row__id"]["bucketid"])[0] == bucket_for([r["id"]], ["int"], 3, 2)
    keys = [
        (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in scanned
    ]
    assert len(set(keys)) == len(keys)
    out = engine.write(df.where("id >= 25"), t, mode="overwrite")
    assert out.rows_inserted == 5
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [25, 26, 27, 28, 29]


@pytest.mark.slow
def test_a_failing_write_aborts_and_leaves_nothing_visible(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine
) -> None:
    t = wh.create_table("f", [("id", "int"), ("v", "string")], not_null=["v"])
    t.insert([{"id": 0, "v": "kept"}])
    bad = spark.createDataFrame([(1, "ok"), (2, None)], SCHEMA).repartition(2)
    with pytest.raises(Exception, match="NOT NULL|NotNullViolation"):
        bad.write.format("acid").mode("append").save("f")
    with pytest.raises(NotNullViolationError):
        engine.write(bad, t)
    text = spark.createDataFrame([("x", "y")], "id STRING, v STRING")
    with pytest.raises(SchemaMismatchError):
        engine.write(text, t)
    assert t.scan().to_arrow().to_pylist() == [{"id": 0, "v": "kept"}]
    aborted = [r for r in wh.metastore.show_transactions() if r["Transaction State"] == "ABORTED"]
    assert len(aborted) == 3  # one per failed write; their files are invisible


def test_metrics_name_the_executor_that_wrote(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    wh.create_table("m", [("id", "int"), ("v", "string")])
    metrics_path = tmp_path / "metrics.json"
    spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA).repartition(2).write.format("acid").option(
        "metrics_path", str(metrics_path)
    ).mode("append").save("m")
    metrics = json.loads(metrics_path.read_text())
    assert metrics["committed"] and metrics["rows_inserted"] == 2
    assert {task["partition_id"] for task in metrics["tasks"]} == {0, 1}
    assert all(task["pid"] != os.getpid() for task in metrics["tasks"])  # Python workers
