"""The initiator: decides which partitions need a compaction and queues it (Hive's ``Initiator``).

Input is the metastore's write activity: partitions with committed writes not yet compacted and
cleaned, and partitions holding writes of aborted txns. For each one, in Hive's order:

1. skip tables that are gone, not full ACID, or have ``no_auto_compaction=true``;
2. skip when a compaction of the partition is already ``initiated`` or ``working``;
3. when the last ``hive.compactor.initiator.failed.compacts.threshold`` (2) attempts failed,
   record ``did not initiate`` and skip;
4. more than ``hive.compactor.abortedtxn.threshold`` (1000) aborted txns -> **major**;
5. otherwise look at the files the compactor would see (``acid_state`` with the compactor's
   write id list): base size (base files, or original files when there is no base) and delta
   size (every current delta and delete delta):

   * no base but deltas -> never minor;
   * delta size / base size > ``hive.compactor.delta.pct.threshold`` (0.1) -> **major**
     (also: no deltas but an older base to replace, Hive 4's multi-base rule);
   * more than ``hive.compactor.delta.num.threshold`` (10) deltas -> **minor**, or **major**
     when there is no base;
   * else nothing.

The two delta thresholds can be overridden per table with ``compactorthreshold.<key>`` table
properties. Sizes compare as Java floats do in Hive.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from acid_platform.compaction.config import CompactorConf, auto_compaction_disabled
from acid_platform.compaction.context import CompactionContext, default_worker_id
from acid_platform.errors import AcidError, NoSuchObjectError
from acid_platform.format import (
    AcidDir,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    acid_state,
)
from acid_platform.metastore import CompactionType, Metastore, PartitionActivity, TableSpec

log = logging.getLogger(__name__)

_ACTIVE_STATES = ("initiated", "working")
_IDLE = "no uncompacted or aborted writes: a pass does not look at it"


@dataclass(frozen=True)
class InitiatorDecision:
    """What the initiator decided for one partition, and why.

    ``type`` is ``major``/``minor`` when a compaction was asked for (``cq_id`` is the queue
    entry, ``None`` if an entry already existed), ``None`` otherwise.
    """

    db: str
    table: str
    partition: str | None
    type: str | None
    reason: str
    cq_id: int | None = None
    base_size: int = 0
    delta_size: int = 0
    deltas: int = 0
    aborted_txns: int = 0


@dataclass(frozen=True)
class _Sizes:
    base_size: int
    delta_size: int
    deltas: int
    multi_base: bool


class Initiator:
    """Runs the initiator's checks over the metastore's write activity and queues compactions."""

    def __init__(
        self, target: object, conf: CompactorConf | None = None, initiator_id: str | None = None
    ) -> None:
        self.ctx = CompactionContext.of(target, conf)  # type: ignore[arg-type]
        self.initiator_id = initiator_id or default_worker_id()

    @property
    def metastore(self) -> Metastore:
        return self.ctx.metastore

    def run(self) -> list[InitiatorDecision]:
        """One pass: check every partition with activity; returns one decision per partition."""
        ms = self.metastore
        ms.reap_timed_out()  # a dead client's txn must not hold back what is decided here
        ms.revoke_timed_out_workers(self.ctx.conf.worker_timeout_s)
        active, seen = self._pass_state()
        decisions = []
        for activity in ms.write_activity():
            key = (activity.db, activity.table, activity.partition)
            if key in active:
                decisions.append(_decision(activity, None, "a compaction is already queued"))
                continue
            decisions.append(self._check(activity, seen))
        return decisions

    def preview(
        self, db: str, table: str, partitions: Sequence[str | None]
    ) -> list[InitiatorDecision]:
        """What a pass would decide now for each of ``partitions`` (``None``: the unpartitioned
        table) of ``db.table``, and why, by the same checks as :meth:`run`; nothing is queued
        or recorded (``SHOW TABLE STATUS``, :mod:`.health`). A partition without uncompacted
        or aborted writes is one a pass does not look at."""
        ms = self.metastore
        active, seen = self._pass_state()
        activity = {a.partition: a for a in ms.write_activity() if (a.db, a.table) == (db, table)}
        decisions = []
        for partition in partitions:
            found = activity.get(partition)
            if found is None:
                idle = PartitionActivity(db, table, partition, 0, None, False, 0)
                decisions.append(_decision(idle, None, _IDLE))
            elif (db, table, partition) in active:
                decisions.append(_decision(found, None, "a compaction is already queued"))
            else:
                decisions.append(self._check(found, seen, record=False))
        return decisions

    def decide(
        self, db: str, table: str, partition: str | None = None, aborted_txns: int = 0
    ) -> InitiatorDecision:
        """What the thresholds say for one partition (nothing is queued)."""
        activity = PartitionActivity(db, table, partition, 0, None, False, aborted_txns)
        spec = self.metastore.get_table(db, table)
        return self._determine(activity, spec, _PassCache(self.metastore, None))

    # ------------------------------------------------------------------ helpers
    def _pass_state(self) -> tuple[set[tuple[str, str, str | None]], _PassCache]:
        """The partitions with a compaction initiated or working, and a fresh pass cache."""
        rows = self.metastore.show_compactions()
        active = {
            (row["Database"], row["Table"], row["Partition"])
            for row in rows
            if row["State"] in _ACTIVE_STATES
        }
        failed = {
            (r["Database"], r["Table"], r["Partition"]) for r in rows if r["State"] == "failed"
        }
        return active, _PassCache(self.metastore, failed)

    def _check(
        self, activity: PartitionActivity, seen: _PassCache, record: bool = True
    ) -> InitiatorDecision:
        """Decide for one partition; with ``record``, queue the compaction or record why not
        (``did not initiate``), as a pass does."""
        ms = self.metastore
        conf = self.ctx.conf
        spec = seen.table(activity.db, activity.table)
        if spec is None:
            return _decision(activity, None, "table no longer exists")
        if not spec.is_transactional:
            return _decision(activity, None, "not a transactional table")
        if auto_compaction_disabled(spec.properties):
            return _decision(activity, None, "no_auto_compaction=true")
        if activity.partition is not None and activity.partition not in seen.partitions(spec):
            return _decision(activity, None, "partition no longer exists")
        if seen.failed_before(spec, activity.partition) and ms.too_many_failed_compactions(
            spec.db,
            spec.name,
            activity.partition,
            threshold=conf.failed_compacts_threshold,
            retry_after_s=conf.failed_retry_time_s,
        ):
            message = (
                "Compaction is not initiated since last "
                f"{conf.failed_compacts_threshold} consecutive compaction attempts failed "
                "(hive.compactor.initiator.failed.compacts.threshold)"
            )
            if record:
                ms.mark_did_not_initiate(
                    spec.db, spec.name, activity.partition, message, initiator_id=self.initiator_id
                )
            return _decision(activity, None, message)
        try:
            decision = self._determine(activity, spec, seen)
        except AcidError as exc:  # Hive records the failure so it is not retried every pass
            message = f"Caught exception while trying to determine if we should compact: {exc}"
            if record:
                ms.mark_did_not_initiate(
                    spec.db, spec.name, activity.partition, message, initiator_id=self.initiator_id
                )
            return _decision(activity, None, message)
        if decision.type is None or not record:
            return decision
        cq_id = ms.enqueue_compaction(
            spec.db, spec.name, activity.partition, decision.type, initiator_id=self.initiator_id
        )
        log.info("queued %s compaction %s of %s", decision.type, cq_id, spec.full_name)
        reason = decision.reason if cq_id is not None else "a compaction is already queued"
        return _with(decision, cq_id=cq_id, reason=reason)

    def _determine(
        self, activity: PartitionActivity, spec: TableSpec, seen: _PassCache
    ) -> InitiatorDecision:
        conf = self.ctx.conf
        if activity.aborted_txns > conf.aborted_txn_threshold:
            return _decision(
                activity,
                CompactionType.MAJOR,
                f"{activity.aborted_txns} aborted txns > hive.compactor.abortedtxn.threshold "
                f"{conf.aborted_txn_threshold}",
            )
        sizes = self._sizes(spec, activity.partition, seen)
        kind, reason = choose_compaction_type(
            sizes.base_size,
            sizes.delta_size,
            sizes.deltas,
            sizes.multi_base,
            delta_pct_threshold=conf.delta_pct_threshold_for(spec.properties),
            delta_num_threshold=conf.delta_num_threshold_for(spec.properties),
        )
        return InitiatorDecision(
            activity.db,
            activity.table,
            activity.partition,
            kind,
            reason,
            None,
            sizes.base_size,
            sizes.delta_size,
            sizes.deltas,
            activity.aborted_txns,
        )

    def _sizes(self, spec: TableSpec, partition: str | None, seen: _PassCache) -> _Sizes:
        txns, reader = seen.snapshot(spec)
        location = self.ctx.location(spec, partition)
        state = acid_state(
            location.path,
            ValidCompactorWriteIdList.from_reader(reader),
            txns,
            filesystem=location.filesystem,
            insert_only=spec.is_insert_only,
        )
        if state.base is not None:
            base_size = sum(f.size for f in state.base.files)
        else:
            base_size = sum(f.size for f in state.original_files)
        delta_size = sum(f.size for d in state.deltas for f in d.files)
        multi_base = any(isinstance(d, AcidDir) and d.is_base for d in state.obsolete)
        return _Sizes(base_size, delta_size, len(state.deltas), multi_base)


class _PassCache:
    """What one initiator pass looks up once: tables, their partitions and write ids, the
    transaction snapshot, and which partitions have failed compactions in the history
    (``failed`` None: unknown, ask the metastore)."""

    def __init__(self, ms: Metastore, failed: set[tuple[str, str, str | None]] | None) -> None:
        self._ms = ms
        self._failed = failed
        self._tables: dict[tuple[str, str], TableSpec | None] = {}
        self._partitions: dict[str, set[str]] = {}
        self._write_ids: dict[str, ValidWriteIdList] = {}
        self._txns: ValidTxnList | None = None

    def table(self, db: str, table: str) -> TableSpec | None:
        key = (db, table)
        if key not in self._tables:
            try:
                self._tables[key] = self._ms.get_table(db, table)
            except NoSuchObjectError:
                self._tables[key] = None
        return self._tables[key]

    def partitions(self, spec: TableSpec) -> set[str]:
        if spec.full_name not in self._partitions:
            self._partitions[spec.full_name] = set(self._ms.list_partitions(spec.db, spec.name))
        return self._partitions[spec.full_name]

    def failed_before(self, spec: TableSpec, partition: str | None) -> bool:
        return self._failed is None or (spec.db, spec.name, partition) in self._failed

    def snapshot(self, spec: TableSpec) -> tuple[ValidTxnList, ValidWriteIdList]:
        """The pass's transaction snapshot and the table's write ids in it."""
        if self._txns is None:
            self._txns = self._ms.valid_txns()
        if spec.full_name not in self._write_ids:
            self._write_ids[spec.full_name] = self._ms.valid_write_ids(
                None, spec.db, spec.name, valid_txns=self._txns
            )
        return self._txns, self._write_ids[spec.full_name]


def choose_compaction_type(
    base_size: int,
    delta_size: int,
    deltas: int,
    multi_base: bool = False,
    *,
    delta_pct_threshold: float = 0.1,
    delta_num_threshold: int = 10,
) -> tuple[str | None, str]:
    """Hive's ``determineCompactionType``: (``major``/``minor``/None, why).

    >>> choose_compaction_type(1000, 101, 1)
    ('major', 'delta/base size 101/1000 > hive.compactor.delta.pct.threshold 0.1')
    >>> choose_compaction_type(1000, 50, 11)[0], choose_compaction_type(0, 50, 11)[0]
    ('minor', 'major')
    """
    no_base = base_size == 0 and delta_size > 0
    if not no_base:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.float32(delta_size) / np.float32(base_size)
        if bool(ratio > np.float32(delta_pct_threshold)):
            return CompactionType.MAJOR.value, (
                f"delta/base size {delta_size}/{base_size} > "
                f"hive.compactor.delta.pct.threshold {delta_pct_threshold:g}"
            )
        if delta_size == 0 and multi_base:
            return CompactionType.MAJOR.value, "no deltas but more than one base"
    if deltas > delta_num_threshold:
        kind = CompactionType.MAJOR if no_base else CompactionType.MINOR
        return kind.value, (
            f"{deltas} deltas > hive.compactor.delta.num.threshold {delta_num_threshold}"
            + (" and no base" if no_base else "")
        )
    return None, (
        f"{deltas} deltas <= hive.compactor.delta.num.threshold {delta_num_threshold}, "
        f"delta/base size {delta_size}/{base_size} within "
        f"hive.compactor.delta.pct.threshold {delta_pct_threshold:g}"
    )


def _decision(
    activity: PartitionActivity, kind: CompactionType | str | None, reason: str
) -> InitiatorDecision:
    return InitiatorDecision(
        activity.db,
        activity.table,
        activity.partition,
        None if kind is None else CompactionType(kind).value,
        reason,
        aborted_txns=activity.aborted_txns,
    )


def _with(decision: InitiatorDecision, **changes: object) -> InitiatorDecision:
    return replace(decision, **changes)  # type: ignore[arg-type]
