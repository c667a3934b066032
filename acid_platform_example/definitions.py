"""The example platform's code location: everything under ``defs/`` (the warehouse, ingest and
change-feed components' ``defs.yaml`` files and the assets of :mod:`.defs.assets`), with the
checks of every ACID table asset.

Built from the seeds' use cases, on two Hive databases:

* ``retail.stores`` (group ``dimensions``): a slowly changing store dimension MERGEd every
  morning (write mode ``merge`` on ``store_id``; ``AutomationCondition.on_cron``);
* ``retail.sales`` and ``mail.email_events`` (group ``ingest``): events into tables partitioned
  by day (``ds``), each day replaced atomically (write mode ``overwrite``);
* ``retail.sales_restatement`` and ``privacy.forget_customers`` (group ``corrections``): an
  UPDATE, and a right-to-be-forgotten DELETE from both event tables in ONE transaction;
* ``mail.email_summary`` and ``retail.store_sales_daily`` (group ``reporting``, eager): seed
  003's summary by MERGEs smallest source first, and revenue per store and day by Spark;
* ``retail.returns`` (the ingest component): files landing in the landing directory, each
  loaded exactly once;
* ``retail.store_changes`` (the change-feed component): ``retail.stores``' change log;
* the warehouse component's maintenance (compaction sensor and job, cleaner schedule,
  housekeeping sensor and job) and every table's checks.

The ``acid_platform`` job materializes all of it in one run (``acid platform materialize``).
Settings come from the environment (see ``defs/warehouse/defs.yaml``); with
``ACID_SPARK_MASTER=none`` as the code location loads (as the YAML's settings are read), the
Spark asset is left out.
"""

import os
from pathlib import Path

from dagster import AssetsDefinition, Definitions, definitions, load_from_defs_folder

from acid_platform.orchestration import with_acid_checks


def build_defs() -> Definitions:
    """The code location's definitions, loaded now (the environment as it is)."""
    loaded = load_from_defs_folder(path_within_project=Path(__file__).parent)
    if os.environ.get("ACID_SPARK_MASTER", "").lower() == "none":
        loaded = without_kind(loaded, "spark")
    return with_acid_checks(loaded)


def without_kind(defs: Definitions, kind: str) -> Definitions:
    """``defs`` without the assets of ``kind``."""
    assets = [
        a
        for a in defs.assets or ()
        if not (isinstance(a, AssetsDefinition) and any(kind in s.kinds for s in a.specs))
    ]
    return Definitions(
        assets=assets,
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        resources=defs.resources,
        executor=defs.executor,
        loggers=defs.loggers,
        metadata=defs.metadata,
    )


@definitions
def defs() -> Definitions:
    return build_defs()
