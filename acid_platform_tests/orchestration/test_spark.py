"""Spark DataFrames through the IO manager and the read resource, on the test run's one
SparkSession: outputs written by Spark's executors in every mode, loads pinned to one
snapshot."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import os
import socket
from typing import Any

import pytest
from dagster import (
    AssetExecutionContext,
    AssetIn,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from pyspark.sql import DataFrame, SparkSession

from acid_platform import Warehouse
from acid_platform.orchestration import (
    AcidReader,
    AcidTableIOManager,
    AcidWarehouseResource,
    spark_resource,
)
from acid_platform.orchestration.spark_io import spark_metadata
from acid_platform.table.statement import StatementMetrics, WriterTask
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.orchestration.conftest import latest_metadata

pytestmark = pytest.mark.slow

REGIONS = StaticPartitionsDefinition(["us", "eu"])


@pytest.fixture
def spark_resources(wh: Warehouse, spark: SparkSession) -> dict[str, object]:
    """The resources with engine ``spark`` (on the active session)."""
    acid = AcidWarehouseResource(warehouse=wh.root, engine="spark")
    return {
        "acid_warehouse": acid,
        "io_manager": AcidTableIOManager(acid_warehouse=acid),
        "reader": AcidReader(acid_warehouse=acid),
    }


def ids(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in rows)


def test_spark_outputs_overwrite_their_partition_and_load_as_spark_or_arrow(
    spark: SparkSession,
    spark_resources: dict[str, object],
    instance: DagsterInstance,
    wh: Warehouse,
) -> None:
    version = {"n": 1}
    seen: dict[str, Any] = {}

    @asset(partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def customers(context: AssetExecutionContext) -> DataFrame:
        region, n = context.partition_key, version["n"]
        return spark.createDataFrame(
            [(i, region, n) for i in range(3)], "id long, region string, v int"
        )

    @asset(ins={"customers": AssetIn(metadata={"columns": ["id", "v"]})})
    def as_spark(customers: DataFrame) -> None:
        seen["spark"] = ids(customers.collect())

    @asset(ins={"customers": AssetIn()})
    def as_arrow(customers: Any) -> None:
        seen["arrow"] = customers

    for region in ("us", "eu"):
        assert materialize(
            [customers], partition_key=region, resources=spark_resources, instance=instance
        ).success
    version["n"] = 2
    assert materialize(
        [customers], partition_key="us", resources=spark_resources, instance=instance
    ).success
    meta = latest_metadata(instance, "customers")
    assert meta["rows_inserted"] == 3 and meta["dagster/partition_row_count"] == 3
    assert meta["dagster/row_count"] == 6
    # who wrote: tasks of this application, in Python workers, not in the driver's process
    assert meta["spark/app_id"] == spark.sparkContext.applicationId
    assert meta["spark/master"] == spark.sparkContext.master
    assert meta["spark/driver"] == {"host": socket.gethostname(), "pid": os.getpid()}
    writers = meta["spark/writers"]
    assert meta["spark/tasks"] == sum(w["tasks"] for w in writers) >= 1
    assert os.getpid() not in {w["pid"] for w in writers}
    assert {w["host"] for w in writers} == {socket.gethostname()}  # local[2]: executors here
    location = wh.table("customers").spec.location
    assert acid_dirs(f"{location}/region=us") == ["base_0000001", "base_0000003"]
    assert ids(
        (r["region"], r["v"]) for r in wh.table("customers").scan().to_arrow().to_pylist()
    ) == [
        ("eu", 1),
        ("eu", 1),
        ("eu", 1),
        ("us", 2),
        ("us", 2),
        ("us", 2),
    ]
    assert materialize(
        [customers, as_spark, as_arrow],
        selection=[as_spark, as_arrow],
        resources=spark_resources,
        instance=instance,
    ).success
    assert seen["spark"] == ids([(i, v) for v in (1, 2) for i in range(3)])
    assert seen["arrow"].num_rows == 6


def test_spark_merge_and_delete_run_on_spark(
    spark: SparkSession,
    spark_resources: dict[str, object],
    instance: DagsterInstance,
    wh: Warehouse,
) -> None:
    frames = {"n": 0}

    @asset(metadata={"write_mode": "merge", "key_columns": ["id"]})
    def stores() -> DataFrame:
        frames["n"] += 1
        rows = [(1, "a"), (2, "b")] if frames["n"] == 1 else [(2, "B"), (3, "c")]
        return spark.createDataFrame(rows, "id long, city string")

    @asset(key="stores", metadata={"write_mode": "delete", "key_columns": ["id"]})
    def closed_stores() -> DataFrame:
        return spark.createDataFrame([(1,), (1,)], "id long")

    for _ in range(2):
        assert materialize([stores], resources=spark_resources, instance=instance).success
    meta = latest_metadata(instance, "stores")
    assert (meta["rows_inserted"], meta["rows_updated"]) == (1, 1)
    assert materialize([closed_stores], resources=spark_resources, instance=instance).success
    assert ids((r["id"], r["city"]) for r in wh.table("stores").scan().to_arrow().to_pylist()) == [
        (2, "B"),
        (3, "c"),
    ]
    assert latest_metadata(instance, "stores")["rows_deleted"] == 1


def test_a_spark_load_stays_on_its_snapshot(
    spark: SparkSession,
    spark_resources: dict[str, object],
    instance: DagsterInstance,
    wh: Warehouse,
) -> None:
    wh.create_table("facts", [("id", "int")], partition_columns=[("ds", "string")])
    wh.table("facts").insert([{"id": i, "ds": "d1"} for i in range(3)])
    seen: dict[str, int] = {}

    @asset
    def counted(reader: AcidReader) -> None:
        df = reader.load_spark("facts", columns=["id"], partition={"ds": "d1"})
        wh.table("facts").insert([{"id": 9, "ds": "d1"}])  # committed after the load
        seen["count"] = df.count()
        seen["again"] = df.where("id >= 0").count()

    assert materialize([counted], resources=spark_resources, instance=instance).success
    assert seen == {"count": 3, "again": 3}


def test_who_wrote_an_output_comes_from_its_statements_metrics(spark: SparkSession) -> None:
    """``spark/tasks`` and ``spark/writers`` count the tasks each statement's metrics name
    (``StatementMetrics.tasks``), over every statement of the output's transaction."""
    a0, a1 = WriterTask("executor-a", 11, 3, 0), WriterTask("executor-a", 11, 3, 1)
    b0 = WriterTask("executor-b", 12, 4, 0)
    metrics = [
        StatementMetrics("db.t", 7, 1, (0,), tasks=(a0, a1)),
        StatementMetrics("db.t", 7, 1, (1,)),  # a statement of the embedded engine
        StatementMetrics("db.t", 7, 1, (2,), tasks=(b0,)),
    ]
    meta = spark_metadata(spark, metrics)
    assert meta["spark/tasks"] == 3
    assert meta["spark/writers"].data == [
        {"host": "executor-a", "pid": 11, "tasks": 2},
        {"host": "executor-b", "pid": 12, "tasks": 1},
    ]
    assert meta["spark/app_id"] == spark.sparkContext.applicationId
    assert spark_metadata(spark, metrics[1:2])["spark/tasks"] == 0


def test_the_projects_spark_session_and_resources_leave_the_environment_alone(
    spark: SparkSession, wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spark_resource()``'s session, the warehouse resource on engine ``spark`` (its
    session, Spark registered, the compaction executor) and a load through Spark set no
    environment variable: the workers' interpreter and loopback are session settings. They
    find the test run's session active (no JVM started, so neither are PySpark's own writes
    when a SparkContext starts)."""
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP"):
        monkeypatch.delenv(name, raising=False)
    wh.create_table("env", [("id", "int")]).insert({"id": [1, 2]})
    before = dict(os.environ)
    session = spark_resource("local[2]").spark_session
    assert session.sparkContext is spark.sparkContext  # getOrCreate: the test run's
    acid = AcidWarehouseResource(warehouse=wh.root, engine="spark")
    try:
        registered = acid.get_warehouse()
        assert [e.name for e in registered.native_engines] == ["spark"]
        assert acid.compaction_executor(registered) is not None
        assert AcidReader(acid_warehouse=acid).load_spark("env").count() == 2
    finally:
        acid.close()
    assert dict(os.environ) == before
