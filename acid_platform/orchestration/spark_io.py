"""Spark DataFrames through the IO manager: outputs written by Spark's executors (the warehouse's
Spark native engine: rows never reach the driver), loads read by them through the ``acid`` data
source pinned to one snapshot.

The output's session is registered on the warehouse on first use (``wh.register_spark``), so the
IO manager needs no Spark settings of its own; the warehouse resource's Spark session
(``engine="spark"``, or :func:`~.resources.spark_resource`) serves the loads. Who wrote an
output comes from its statements' metrics (:attr:`StatementMetrics.tasks
<acid_platform.table.statement.StatementMetrics.tasks>`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from dagster import MetadataValue
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from acid_platform.engines.spark.engine import SparkEngine
from acid_platform.engines.spark.schema import spark_arrow_schema
from acid_platform.orchestration.frames import Frame
from acid_platform.orchestration.handlers import AcidTypeHandler
from acid_platform.orchestration.reading import TableRead
from acid_platform.table import Table
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.statement import StatementMetrics
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from acid_platform.orchestration.connection import AcidConnection


class SparkFrame:
    """Rows held as a Spark DataFrame; every question is a Spark job (never a collect of the
    rows: only counts and distinct partition values reach the driver)."""

    def __init__(self, data: DataFrame) -> None:
        self.data = data

    def schema(self) -> pa.Schema:
        return spark_arrow_schema(self.data.schema)

    def count_outside(self, predicate: exp.Expr) -> int:
        inside = exp.Coalesce(this=predicate.copy(), expressions=[exp.false()])
        return int(self.data.where(exp.not_(inside).sql(dialect="spark")).count())

    def partition_names(self, columns: Sequence[str]) -> list[str]:
        rows = self.data.select(*columns).distinct().collect()
        return sorted(make_partition_name(columns, [row[c] for c in columns]) for row in rows)

    def distinct(self, columns: Sequence[str]) -> DataFrame:
        return self.data.select(*columns).distinct()

    def conformed(self, table: Table, *, keys_only: bool = False) -> SparkFrame:
        """As they are: the Spark engine conforms the rows to the table as it writes them."""
        return self


class SparkTypeHandler(AcidTypeHandler[DataFrame]):
    """``pyspark.sql.DataFrame`` outputs and loads."""

    def writer_metadata(
        self, wh: Warehouse, obj: DataFrame, metrics: Sequence[StatementMetrics]
    ) -> Mapping[str, Any]:
        return spark_metadata(spark_engine(wh, obj.sparkSession).spark, metrics)

    def frame(self, wh: Warehouse, obj: DataFrame) -> Frame:
        spark_engine(wh, obj.sparkSession)
        return SparkFrame(obj.toDF(*[c.lower() for c in obj.columns]))

    def load(self, read: TableRead, connection: AcidConnection, target: type) -> Any:
        return read.to_spark(connection.resource.spark_session())

    @property
    def supported_types(self) -> Sequence[type[object]]:
        return [DataFrame]


def spark_engine(wh: Warehouse, session: SparkSession) -> SparkEngine:
    """The warehouse's Spark engine (``wh.register_spark(session)`` first if it has none)."""
    engine = next((e for e in wh.native_engines if isinstance(e, SparkEngine)), None)
    if engine is None:
        wh.register_spark(session)
        engine = next(e for e in wh.native_engines if isinstance(e, SparkEngine))
    return engine


def spark_metadata(spark: SparkSession, metrics: Sequence[StatementMetrics]) -> dict[str, Any]:
    """Who wrote a Spark output: the application of ``spark``, its master, the driver's
    process, and the processes of the tasks that wrote files in the statements ``metrics``
    (``host``, ``pid``, how many tasks) — on a cluster, Python workers of the executors."""
    context = spark.sparkContext
    tasks = [task for m in metrics for task in m.tasks]
    writers: dict[tuple[str, int], int] = {}
    for task in tasks:
        writers[(task.host, task.pid)] = writers.get((task.host, task.pid), 0) + 1
    return {
        "spark/app_id": context.applicationId,
        "spark/master": context.master,
        "spark/driver": MetadataValue.json({"host": socket.gethostname(), "pid": os.getpid()}),
        "spark/tasks": len(tasks),
        "spark/writers": MetadataValue.json(
            [{"host": h, "pid": p, "tasks": n} for (h, p), n in sorted(writers.items())]
        ),
    }


__all__ = ["SparkFrame", "SparkTypeHandler", "spark_engine", "spark_metadata"]
