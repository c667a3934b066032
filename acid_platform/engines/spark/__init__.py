"""Spark for acid_platform: the ``acid`` data source, a Spark engine, and a local cluster.

>>> # from acid_platform import Warehouse
>>> # wh = Warehouse.open("/data/wh"); wh.register_spark(spark)
>>> # spark.read.format("acid").load("db.sales").where("ds = '2024-01-01'")
>>> # df.write.format("acid").mode("append").save("db.sales")
>>> # engine = SparkEngine(spark)
>>> # engine.merge(wh.table("db.sales"), df, "t.id = s.id").when_matched_update_all().execute()

* ``wh.register_spark(spark)`` (:meth:`acid_platform.Warehouse.register_spark`; the module
  :mod:`.registration`) — the ``acid`` format for one warehouse (each query reads the latest
  committed snapshot, or one pinned by option; writes by executors, committed on the driver);
  :func:`register`, which registered the format alone, is deprecated;
* :class:`AcidTable` — ``AcidTable.forName(spark, "db.t")``: DELETE / UPDATE / MERGE INTO as
  a DataFrame API in Delta Lake's shape, each one Spark SQL statement (:mod:`.acid_table`);
* :class:`SparkEngine` — the :class:`~acid_platform.table.engine.Engine` protocol on Spark, plus
  UPDATE / DELETE / MERGE / INSERT whose rows stay on the executors;
* :class:`SparkCompactionExecutor` / :func:`compaction_router` — the compaction worker's executor
  for large partitions: bucket files written by Spark tasks;
* :class:`LocalCluster` — a standalone master and workers on 127.0.0.1, for tests and laptops.

Modules:

* the data source — :mod:`.registration` (registering it on a session), :mod:`.datasource`
  (``AcidDataSource``), :mod:`.options` (its options and per-process handles), :mod:`.names`,
  :mod:`.reader` (batch reads over the scan planner's tasks), :mod:`.query_snapshot` (one
  snapshot per query, shared by its tasks),
  :mod:`.filters` (pushed filters), :mod:`.writer` (executors write, the driver commits),
  :mod:`.files` (what one task writes), :mod:`.stream_writer` (the Structured Streaming sink:
  a transaction per micro-batch), :mod:`.change_reader` (the change feed, batch and
  streaming), :mod:`.schema` (types and batches as Spark expects them);
* tables by name — :mod:`.catalog` (why a session catalog extension), :mod:`.catalog_install`
  (``jvm/AcidCatalog.java``, ``AcidScans.java`` and ``AcidSource.java``, compiled once per Spark
  version), :mod:`.table_scans` (scans pruned and sized per query), :mod:`.row_level` (Spark
  SQL's DELETE / UPDATE / MERGE), :mod:`.maintenance` (the compaction procedures),
  :mod:`.extensions` (the session extension that parses Hive's ``ALTER TABLE … COMPACT`` and
  ``SHOW COMPACTIONS`` as those procedures' calls);
* the engine — :mod:`.engine` (``SparkEngine``), :mod:`.dml` (the one DML plan on Spark),
  :mod:`.plans` (Hive plans on Spark SQL), :mod:`.buckets` (Hive's bucket of each row, on the
  executors), :mod:`.compaction` (the executor for large partitions);
* processes — :mod:`.launch` (the CLI's session), :mod:`.python_workers` (the interpreter of
  Spark's Python workers), :mod:`.cluster` (``LocalCluster``).

PySpark is imported here and above only (``streaming.mutate.spark``, the Dagster Spark
resource and IO handler), never below ``engines``. It needs the ``[spark]`` extra;
without it, importing it raises :class:`~acid_platform.errors.MissingExtraError` naming the
extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from acid_platform.runtime import require

require("pyspark", "spark", "acid_platform.engines.spark")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acid_platform.engines.spark.acid_table import AcidTable
    from acid_platform.engines.spark.cluster import LocalCluster
    from acid_platform.engines.spark.compaction import SparkCompactionExecutor, compaction_router
    from acid_platform.engines.spark.datasource import AcidDataSource
    from acid_platform.engines.spark.engine import SparkEngine
    from acid_platform.table.statement import StatementHost

from acid_platform.engines.spark.names import NAME  # the default format name

# Spark's Python workers unpickle the data source by importing its module; this package stays
# light so they do not import the engine and cluster code as well.
_LAZY = {
    "AcidTable": "acid_platform.engines.spark.acid_table",
    "AcidDataSource": "acid_platform.engines.spark.datasource",
    "LocalCluster": "acid_platform.engines.spark.cluster",
    "SparkCompactionExecutor": "acid_platform.engines.spark.compaction",
    "compaction_router": "acid_platform.engines.spark.compaction",
    "SparkEngine": "acid_platform.engines.spark.engine",
}


def register(
    spark: SparkSession, warehouse: StatementHost, *, name: str = NAME
) -> type[AcidDataSource]:
    """Deprecated: use ``wh.register_spark(spark)``
    (:meth:`acid_platform.Warehouse.register_spark`; ``format_name=name`` for another format
    name), the one way to register a warehouse on Spark, whose docstring lists what registering
    changes on the session. This registers the ``acid`` data source (or ``name``) for
    ``warehouse`` on ``spark`` as before, without the native engine, and returns the registered
    class (:func:`.registration.register_source`)."""
    from acid_platform.engines.spark.registration import register_source
    from acid_platform.table.deprecation import deprecated

    deprecated(
        "acid_platform.engines.spark.register(spark, wh)",
        "wh.register_spark(spark) (format_name=… for another format name)",
    )
    return register_source(spark, warehouse, name=name)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "NAME",
    "AcidTable",
    "AcidDataSource",
    "LocalCluster",
    "SparkCompactionExecutor",
    "SparkEngine",
    "compaction_router",
    "register",
]
