"""The warehouse as a Dagster resource (minimal: the maintenance jobs, sensors and checks use
it; the IO manager's resource builds on the same fields).

>>> AcidWarehouseResource(warehouse="/tmp/wh").engine
'embedded'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from dagster import ConfigurableResource
from pydantic import Field

from acid_platform.compaction import ExecutorRouter, ServiceConf
from acid_platform.engines import default_engine
from acid_platform.table import TableWarehouse


class AcidWarehouseResource(ConfigurableResource):  # type: ignore[misc]
    """A warehouse of Hive ACID tables: where it is, its metastore, the engine, the settings.

    ``conf`` holds Hive settings (``hive.txn.timeout``, ``hive.compactor.*``,
    ``acid.compactor.large.partition.bytes``): the metastore heartbeats and times out on
    ``hive.txn.timeout``, the compactor reads its thresholds there. With ``engine="spark"``,
    partitions larger than ``acid.compactor.large.partition.bytes`` are compacted on the active
    SparkSession (or one built on ``spark_master``).
    """

    warehouse: str = Field(description="Warehouse directory or URI (made by `acid init`).")
    metastore_url: str | None = Field(
        default=None, description="SQLAlchemy URL of the metastore (default: SQLite inside)."
    )
    engine: Literal["embedded", "spark"] = Field(
        default="embedded", description="Where rows are computed: embedded (DuckDB) or Spark."
    )
    conf: dict[str, str] = Field(
        default_factory=dict, description="Hive settings (hive.txn.timeout, hive.compactor.*)."
    )
    spark_master: str | None = Field(
        default=None, description="With engine=spark and no active session: the master to use."
    )

    @property
    def service_conf(self) -> ServiceConf:
        """The maintenance settings in ``conf`` (``hive.txn.timeout``, intervals)."""
        return ServiceConf.from_conf(self.conf)

    @contextmanager
    def open_warehouse(self) -> Iterator[TableWarehouse]:
        """The warehouse (it must exist), closed at the end."""
        wh = TableWarehouse.open(
            self.warehouse,
            self.metastore_url,
            engine=default_engine(),
            conf=self.conf,
            create=False,
            txn_timeout_s=self.service_conf.txn_timeout_s,
        )
        try:
            yield wh
        finally:
            wh.close()

    def compaction_executor(self, wh: TableWarehouse) -> ExecutorRouter | None:
        """What rewrites partitions: ``None`` (embedded) or, with ``engine="spark"``, a router
        sending large partitions to Spark."""
        if self.engine != "spark":
            return None
        from acid_platform.engines.spark.compaction import compaction_router

        return compaction_router(self._spark(), wh.conf)

    def _spark(self) -> Any:
        import os
        import sys

        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = SparkSession.builder.appName("acid compaction")
        if self.spark_master:
            builder = builder.master(self.spark_master)
        return builder.getOrCreate()
