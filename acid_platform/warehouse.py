"""``acid_platform.Warehouse``: the table layer's warehouse with the front ends on top.

The table layer (:class:`acid_platform.table.Warehouse`) knows tables, transactions and DML; this
subclass adds what sits above it — HiveQL (:meth:`sql`) and Spark (:meth:`register_spark`: the
``acid`` data source, and Spark executors for compacting large partitions) — so imports keep
pointing down.

>>> # wh = Warehouse.open("/tmp/wh"); wh.sql("SELECT 1")
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from acid_platform.table.warehouse import Warehouse as _TableWarehouse


class Warehouse(_TableWarehouse):
    """A warehouse of Hive ACID tables: Python API, HiveQL and (with PySpark) Spark."""

    #: The session of :meth:`register_spark`, whose executors compact large partitions.
    compaction_spark: Any = None

    def sql(self, text: str) -> pa.Table:
        """Run one HiveQL statement or a script; returns the last statement's result."""
        from acid_platform.sql import run_sql

        return run_sql(self, text)

    def register_spark(self, spark: Any, *, compaction: bool = True) -> None:
        """Register the ``acid`` Spark data source for this warehouse on ``spark``, and Spark as
        a native engine (:mod:`acid_platform.table.native`): ``table.insert(df)`` and
        ``table.merge(df, …)`` with a Spark DataFrame then run on Spark, rows never collected.

        With ``compaction`` (the default), :meth:`compact` with ``wait`` (and ``ALTER TABLE …
        COMPACT … AND WAIT``) rewrites partitions larger than
        ``acid.compactor.large.partition.bytes`` (``wh.conf``; default 1 GiB) on ``spark``.
        """
        from acid_platform.engines.spark import SparkEngine, register

        register(spark, self)
        self.native_engines.register(SparkEngine(spark))
        self.compaction_spark = spark if compaction else None

    def _compaction_executor(self) -> Any:
        """Large partitions on the registered Spark session (``compaction=True``), else
        embedded."""
        if self.compaction_spark is None:
            return None
        from acid_platform.engines.spark.compaction import compaction_router

        return compaction_router(self.compaction_spark, self.conf)
