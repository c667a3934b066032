"""Dagster for acid_platform: ACID tables as assets (the only package that imports Dagster,
with the example ``definitions`` above it).

>>> # acid = AcidWarehouseResource(warehouse="/data/wh")
>>> # Definitions(assets=[...], resources={"acid": acid, "io_manager": AcidTableIOManager(acid=acid),
>>> #                                      "reader": AcidReader(acid=acid)})

* :mod:`.resources` — :class:`AcidWarehouseResource` (warehouse, tables, transactions,
  snapshots), :class:`AcidReader` (loads under one snapshot), :func:`spark_resource`;
* :mod:`.io_manager` — :class:`AcidTableIOManager`: append / overwrite / merge / delete, each
  one transaction; Dagster partitions as Hive partitions (:mod:`.slices`); type handlers for
  pyarrow, pandas (:mod:`.handlers`) and Spark (:mod:`.spark_io`); materialization metadata
  (:mod:`.metadata`, :mod:`.health`).
"""

from acid_platform.orchestration.health import TableHealth, table_health
from acid_platform.orchestration.io_manager import AcidTableIOManager
from acid_platform.orchestration.options import MergeOptions, WriteMode
from acid_platform.orchestration.reading import TableRead, TableSnapshot
from acid_platform.orchestration.resources import AcidReader, AcidWarehouseResource, spark_resource

__all__ = [
    "AcidReader",
    "AcidTableIOManager",
    "AcidWarehouseResource",
    "MergeOptions",
    "TableHealth",
    "TableRead",
    "TableSnapshot",
    "WriteMode",
    "spark_resource",
    "table_health",
]
