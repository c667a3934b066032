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
from typing import Any

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    in_process_executor,
    job,
    op,
    schedule,
    sensor,
)

from acid_platform.compaction import find_timed_out, run_cleaner, run_housekeeping
from acid_platform.orchestration.resources import AcidWarehouseResource, no_warehouse_yet

CLEANER_JOB = "acid_cleaner"
CLEANER_SCHEDULE = "acid_cleaner_schedule"
HOUSEKEEPING_JOB = "acid_housekeeping"
HOUSEKEEPING_SENSOR = "acid_housekeeping_sensor"
#: Paths listed in run metadata (all are counted).
MAX_LISTED = 500


@op(out=Out(Nothing))
def acid_clean(context: OpExecutionContext, acid_warehouse: AcidWarehouseResource) -> Output[None]:
    """One cleaner pass; what it removed goes to the output's metadata and the run's tags (the
    output holds no value: no IO manager stores it)."""
    with acid_warehouse.open_warehouse() as wh:
        report = run_cleaner(wh)
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


@job(name=CLEANER_JOB, executor_def=in_process_executor, tags={"acid/service": "cleaner"})
def cleaner_job() -> None:
    """One pass of the cleaner."""
    acid_clean()


def cleaner_schedule(
    cron_schedule: str = "*/5 * * * *",
    *,
    name: str = CLEANER_SCHEDULE,
    execution_timezone: str | None = None,
    default_status: DefaultScheduleStatus = DefaultScheduleStatus.RUNNING,
) -> ScheduleDefinition:
    """The cleaner on ``cron_schedule``; RUNNING by default. A tick before the warehouse exists
    is skipped (nothing to clean)."""

    @schedule(
        name=name,
        cron_schedule=cron_schedule,
        job=cleaner_job,
        execution_timezone=execution_timezone,
        default_status=default_status,
        description="Deletes directories compactions made obsolete and aborted transactions "
        "left, once no snapshot needs them.",
    )
    def _cleaner_schedule(
        context: ScheduleEvaluationContext, acid_warehouse: AcidWarehouseResource
    ) -> RunRequest | SkipReason:
        if not acid_warehouse.exists():
            return SkipReason(no_warehouse_yet(acid_warehouse))
        return RunRequest()

    return _cleaner_schedule


@op(out=Out(Nothing))
def acid_housekeep(
    context: OpExecutionContext, acid_warehouse: AcidWarehouseResource
) -> Output[None]:
    """Abort transactions silent for hive.txn.timeout (their locks go with them), expire silent
    locks and reader leases, purge history."""
    timeout = acid_warehouse.service_conf.txn_timeout_s
    with acid_warehouse.open_warehouse() as wh:
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


@job(name=HOUSEKEEPING_JOB, executor_def=in_process_executor, tags={"acid/service": "housekeeping"})
def housekeeping_job() -> None:
    """One pass of the housekeeper."""
    acid_housekeep()


def housekeeping_sensor(
    *,
    name: str = HOUSEKEEPING_SENSOR,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """Requests a housekeeping run when a transaction or lock has been silent longer than
    ``hive.txn.timeout``; RUNNING by default. Keep ``minimum_interval_seconds`` well below the
    time-out (Hive's housekeeper runs every half of it)."""

    @sensor(
        name=name,
        job=housekeeping_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description="Reaps transactions and locks silent longer than hive.txn.timeout.",
    )
    def _housekeeping_sensor(
        context: SensorEvaluationContext, acid_warehouse: AcidWarehouseResource
    ) -> RunRequest | SkipReason:
        if not acid_warehouse.exists():
            return SkipReason(no_warehouse_yet(acid_warehouse))
        timeout = acid_warehouse.service_conf.txn_timeout_s
        with acid_warehouse.open_warehouse() as wh:
            due = find_timed_out(wh, timeout)
        if not due:
            return SkipReason(f"no transaction or lock silent for {timeout:g}s")
        what = f"txns={','.join(map(str, due.txn_ids))}:locks={','.join(due.lock_ids)}"
        digest = hashlib.sha1(what.encode()).hexdigest()[:16]
        return RunRequest(
            run_key=f"housekeep:{digest}",
            tags={
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
    "acid_clean",
    "acid_housekeep",
    "cleaner_job",
    "cleaner_schedule",
    "housekeeping_job",
    "housekeeping_sensor",
]
