"""The cleaner on a schedule, and the housekeeper on a sensor.

* :func:`cleaner_schedule` runs :data:`cleaner_job` on a cron (default every 5 minutes): one
  cleaner pass, deleting what compactions made obsolete and what aborted transactions left once
  no reader can need it. What it removed is the run's metadata (and ``acid/removed_paths`` tag).
* :func:`housekeeping_sensor` looks for transactions silent longer than ``hive.txn.timeout`` (and
  silent txn-less locks) and, when there are some, requests a :data:`housekeeping_job` run that
  aborts them, which releases their locks: a crashed client holds a table no longer than the
  time-out plus one sensor interval. The run key names what is due, so a repeated tick
  requests nothing twice.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of ops and sensors

import hashlib
from functools import cache
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    Config,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    schedule,
    sensor,
)
from pydantic import Field

from acid_platform.compaction import find_timed_out, run_cleaner, run_housekeeping
from acid_platform.orchestration.checks import TableAsset, repository_tables, upkeep_evaluations
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidWarehouseResource,
    keyed_name,
    maintenance_warehouse,
    no_warehouse_yet,
    warehouse_resource,
)
from acid_platform.orchestration.service_jobs import service_job

CLEANER_JOB = "acid_cleaner"
CLEANER_SCHEDULE = "acid_cleaner_schedule"
HOUSEKEEPING_JOB = "acid_housekeeping"
HOUSEKEEPING_SENSOR = "acid_housekeeping_sensor"
#: Paths listed in run metadata (all are counted).
MAX_LISTED = 500


class CleanerConfig(Config):  # type: ignore[misc]
    """The table assets the cleaner reports on (``db.table`` -> asset key path)."""

    assets: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Tables that are assets: what the cleaner removed of each is observed on "
        "it and its health checks are evaluated again.",
    )


@cache
def cleaner_job_for(resource_key: str = DEFAULT_RESOURCE_KEY) -> JobDefinition:
    """The cleaner job of the warehouse under ``resource_key`` (one per key): one cleaner pass;
    what it removed goes to the output's metadata, the run's tags and an observation of each
    table asset it touched."""
    return service_job(
        CLEANER_JOB,
        "acid_clean",
        "cleaner",
        resource_key,
        clean,
        config_type=CleanerConfig,
        description="One pass of the cleaner.",
    )


def clean(
    context: OpExecutionContext, resource: AcidWarehouseResource, config: CleanerConfig
) -> Output[None]:
    """The cleaner op's body (see :func:`cleaner_job_for`)."""
    with maintenance_warehouse(resource) as wh:
        report = run_cleaner(wh)
        for table, path in sorted(config.assets.items()):
            entries = [e for e in report.entries if f"{e.db}.{e.table}" == table]
            if not entries:
                continue
            target = TableAsset(AssetKey(path), table)
            removed = [p for e in entries for p in e.removed]
            context.log_event(
                AssetObservation(
                    asset_key=target.key,
                    description=f"cleaner: {len(removed)} path(s) of {table} removed",
                    metadata={
                        "cleaner/removed_paths": len(removed),
                        "cleaner/cleaned_compactions": sum(e.cleaned for e in entries),
                        "cleaner/removed": MetadataValue.json(removed[:MAX_LISTED]),
                    },
                )
            )
            for evaluation in upkeep_evaluations(wh, target):
                context.log_event(evaluation)  # type: ignore[arg-type]  # handled; not annotated
    removed = list(report.removed)
    metadata: dict[str, Any] = {
        "removed_paths": len(removed),
        "removed": MetadataValue.json(removed[:MAX_LISTED]),
        "aborted_paths_removed": len(report.aborted_removed),
        "cleaned_compactions": MetadataValue.json(list(report.cleaned_ids)),
        "not_cleaned_yet": MetadataValue.json(
            [{"compaction_id": e.id, "why": e.message} for e in report.entries if not e.cleaned]
        ),
    }
    context.instance.add_run_tags(
        context.run_id,
        {
            "acid/removed_paths": str(len(removed)),
            "acid/cleaned_compactions": str(len(report.cleaned_ids)),
        },
    )
    context.log.info(
        f"cleaner: {len(report.cleaned_ids)} compaction(s) cleaned, {len(removed)} path(s) removed"
    )
    return Output(None, metadata=metadata)


#: The default warehouse's cleaner job.
cleaner_job = cleaner_job_for()


def cleaner_schedule(
    cron_schedule: str = "*/5 * * * *",
    *,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    name: str | None = None,
    execution_timezone: str | None = None,
    default_status: DefaultScheduleStatus = DefaultScheduleStatus.RUNNING,
) -> ScheduleDefinition:
    """The cleaner of the warehouse under ``resource_key`` on ``cron_schedule``; RUNNING by
    default. A tick before the warehouse exists is skipped (nothing to clean)."""

    @schedule(
        name=name or keyed_name(CLEANER_SCHEDULE, resource_key),
        cron_schedule=cron_schedule,
        job=cleaner_job_for(resource_key),
        required_resource_keys={resource_key},
        execution_timezone=execution_timezone,
        default_status=default_status,
        description="Deletes directories compactions made obsolete and aborted transactions "
        "left, once no snapshot needs them.",
    )
    def _cleaner_schedule(context: ScheduleEvaluationContext, **_: Any) -> RunRequest | SkipReason:
        acid_warehouse = warehouse_resource(context, resource_key)
        if not acid_warehouse.exists():
            return SkipReason(no_warehouse_yet(acid_warehouse))
        assets = {t.table: list(t.key.path) for t in repository_tables(context, resource_key)}
        return RunRequest(
            run_config={"ops": {"acid_clean": {"config": {"assets": assets}}}},
            tags={"acid/warehouse": resource_key},
        )

    return _cleaner_schedule


@cache
def housekeeping_job_for(resource_key: str = DEFAULT_RESOURCE_KEY) -> JobDefinition:
    """The housekeeping job of the warehouse under ``resource_key`` (one per key)."""
    return service_job(
        HOUSEKEEPING_JOB,
        "acid_housekeep",
        "housekeeping",
        resource_key,
        housekeep,
        description="Abort transactions silent for hive.txn.timeout (their locks go with "
        "them), expire silent locks and reader leases, purge history.",
    )


def housekeep(
    context: OpExecutionContext, resource: AcidWarehouseResource, _config: None = None
) -> Output[None]:
    """The housekeeping op's body (see :func:`housekeeping_job_for`)."""
    timeout = resource.service_conf.txn_timeout_s
    with maintenance_warehouse(resource) as wh:
        report = run_housekeeping(wh, timeout)
    context.log.info(
        f"housekeeper: aborted {list(report.aborted_txns)}, freed locks {list(report.freed_locks)}"
    )
    metadata: dict[str, Any] = {
        "aborted_txns": MetadataValue.json(list(report.aborted_txns)),
        "aborted_txn_count": len(report.aborted_txns),
        "freed_locks": MetadataValue.json(list(report.freed_locks)),
        "txn_timeout_s": timeout,
        "purged": MetadataValue.json(dict(report.purged)),
    }
    return Output(None, metadata=metadata)


#: The default warehouse's housekeeping job.
housekeeping_job = housekeeping_job_for()


def housekeeping_sensor(
    *,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """Requests a housekeeping run when a transaction or lock has been silent longer than
    ``hive.txn.timeout``; RUNNING by default. Keep ``minimum_interval_seconds`` well below the
    time-out (Hive's housekeeper runs every half of it)."""

    @sensor(
        name=name or keyed_name(HOUSEKEEPING_SENSOR, resource_key),
        job=housekeeping_job_for(resource_key),
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description="Reaps transactions and locks silent longer than hive.txn.timeout.",
    )
    def _housekeeping_sensor(context: SensorEvaluationContext, **_: Any) -> RunRequest | SkipReason:
        acid_warehouse = warehouse_resource(context, resource_key)
        if not acid_warehouse.exists():
            return SkipReason(no_warehouse_yet(acid_warehouse))
        timeout = acid_warehouse.service_conf.txn_timeout_s
        with maintenance_warehouse(acid_warehouse) as wh:
            due = find_timed_out(wh, timeout)
        if not due:
            return SkipReason(f"no transaction or lock silent for {timeout:g}s")
        what = f"txns={','.join(map(str, due.txn_ids))}:locks={','.join(due.lock_ids)}"
        digest = hashlib.sha1(what.encode()).hexdigest()[:16]
        return RunRequest(
            run_key=f"housekeep:{digest}",
            tags={
                "acid/warehouse": resource_key,
                "acid/timed_out_txns": _listed(due.txn_ids),
                "acid/timed_out_locks": _listed(due.lock_ids),
            },
        )

    return _housekeeping_sensor


def _listed(items: tuple[Any, ...], limit: int = 10) -> str:
    text = ",".join(str(i) for i in items[:limit])
    return text + (f",… ({len(items)} in all)" if len(items) > limit else "")


__all__ = [
    "CLEANER_JOB",
    "CLEANER_SCHEDULE",
    "HOUSEKEEPING_JOB",
    "HOUSEKEEPING_SENSOR",
    "CleanerConfig",
    "clean",
    "cleaner_job",
    "cleaner_job_for",
    "cleaner_schedule",
    "housekeep",
    "housekeeping_job",
    "housekeeping_job_for",
    "housekeeping_sensor",
]
