"""Registering a warehouse's ``acid`` data source on a Spark session: the one place it is done.

The public call is :meth:`acid_platform.Warehouse.register_spark` (it also makes Spark the
warehouse's native engine); its docstring lists everything registering changes on the session.
:func:`register_source` is its data-source half, here so that the layers above the facade
(the Dagster resources, ``TableRead.to_spark``) and the deprecated
:func:`acid_platform.engines.spark.register` go through the same code.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from acid_platform.engines.spark.names import NAME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acid_platform.engines.spark.datasource import AcidDataSource
    from acid_platform.table.statement import StatementHost


def register_source(
    spark: SparkSession, warehouse: StatementHost, *, name: str = NAME
) -> type[AcidDataSource]:
    """Register the ``acid`` data source (or ``name``) for ``warehouse`` on ``spark``; returns
    the registered class.

    Also makes the warehouse's tables Spark tables by name (``CREATE TABLE … USING acid``,
    ``INSERT``, ``SELECT``, ``saveAsTable``: :mod:`.catalog`, installed by
    :func:`~.catalog_install.install_catalog`).

    The warehouse root, metastore URL, transaction time-out and session settings (``wh.conf``
    as of now) become option defaults; ``.option("warehouse", …)`` and
    ``.option("metastore_url", …)`` override them per read or write. Spark's Python workers
    run the driver's interpreter when the executors are on this host and no other was chosen;
    any other interpreter is checked first (:mod:`.python_workers`): an
    :class:`~acid_platform.errors.EngineError` naming ``PYSPARK_PYTHON`` /
    ``spark.pyspark.python`` if it cannot import the project.
    """
    from acid_platform.engines.spark.catalog_install import install_catalog
    from acid_platform.engines.spark.datasource import AcidDataSource
    from acid_platform.engines.spark.extensions import note_missing
    from acid_platform.engines.spark.options import warehouse_options
    from acid_platform.engines.spark.python_workers import use_driver_python

    use_driver_python(spark)

    # with the SQL execution id, names one query's snapshot (shared by all its scans)
    defaults = warehouse_options(warehouse) | {"query_scope": uuid.uuid4().hex}
    source = install_catalog(spark, name)
    note_missing(spark)
    attrs: dict[str, Any] = {"defaults": defaults, "format_name": name, "source_name": source}
    cls = type("AcidDataSource", (AcidDataSource,), attrs)
    spark.dataSource.register(cls)
    return cls


__all__ = ["register_source"]
