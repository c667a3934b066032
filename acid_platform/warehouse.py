"""``acid_platform.Warehouse``: the table layer's warehouse with the front ends on top.

The table layer (:class:`acid_platform.table.Warehouse`) knows tables, transactions and DML; this
subclass adds what sits above it — HiveQL (:meth:`sql`) and, later, engine registration — so
imports keep pointing down.

>>> # wh = Warehouse.open("/tmp/wh"); wh.sql("SELECT 1")
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from acid_platform.table.warehouse import Warehouse as _TableWarehouse


class Warehouse(_TableWarehouse):
    """A warehouse of Hive ACID tables: Python API, HiveQL and (with PySpark) Spark."""

    def sql(self, text: str) -> pa.Table:
        """Run one HiveQL statement or a script; returns the last statement's result."""
        from acid_platform.sql import run_sql

        return run_sql(self, text)

    def register_spark(self, spark: Any) -> None:
        """Register the ``acid`` Spark data source for this warehouse on ``spark``."""
        from acid_platform.engines.spark import register

        register(spark, self)
