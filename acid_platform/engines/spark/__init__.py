"""Spark for acid_platform: the ``acid`` data source, a Spark engine, and a local cluster.

>>> # from acid_platform import Warehouse
>>> # wh = Warehouse.open("/data/wh"); wh.register_spark(spark)
>>> # spark.read.format("acid").load("db.sales").where("ds = '2024-01-01'")
>>> # df.write.format("acid").mode("append").save("db.sales")
>>> # engine = SparkEngine(spark)
>>> # engine.merge(wh.table("db.sales"), df, "t.id = s.id").when_matched_update_all().execute()

* :func:`register` — the ``acid`` format for one warehouse (each query reads the latest
  committed snapshot, or one pinned by option; writes by executors, committed on the driver);
* :class:`SparkEngine` — the :class:`~acid_platform.table.engine.Engine` protocol on Spark, plus
  UPDATE / DELETE / MERGE / INSERT whose rows stay on the executors;
* :class:`SparkCompactionExecutor` / :func:`compaction_router` — the compaction worker's executor
  for large partitions: bucket files written by Spark tasks;
* :class:`LocalCluster` — a standalone master and workers on 127.0.0.1, for tests and laptops.

Modules:

* the data source — :mod:`.datasource` (``AcidDataSource``), :mod:`.options` (its options and
  per-process handles), :mod:`.names`, :mod:`.reader` (batch reads over the scan planner's
  tasks), :mod:`.query_snapshot` (one snapshot per query, shared by its tasks),
  :mod:`.filters` (pushed filters), :mod:`.writer` (executors write, the driver commits),
  :mod:`.files` (what one task writes), :mod:`.stream_writer` (the Structured Streaming sink:
  a transaction per micro-batch), :mod:`.change_reader` (the change feed, batch and
  streaming), :mod:`.schema` (types and batches as Spark expects them);
* tables by name — :mod:`.catalog` (why a session catalog extension), :mod:`.catalog_install`
  (``jvm/AcidCatalog.java``, ``AcidScans.java`` and ``AcidSource.java``, compiled once per Spark
  version), :mod:`.table_scans` (scans pruned and sized per query);
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
import uuid
from typing import TYPE_CHECKING, Any

from acid_platform.runtime import require

require("pyspark", "spark", "acid_platform.engines.spark")

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acid_platform.engines.spark.cluster import LocalCluster
    from acid_platform.engines.spark.compaction import SparkCompactionExecutor, compaction_router
    from acid_platform.engines.spark.datasource import AcidDataSource
    from acid_platform.engines.spark.engine import SparkEngine
    from acid_platform.table.statement import StatementHost

from acid_platform.engines.spark.names import NAME  # the default format name

# Spark's Python workers unpickle the data source by importing its module; this package stays
# light so they do not import the engine and cluster code as well.
_LAZY = {
    "AcidDataSource": "acid_platform.engines.spark.datasource",
    "LocalCluster": "acid_platform.engines.spark.cluster",
    "SparkCompactionExecutor": "acid_platform.engines.spark.compaction",
    "compaction_router": "acid_platform.engines.spark.compaction",
    "SparkEngine": "acid_platform.engines.spark.engine",
}


def register(
    spark: SparkSession, warehouse: StatementHost, *, name: str = NAME
) -> type[AcidDataSource]:
    """Register the ``acid`` data source (or ``name``) for ``warehouse`` on ``spark``.

    Also makes the warehouse's tables Spark tables by name (``CREATE TABLE … USING acid``,
    ``INSERT``, ``SELECT``, ``saveAsTable``: :mod:`.catalog`).

    The warehouse root, metastore URL, transaction time-out and session settings (``wh.conf``
    as of now) become option defaults; ``.option("warehouse", …)`` and
    ``.option("metastore_url", …)`` override them per read or write. Spark's Python workers
    run the driver's interpreter when the executors are on this host and no other was chosen;
    any other interpreter is checked first (:mod:`.python_workers`): an
    :class:`~acid_platform.errors.EngineError` naming ``PYSPARK_PYTHON`` /
    ``spark.pyspark.python`` if it cannot import the project. Returns the registered class.
    """
    from acid_platform.engines.spark.catalog_install import install_catalog
    from acid_platform.engines.spark.datasource import AcidDataSource
    from acid_platform.engines.spark.options import warehouse_options
    from acid_platform.engines.spark.python_workers import use_driver_python

    use_driver_python(spark)

    # with the SQL execution id, names one query's snapshot (shared by all its scans)
    defaults = warehouse_options(warehouse) | {"query_scope": uuid.uuid4().hex}
    source = install_catalog(spark, name)
    attrs: dict[str, Any] = {"defaults": defaults, "format_name": name, "source_name": source}
    cls = type("AcidDataSource", (AcidDataSource,), attrs)
    spark.dataSource.register(cls)
    return cls


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "NAME",
    "AcidDataSource",
    "LocalCluster",
    "SparkCompactionExecutor",
    "SparkEngine",
    "compaction_router",
    "register",
]
