"""Compaction that runs by itself: a sensor queues and requests, a job compacts.

* :func:`compaction_sensor` — on each tick runs the initiator (when ``hive.compactor.initiator.on``,
  at most every ``hive.compactor.check.interval``), then requests one run of the compaction job
  per ``initiated`` queue entry — those the initiator queued and explicit ``ALTER TABLE …
  COMPACT`` requests alike. The run key is ``db.table:partition:highest write id`` (the table's
  write id high-water mark when the entry is first seen), so a repeated tick requests nothing
  twice; the cursor remembers which entry got which key. An entry whose run finished without
  claiming it (the run failed before the worker started, or the worker died and its claim was
  revoked) is requested again under ``<key>#retry<n>``.
* :data:`compaction_job` — claims exactly its entry and runs the worker: embedded, or with
  ``engine="spark"`` large partitions on Spark (``acid.compactor.large.partition.bytes``). Its
  op is in the ``acid_compactor`` pool: ``dagster instance concurrency set acid_compactor N``
  is Hive's ``hive.compactor.worker.threads``. Compaction takes no lock a writer waits for
  (its own compactor transaction; output invisible until it commits), so writers share no pool
  with it.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of ops and sensors

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    Config,
    DagsterRun,
    DefaultSensorStatus,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from pydantic import Field

from acid_platform.compaction import CompactionOutcome, Initiator, Worker
from acid_platform.compaction.health import PartitionLayout, partition_layouts
from acid_platform.errors import NoSuchObjectError
from acid_platform.metastore import CompactionInfo, CompactionState, Metastore
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

COMPACTION_JOB = "acid_compaction"
COMPACTION_SENSOR = "acid_compaction_sensor"
COMPACTOR_POOL = "acid_compactor"
#: Run tags: the queue entry a run compacts, and the run key it was requested under.
ENTRY_TAG = "acid/compaction_id"
KEY_TAG = "acid/compaction_key"


class CompactionConfig(Config):  # type: ignore[misc]
    """Which queue entry the run compacts, and the asset of its table (if it is one)."""

    compaction_id: int
    asset_key: list[str] = Field(
        default_factory=list,
        description="The table's asset key (path): the compaction is reported on it as an "
        "observation and its health checks are evaluated again. Empty: not an asset.",
    )


@cache
def compaction_job_for(resource_key: str = DEFAULT_RESOURCE_KEY) -> JobDefinition:
    """The compaction job of the warehouse under ``resource_key`` (one per key): claims the
    entry and compacts it (a no-op when another worker has it or had it); what it did is the
    output's metadata and an observation of the table's asset."""
    return service_job(
        COMPACTION_JOB,
        "acid_compact",
        "compaction",
        resource_key,
        compact_entry,
        config_type=CompactionConfig,
        pool=COMPACTOR_POOL,
        description="Compact one queue entry (config: ops.acid_compact.config.compaction_id).",
    )


def compact_entry(
    context: OpExecutionContext, resource: AcidWarehouseResource, config: CompactionConfig
) -> Output[None]:
    """The compaction op's body (see :func:`compaction_job_for`)."""
    started = time.monotonic()
    with maintenance_warehouse(resource) as wh:
        info = wh.metastore.get_compaction(config.compaction_id)
        name = f"{info.db}.{info.table}"
        before = _partition_layout(wh, name, info.partition)
        worker = Worker(wh, executor=resource.compaction_executor(wh))
        outcome = worker.run_once(config.compaction_id)
        info = wh.metastore.get_compaction(config.compaction_id)
        if outcome is None:
            context.log.info(
                f"compaction {info.id} of {_where(info)} is {info.state.value}: another worker "
                "has it or had it; nothing to do"
            )
            return Output(
                None,
                metadata={"compaction_id": info.id, "state": info.state.value, "claimed": False},
            )
        metadata = outcome_metadata(outcome)
        if not outcome.succeeded:
            raise Failure(
                description=f"compaction {outcome.id} of {_where(info)} failed: {outcome.message}",
                metadata=metadata,
            )
        after = _partition_layout(wh, name, info.partition)
        metadata |= {
            "worker": worker.worker_id,
            "duration_s": round(time.monotonic() - started, 3),
            **_layout_metadata("before", before),
            **_layout_metadata("after", after),
        }
        if config.asset_key:
            target = TableAsset(AssetKey(config.asset_key), name)
            context.log_event(
                AssetObservation(
                    asset_key=target.key,
                    partition=None,
                    description=f"compaction {outcome.id} ({outcome.type}) of {_where(info)}",
                    metadata={f"compaction/{k}": v for k, v in metadata.items()},
                )
            )
            for evaluation in upkeep_evaluations(wh, target):
                context.log_event(evaluation)  # type: ignore[arg-type]  # handled; not annotated
    context.log.info(f"compaction {outcome.id} of {_where(info)}: {outcome.message}")
    return Output(None, metadata=metadata)


def _partition_layout(wh: Any, table: str, partition: str | None) -> PartitionLayout | None:
    """The partition's layout now (deltas, files, bytes), or None when it has none (only
    that partition's directory is listed)."""
    try:
        layouts = partition_layouts(wh.table(table), count_rows=False, partitions=[partition or ""])
    except NoSuchObjectError:
        return None
    return layouts[0] if layouts else None


def _layout_metadata(when: str, layout: PartitionLayout | None) -> dict[str, int]:
    if layout is None:
        return {}
    return {
        f"deltas_{when}": layout.deltas,
        f"delete_deltas_{when}": layout.delete_deltas,
        f"files_{when}": layout.files,
        f"bytes_{when}": layout.bytes,
    }


#: The default warehouse's compaction job.
compaction_job = compaction_job_for()


def outcome_metadata(outcome: CompactionOutcome) -> dict[str, Any]:
    """Run metadata of one compaction (numbers the UI can plot)."""
    result = outcome.result
    return {
        "compaction_id": outcome.id,
        "table": f"{outcome.db}.{outcome.table}",
        "partition": outcome.partition or "",
        "type": outcome.type,
        "state": outcome.state.value,
        "claimed": True,
        "executor": outcome.executor or "",
        "compactor_txn_id": outcome.compactor_txn_id or 0,
        "highest_write_id": outcome.highest_write_id or 0,
        "output_dirs": MetadataValue.json(list(result.output_dirs) if result else []),
        "rows_written": result.rows_written if result else 0,
        "deletes_written": result.deletes_written if result else 0,
        "input_bytes": result.input_bytes if result else 0,
        "output_bytes": result.output_bytes if result else 0,
        "message": outcome.message,
    }


# --------------------------------------------------------------------------- the sensor


@dataclass
class CompactionCursor:
    """The sensor's memory: the run key each live entry was requested under, when the
    initiator last ran (epoch seconds) and how many entries it queued then."""

    requested: dict[int, str] = field(default_factory=dict)
    initiated_at: float = 0.0
    initiator_queued: int = 0

    @classmethod
    def parse(cls, text: str | None) -> "CompactionCursor":
        if not text:
            return cls()
        data = json.loads(text)
        return cls(
            {int(k): str(v) for k, v in data.get("requested", {}).items()},
            float(data.get("initiated_at", 0.0)),
            int(data.get("initiator_queued", 0)),
        )

    def dump(self) -> str:
        requested = {str(k): v for k, v in sorted(self.requested.items())}
        return json.dumps(
            {
                "requested": requested,
                "initiated_at": self.initiated_at,
                "initiator_queued": self.initiator_queued,
            }
        )


def initiator_status(
    initiator_on: bool, check_interval_s: float, cursor: CompactionCursor, now: float, ran: bool
) -> str:
    """What a tick says of the initiator: off; ran on this tick (and what it queued); or when it
    last ran, what it queued then and when it runs next. It runs every
    ``hive.compactor.check.interval`` (300 s), the sensor every 30 s: a tick between two runs
    did not look for work, and must not say that nothing is due."""
    if not initiator_on:
        return (
            "initiator off (hive.compactor.initiator.on=false): only ALTER TABLE … COMPACT queues"
        )
    every = f"hive.compactor.check.interval {check_interval_s:g}s"
    if ran:
        return (
            f"initiator ran now and queued {cursor.initiator_queued}; next run in "
            f"{_span(check_interval_s)} ({every})"
        )
    last = cursor.initiated_at
    wait = max(0.0, last + check_interval_s - now)
    return (
        f"initiator last ran {_span(now - last)} ago (at {_clock(last)}) and queued "
        f"{cursor.initiator_queued}; next run in {_span(wait)}, at {_clock(now + wait)} ({every})"
    )


def _span(seconds: float) -> str:
    """``45s``, ``4m05s``, ``1h02m``."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _clock(epoch_s: float) -> str:
    """An epoch time as ``HH:MM:SS UTC``."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(epoch_s))


def run_key(ms: Metastore, entry: CompactionInfo) -> str:
    """``db.table:partition:highest write id`` of a queue entry, as of now."""
    hwm = ms.valid_write_ids(None, entry.db, entry.table).high_watermark
    return f"{entry.db}.{entry.table}:{entry.partition or ''}:{hwm}"


def plan_requests(
    context: SensorEvaluationContext,
    ms: Metastore,
    cursor: CompactionCursor,
    assets: Mapping[str, AssetKey] | None = None,
    resource_key: str = DEFAULT_RESOURCE_KEY,
) -> tuple[list[RunRequest], CompactionCursor]:
    """Run requests for the initiated entries not requested yet (or whose run ended without
    claiming them), and the cursor after them; ``assets`` maps ``db.table`` to the table's
    asset (the run reports on it). The runs of every key in question are fetched in ONE query
    of the run storage, however many entries are queued."""
    assets = assets or {}
    live = {e.id for e in ms.queued_compactions()}
    requested = {cq: key for cq, key in cursor.requested.items() if cq in live}
    initiated = ms.queued_compactions(CompactionState.INITIATED)
    fresh = {e.id: run_key(ms, e) for e in initiated if e.id not in requested}
    runs = _runs_by_key(context, {requested.get(e.id) or fresh[e.id] for e in initiated})
    requests = []
    for entry in initiated:
        earlier = requested.get(entry.id)
        if earlier is not None:
            done = runs.get(earlier, [])
            if not done or not all(r.is_finished for r in done):
                continue  # requested, not launched yet or still running
            key = f"{earlier.rsplit('#retry', 1)[0]}#retry{_attempt(earlier) + 1}"
        else:
            key = fresh[entry.id]
            if key in runs:  # an earlier entry of the same partition had this key
                key = f"{key}#{entry.id}"
        requested[entry.id] = key
        asset = assets.get(f"{entry.db}.{entry.table}")
        config: dict[str, Any] = {"compaction_id": entry.id}
        if asset is not None:
            config["asset_key"] = list(asset.path)
        requests.append(
            RunRequest(
                run_key=key,
                run_config={"ops": {"acid_compact": {"config": config}}},
                tags={
                    ENTRY_TAG: str(entry.id),
                    KEY_TAG: key,
                    "acid/warehouse": resource_key,
                    "acid/table": f"{entry.db}.{entry.table}",
                    "acid/partition": entry.partition or "",
                    "acid/compaction_type": entry.type.value if entry.type else "",
                },
            )
        )
    return requests, CompactionCursor(requested, cursor.initiated_at, cursor.initiator_queued)


def compaction_sensor(
    *,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    name: str | None = None,
    minimum_interval_seconds: int = 30,
    default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING,
) -> SensorDefinition:
    """The compaction sensor of the warehouse under ``resource_key`` (see the module docs);
    RUNNING by default."""

    @sensor(
        name=name or keyed_name(COMPACTION_SENSOR, resource_key),
        job=compaction_job_for(resource_key),
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description="Runs the compaction initiator and requests a compaction run per queued "
        "entry (run key db.table:partition:highest write id).",
    )
    def _compaction_sensor(context: SensorEvaluationContext, **_: Any) -> SensorResult:
        acid_warehouse = warehouse_resource(context, resource_key)
        if not acid_warehouse.exists():
            return SensorResult(skip_reason=no_warehouse_yet(acid_warehouse))
        cursor = CompactionCursor.parse(context.cursor)
        settings = acid_warehouse.service_conf
        ran = False
        with maintenance_warehouse(acid_warehouse) as wh:
            now = time.time()
            if settings.initiator_on and now - cursor.initiated_at >= settings.check_interval_s:
                decisions = Initiator(wh).run()
                cursor.initiator_queued = sum(1 for d in decisions if d.cq_id is not None)
                cursor.initiated_at = now
                ran = True
            assets = {t.table: t.key for t in repository_tables(context, resource_key)}
            requests, cursor = plan_requests(context, wh.metastore, cursor, assets, resource_key)
        if requests:
            return SensorResult(run_requests=requests, cursor=cursor.dump())
        waiting = len(cursor.requested)
        initiator = initiator_status(
            settings.initiator_on, settings.check_interval_s, cursor, now, ran
        )
        return SensorResult(
            skip_reason=f"{initiator}; no new queue entry "
            f"({waiting} requested entr{'y' if waiting == 1 else 'ies'} pending)",
            cursor=cursor.dump(),
        )

    return _compaction_sensor


def _runs_by_key(
    context: SensorEvaluationContext, keys: Collection[str]
) -> dict[str, list[DagsterRun]]:
    """The runs tagged with each of ``keys`` (keys without runs are absent): one query."""
    if not keys:
        return {}
    found: dict[str, list[DagsterRun]] = {}
    for run in context.instance.get_runs(filters=RunsFilter(tags={KEY_TAG: sorted(keys)})):
        found.setdefault(run.tags[KEY_TAG], []).append(run)
    return found


def _attempt(key: str) -> int:
    _, sep, tail = key.rpartition("#retry")
    return int(tail) if sep and tail.isdigit() else 0


def _where(info: CompactionInfo) -> str:
    return f"{info.db}.{info.table}" + (f" {info.partition}" if info.partition else "")


__all__ = [
    "COMPACTION_JOB",
    "COMPACTION_SENSOR",
    "COMPACTOR_POOL",
    "ENTRY_TAG",
    "KEY_TAG",
    "CompactionConfig",
    "CompactionCursor",
    "compact_entry",
    "compaction_job",
    "compaction_job_for",
    "compaction_sensor",
    "outcome_metadata",
    "plan_requests",
    "run_key",
]
