"""The example platform: what a new user materializes first. ``dagster dev`` in the project root
serves it (``workspace.yaml``); ``acid platform materialize`` runs it from the shell.

Built from the seeds' use cases, on two Hive databases:

* ``retail.stores`` (group ``dimensions``): a slowly changing store dimension MERGEd daily
  (write mode ``merge`` on ``store_id``: changed stores updated, new ones inserted, closed ones
  deleted; the ``acid_stores_daily`` schedule);
* ``retail.sales`` and ``mail.email_events`` (group ``ingest``): events into tables partitioned
  by day (``ds``), each day replaced atomically (write mode ``overwrite``);
* ``retail.sales_restatement`` (group ``corrections``): a restatement, an UPDATE that gives
  members their discount on sales made before they joined;
* ``privacy.forget_customers`` (group ``corrections``): a right-to-be-forgotten DELETE from both
  event tables in ONE transaction;
* ``mail.email_summary`` (group ``reporting``): seed 003's summary table, per day one MERGE per
  event type, smallest source first, in one transaction;
* ``retail.store_sales_daily`` (group ``reporting``): revenue per store and day, computed and
  written by Spark's executors (local Spark; left out with ``ACID_SPARK_MASTER=none``);
* ``retail.returns`` (group ``ingest``): store returns loaded from the files that land in the
  landing directory (Parquet, CSV or JSON lines with :data:`RETURNS_COLUMNS` and ``ds``) by the
  ``acid_returns_ingest`` sensor — one ``acid_ingest`` run per new file, each file loaded
  exactly once (a re-run is a no-op); the table is created on the first load;
* ``retail.store_changes`` (group ``dimensions``): the change log of ``retail.stores``,
  appended window by window of write ids by the ``acid_store_changes`` sensor (the store
  dimension's change feed consumed incrementally, each change once;
  :mod:`~acid_platform.orchestration.example_changes`);
* the maintenance (:func:`~acid_platform.orchestration.maintenance_definitions`: compaction
  sensor and job, cleaner schedule, housekeeping sensor and job) and asset checks
  (:func:`~acid_platform.orchestration.acid_table_checks`) on every table.

The job ``acid_platform`` materializes all of it; a run over a range of days is one run
(single-run backfill). Embedded defaults, each overridden by the environment (read when the
module is loaded):

* ``ACID_WAREHOUSE``: the warehouse; default ``$DAGSTER_HOME/warehouse`` when ``DAGSTER_HOME``
  is set, else ``./warehouse``;
* ``ACID_METASTORE_URL``: the metastore (SQLAlchemy URL); default SQLite inside the warehouse;
* ``ACID_SPARK_MASTER``: Spark's master for the Spark asset (``local[1]``; ``none`` leaves it out);
* ``ACID_CONF``: Hive settings, ``key=value`` separated by commas
  (``hive.compactor.check.interval=10s,hive.txn.timeout=60s``);
* ``ACID_CLEANER_CRON``: the cleaner schedule's cron (``*/5 * * * *``);
* ``ACID_LANDING``: the landing directory (a path or URI) the ingest sensor watches; default
  ``landing`` beside the warehouse (``$DAGSTER_HOME/landing``). While it does not exist the
  sensor skips;
* ``ACID_INGEST_SENSOR_INTERVAL``: seconds between the ingest sensor's ticks (30);
* ``ACID_CHANGES_SENSOR_INTERVAL``: seconds between the store change log sensor's ticks (30);
* ``ACID_COMPACTION_SENSOR_INTERVAL``: seconds between the compaction sensor's ticks (30);
* ``ACID_HOUSEKEEPING_SENSOR_INTERVAL``: seconds between the housekeeping sensor's ticks
  (default: half ``hive.txn.timeout``, between 5 and 30, so a crashed client's locks go soon
  after the time-out).

The daemon evaluates sensors at most every 5 s or so: shorter intervals change nothing.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    DagsterInstance,
    DefaultScheduleStatus,
    Definitions,
    ExecuteInProcessResult,
    RunConfig,
    ScheduleDefinition,
    define_asset_job,
    in_process_executor,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from acid_platform.compaction import ServiceConf
from acid_platform.orchestration import (
    AcidReader,
    AcidTableIOManager,
    AcidWarehouseResource,
    acid_table_checks,
    ingest_job,
    ingest_sensor,
    maintenance_definitions,
    spark_resource,
)
from acid_platform.orchestration.example import (
    DAYS,
    EMAIL_EVENTS,
    EMAIL_SUMMARY,
    FORGET,
    RESTATEMENT,
    RETURNS,
    RETURNS_COLUMNS,
    RETURNS_PARTITION,
    SALES,
    STORE_SALES_DAILY,
    STORES,
    example_assets,
    returns_table,
)
from acid_platform.orchestration.example_changes import (
    STORE_CHANGES,
    STORE_CHANGES_SENSOR,
    STORE_CHANGES_TABLE,
    store_changes,
    store_changes_sensor,
)

PLATFORM_JOB = "acid_platform"
STORES_SCHEDULE = "acid_stores_daily"
RETURNS_SENSOR = "acid_returns_ingest"
RETURNS_TABLE = "retail.returns"
#: Files the returns sensor loads per run: one transaction each, one transaction batch per run.
RETURNS_FILES_PER_RUN = 10
NO_SPARK = "none"
#: About how often Dagster's daemon evaluates a sensor at most.
MIN_SENSOR_INTERVAL_S = 5

__all__ = [
    "DAYS",
    "EMAIL_EVENTS",
    "EMAIL_SUMMARY",
    "FORGET",
    "NO_SPARK",
    "PLATFORM_JOB",
    "RESTATEMENT",
    "RETURNS",
    "RETURNS_SENSOR",
    "RETURNS_TABLE",
    "SALES",
    "STORES",
    "STORES_SCHEDULE",
    "STORE_CHANGES",
    "STORE_CHANGES_SENSOR",
    "STORE_SALES_DAILY",
    "PlatformSettings",
    "defs",
    "materialize_platform",
    "platform_definitions",
    "platform_run_tags",
]


@dataclass(frozen=True)
class PlatformSettings:
    """Where the platform keeps its tables and how it runs (see module docs)."""

    warehouse: str
    metastore_url: str | None = None
    spark_master: str = "local[1]"
    conf: Mapping[str, str] = field(default_factory=dict)
    cleaner_cron: str = "*/5 * * * *"
    compaction_interval_s: int = 30
    housekeeping_interval_s: int | None = None  # None: from hive.txn.timeout
    #: The landing directory; empty: ``landing`` beside the warehouse.
    landing: str = ""
    ingest_interval_s: int = 30
    changes_interval_s: int = 30

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "PlatformSettings":
        """The settings the environment asks for, else the embedded defaults."""
        env = os.environ if env is None else env
        home = env.get("DAGSTER_HOME")
        default = Path(home) / "warehouse" if home else Path.cwd() / "warehouse"
        pairs = [p.partition("=") for p in env.get("ACID_CONF", "").split(",") if p.strip()]
        return cls(
            warehouse=env.get("ACID_WAREHOUSE") or str(default.resolve()),
            metastore_url=env.get("ACID_METASTORE_URL") or None,
            spark_master=env.get("ACID_SPARK_MASTER") or "local[1]",
            conf={k.strip(): v.strip() for k, _, v in pairs},
            cleaner_cron=env.get("ACID_CLEANER_CRON") or "*/5 * * * *",
            compaction_interval_s=_seconds(env, "ACID_COMPACTION_SENSOR_INTERVAL") or 30,
            housekeeping_interval_s=_seconds(env, "ACID_HOUSEKEEPING_SENSOR_INTERVAL"),
            landing=env.get("ACID_LANDING") or "",
            ingest_interval_s=_seconds(env, "ACID_INGEST_SENSOR_INTERVAL") or 30,
            changes_interval_s=_seconds(env, "ACID_CHANGES_SENSOR_INTERVAL") or 30,
        )

    @property
    def housekeeping_sensor_interval_s(self) -> int:
        """Seconds between the housekeeping sensor's ticks: as set, else half
        ``hive.txn.timeout`` between 5 and 30."""
        if self.housekeeping_interval_s is not None:
            return self.housekeeping_interval_s
        half = ServiceConf.from_conf(self.conf).txn_timeout_s / 2
        return int(min(max(half, MIN_SENSOR_INTERVAL_S), 30))

    @property
    def with_spark(self) -> bool:
        return self.spark_master.lower() != NO_SPARK

    @property
    def landing_location(self) -> str:
        """The landing directory: ``landing``, else ``landing`` beside the warehouse."""
        if self.landing:
            return self.landing
        if "://" in self.warehouse:
            head, _, query = self.warehouse.partition("?")
            parent = head.rstrip("/").rpartition("/")[0]
            return f"{parent}/landing" + (f"?{query}" if query else "")
        return str(Path(self.warehouse).resolve().parent / "landing")


def _seconds(env: Mapping[str, str], name: str) -> int | None:
    text = (env.get(name) or "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name}={text!r}: a whole number of seconds, at least 1")
    return int(text)


def table_assets(assets: list[AssetsDefinition]) -> dict[AssetKey, str]:
    """The asset keys that are tables, with their ``db.table``."""
    return {
        key: f"{key.path[0]}.{key.path[-1]}"
        for a in assets
        for key in a.keys
        if (a.metadata_by_key.get(key) or {}).get("acid/table")
    }


def platform_definitions(settings: PlatformSettings | None = None) -> Definitions:
    """The example platform's :class:`~dagster.Definitions` on ``settings`` (default: from the
    environment)."""
    settings = settings or PlatformSettings.from_env()
    spark = spark_resource(settings.spark_master) if settings.with_spark else None
    acid = AcidWarehouseResource(
        warehouse=settings.warehouse,
        metastore_url=settings.metastore_url,
        conf=dict(settings.conf),
        spark=spark,
    )
    assets = example_assets(with_spark=settings.with_spark)
    tables = {**table_assets(assets), RETURNS: RETURNS_TABLE, STORE_CHANGES: STORE_CHANGES_TABLE}
    checks = [c for key, name in tables.items() for c in acid_table_checks(key, name)]
    platform = define_asset_job(
        PLATFORM_JOB,
        selection=AssetSelection.assets(*assets),
        executor_def=in_process_executor,
        description="The example platform end to end (one run over a range of days; Spark "
        "steps share one JVM).",
    )
    stores_daily = ScheduleDefinition(
        name=STORES_SCHEDULE,
        target=AssetSelection.assets(STORES),
        cron_schedule="0 6 * * *",
        default_status=DefaultScheduleStatus.RUNNING,
        description="Merges the day's store feed into retail.stores.",
    )
    returns_ingest = ingest_sensor(
        settings.landing_location,
        RETURNS_TABLE,
        name=RETURNS_SENSOR,
        columns=RETURNS_COLUMNS,
        partition_columns=RETURNS_PARTITION,
        asset_key=RETURNS,
        batch_size=RETURNS_FILES_PER_RUN,
        minimum_interval_seconds=settings.ingest_interval_s,
    )
    example = Definitions(
        assets=[*assets, returns_table, store_changes],
        asset_checks=checks,
        jobs=[platform, ingest_job],
        schedules=[stores_daily],
        sensors=[returns_ingest, store_changes_sensor(settings.changes_interval_s)],
        resources={
            "acid_warehouse": acid,
            "io_manager": AcidTableIOManager(acid_warehouse=acid),
            "reader": AcidReader(acid_warehouse=acid),
        },
        executor=in_process_executor,
    )
    maintenance = maintenance_definitions(
        cleaner_cron=settings.cleaner_cron,
        compaction_interval_s=settings.compaction_interval_s,
        housekeeping_interval_s=settings.housekeeping_sensor_interval_s,
    )
    return Definitions.merge(example, maintenance)


def platform_run_tags(start: str | None = None, end: str | None = None) -> dict[str, str]:
    """The tags of ONE run over the days ``start`` to ``end`` (default: all of them)."""
    keys = DAYS.get_partition_keys()
    return {
        ASSET_PARTITION_RANGE_START_TAG: start or keys[0],
        ASSET_PARTITION_RANGE_END_TAG: end or keys[-1],
    }


def materialize_platform(
    definitions: Definitions,
    instance: DagsterInstance,
    *,
    start: str | None = None,
    end: str | None = None,
    run_config: RunConfig | dict[str, Any] | None = None,
) -> ExecuteInProcessResult:
    """Run the ``acid_platform`` job in this process over the days ``start`` to ``end`` (one
    run; a failure is in the result, not raised)."""
    return definitions.resolve_job_def(PLATFORM_JOB).execute_in_process(
        run_config=run_config,
        instance=instance,
        tags=platform_run_tags(start, end),
        raise_on_error=False,
    )


#: What ``dagster dev`` (``workspace.yaml``) and ``dagster definitions validate`` load.
defs = platform_definitions()
