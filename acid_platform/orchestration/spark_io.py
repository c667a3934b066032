"""Spark DataFrames through the IO manager: outputs written by Spark's executors (the warehouse's
Spark native engine: rows never reach the driver), loads read by them through the ``acid`` data
source pinned to one snapshot.

The output's session is registered on the warehouse on first use (as ``wh.register_spark`` does),
so the IO manager needs no Spark settings of its own; the warehouse resource's Spark session
(``engine="spark"``, or :func:`~.resources.spark_resource`) serves the loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame
from sqlglot import exp

from acid_platform.engines.spark.schema import spark_arrow_schema
from acid_platform.orchestration.frames import Frame
from acid_platform.orchestration.handlers import AcidTypeHandler
from acid_platform.orchestration.reading import TableRead
from acid_platform.table import Table
from acid_platform.table.partitions import make_partition_name
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from acid_platform.orchestration.io_manager import AcidConnection


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

    def frame(self, wh: Warehouse, obj: DataFrame) -> Frame:
        if not any(engine.name == "spark" for engine in wh.native_engines):
            wh.register_spark(obj.sparkSession)
        return SparkFrame(obj.toDF(*[c.lower() for c in obj.columns]))

    def load(self, read: TableRead, connection: AcidConnection, target: type) -> Any:
        return read.to_spark(connection.resource.spark_session())

    @property
    def supported_types(self) -> Sequence[type[object]]:
        return [DataFrame]


__all__ = ["SparkFrame", "SparkTypeHandler"]
