"""Dagster for acid_platform: ACID tables as assets, and the maintenance that runs by itself.
Only this layer (and those above it) imports Dagster.

>>> # defs = acid_definitions(assets=[...], warehouse=AcidWarehouseResource(warehouse="/data/wh"))

* :mod:`.platform` — :func:`acid_definitions` (your assets + a warehouse's resources,
  maintenance and checks), :func:`warehouse_definitions`, :func:`with_acid_checks`;
* :mod:`.components` — the same as Dagster Components (``defs.yaml``), each with a scaffolder:
  ``AcidWarehouseComponent``, ``AcidTableComponent``, ``AcidIngestComponent``,
  ``AcidChangeFeedComponent`` (``dg list components`` shows them);

* :mod:`.resources` — :class:`AcidWarehouseResource` (the warehouse: ``get_warehouse()``; its
  tables and transactions), :class:`AcidReader` (snapshots: loads under one snapshot),
  :func:`spark_resource`;
* :mod:`.io_manager` — :class:`AcidTableIOManager`: append / overwrite / merge / delete, each
  one transaction; Dagster partitions as Hive partitions (:mod:`.slices`); type handlers for
  pyarrow, pandas (:mod:`.handlers`) and Spark (:mod:`.spark_io`); materialization metadata
  (:mod:`.metadata`, :mod:`.health`);
* :mod:`.compaction` — the compaction sensor (initiator + one run per queued entry) and job;
* :mod:`.cleaning` — the cleaner schedule and job, the housekeeping sensor and job;
* :mod:`.ingest` — the ingest sensor (one run per new landing file or batch) and job (each
  file loaded exactly once);
* :mod:`.changes` — ``change_feed_sensor``: a table's change feed consumed window by window
  of write ids (the cursor keeps the last one), each window a :class:`ChangeWindow` config;
* :mod:`.maintenance` — ``maintenance_definitions()``: all of it in one ``Definitions``;
* :mod:`.checks` — ``acid_table_checks(asset_key, table_name)``: blocking consistency checks and
  WARN-level health checks of one table;
* the IO manager's parts — :mod:`.connection` (what a type handler gets; the asset's table),
  :mod:`.frames` (an output's rows, Arrow or Spark), :mod:`.options` (write mode, key columns,
  MERGE clauses, the layout of a table the first write creates), :mod:`.writes` (append,
  overwrite, merge, delete: each one transaction), :mod:`.reading` (``TableSnapshot``: loads
  under one snapshot);
* :mod:`.service_jobs` — the one-op jobs of the services, per warehouse resource key.

It needs the ``[dagster]`` extra (Spark assets: ``[dagster-spark]``); without it, importing
it raises :class:`~acid_platform.errors.MissingExtraError` naming the extra.
"""

from acid_platform.runtime import require

require("dagster", "dagster", "acid_platform.orchestration")

from acid_platform.orchestration.changes import ChangeWindow, append_changes, change_feed_sensor
from acid_platform.orchestration.checks import acid_table_checks
from acid_platform.orchestration.cleaning import (
    cleaner_job,
    cleaner_schedule,
    housekeeping_job,
    housekeeping_sensor,
)
from acid_platform.orchestration.compaction import compaction_job, compaction_sensor
from acid_platform.orchestration.health import TableHealth, table_health
from acid_platform.orchestration.ingest import ingest_job, ingest_sensor
from acid_platform.orchestration.io_manager import AcidTableIOManager
from acid_platform.orchestration.maintenance import maintenance_definitions
from acid_platform.orchestration.options import MergeOptions, WriteMode
from acid_platform.orchestration.platform import (
    acid_definitions,
    acid_tables,
    warehouse_definitions,
    with_acid_checks,
)
from acid_platform.orchestration.reading import TableRead, TableSnapshot
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidReader,
    AcidWarehouseResource,
    spark_resource,
)

__all__ = [
    "DEFAULT_RESOURCE_KEY",
    "AcidReader",
    "AcidTableIOManager",
    "AcidWarehouseResource",
    "ChangeWindow",
    "MergeOptions",
    "TableHealth",
    "TableRead",
    "TableSnapshot",
    "WriteMode",
    "acid_definitions",
    "acid_table_checks",
    "acid_tables",
    "append_changes",
    "change_feed_sensor",
    "cleaner_job",
    "cleaner_schedule",
    "compaction_job",
    "compaction_sensor",
    "housekeeping_job",
    "housekeeping_sensor",
    "ingest_job",
    "ingest_sensor",
    "maintenance_definitions",
    "spark_resource",
    "table_health",
    "warehouse_definitions",
    "with_acid_checks",
]
