"""The worker: claims queued compactions and runs them (Hive's ``Worker``, Hive 4 flow).

For one queue entry:

1. ``claim_compaction`` makes it ``working`` and opens the compactor's txn ``T`` (heartbeated
   while the worker runs).
2. The compactor's snapshot: ``valid_txns(T)`` and the table's write ids for it, turned into a
   :class:`~acid_platform.format.ValidCompactorWriteIdList` (it stops below the lowest open
   write id).
3. :func:`~.rewrite.plan_rewrite` selects the files and names the output; if there is not
   enough to compact (Hive's rule) nothing is written.
4. An executor writes ``delta_…_v<T>``/``delete_delta_…_v<T>`` or ``base_…_v<T>``: invisible
   to every reader while ``T`` is open. With ``acid.compactor.hive3.compatible`` it writes
   hidden ``_tmp_compactor_<T>_<name>`` directories instead, renamed to Hive 3's names
   (``base_N``, ``delta_x_y``) before the commit (:mod:`.staging` says why that is safe).
5. ``mark_compacted`` commits ``T`` (the output becomes visible atomically) and the entry is
   ready for cleaning. On any error: ``mark_failed`` (``T`` aborted, error text recorded) and
   the worker's own output is removed; input files are never touched.

A worker killed at any step leaves only a directory of an open (later aborted) txn; the entry
goes back to ``initiated`` through ``revoke_timed_out_workers``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass

import pyarrow.fs as pafs

from acid_platform.compaction.config import CompactorConf
from acid_platform.compaction.context import CompactionContext, default_worker_id
from acid_platform.compaction.executors import (
    CompactionExecutor,
    ExecutorLike,
    ExecutorRouter,
    as_executor,
)
from acid_platform.compaction.hooks import checkpoint
from acid_platform.compaction.rebalance import parse_order_by, rebalance
from acid_platform.compaction.rewrite import (
    RewritePlan,
    RewriteRequest,
    RewriteResult,
    describe,
    plan_rewrite,
    remove_output,
)
from acid_platform.compaction.staging import publish, require_rename
from acid_platform.errors import CompactionError, MetastoreError
from acid_platform.format import (
    AcidDir,
    RangeResponse,
    ValidCompactorWriteIdList,
    compression_of,
    parse_acid_dir_name,
)
from acid_platform.format.fs import basename, parent
from acid_platform.format.names import ParsedDelta, is_hidden
from acid_platform.metastore import (
    CompactionInfo,
    CompactionState,
    CompactionType,
    LockComponent,
    LockType,
    Metastore,
    TxnState,
)
from acid_platform.metastore.file_records import WrittenEntry
from acid_platform.table.schema import data_schema

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionOutcome:
    """What the worker did with one queue entry.

    ``state`` is ``ready for cleaning`` on success (also when there was not enough to compact:
    the cleaner still removes obsolete and aborted directories) or ``failed``.
    """

    id: int
    db: str
    table: str
    partition: str | None
    type: str
    state: CompactionState
    compactor_txn_id: int | None
    highest_write_id: int | None = None
    result: RewriteResult | None = None
    executor: str | None = None
    message: str = ""

    @property
    def succeeded(self) -> bool:
        return self.state != CompactionState.FAILED


class Worker:
    """Claims and runs compactions; ``executor`` runs the rewrite of a partition.

    ``executor`` may be an :class:`~.executors.ExecutorRouter` (embedded for small partitions,
    Spark for large ones), a single executor, or a function ``plan -> RewriteResult``.
    """

    def __init__(
        self,
        target: object,
        *,
        worker_id: str | None = None,
        executor: ExecutorRouter | ExecutorLike | None = None,
        conf: CompactorConf | None = None,
    ) -> None:
        self.ctx = CompactionContext.of(target, conf)  # type: ignore[arg-type]
        self.worker_id = worker_id or default_worker_id()
        if executor is None:
            self.router = ExecutorRouter(self.ctx.conf.large_partition_bytes)
        elif isinstance(executor, ExecutorRouter):
            self.router = executor
        else:
            single = as_executor(executor)
            self.router = ExecutorRouter(self.ctx.conf.large_partition_bytes, single)

    @property
    def metastore(self) -> Metastore:
        return self.ctx.metastore

    def run(self, max_entries: int | None = None) -> list[CompactionOutcome]:
        """Reap timed-out txns (a dead worker's entry goes back to the queue), revoke
        timed-out workers, then claim and run entries until the queue is empty."""
        self.metastore.reap_timed_out()
        self.metastore.revoke_timed_out_workers(self.ctx.conf.worker_timeout_s)
        done: list[CompactionOutcome] = []
        while max_entries is None or len(done) < max_entries:
            outcome = self.run_once()
            if outcome is None:
                break
            done.append(outcome)
        return done

    def run_once(self, cq_id: int | None = None) -> CompactionOutcome | None:
        """Claim the oldest initiated entry (or entry ``cq_id``) and run it; ``None`` if there
        is none (the queue is empty, or ``cq_id`` is no longer initiated: another worker has it
        or had it)."""
        info = self.metastore.claim_compaction(self.worker_id, cq_id=cq_id)
        if info is None:
            return None
        return self.compact(info)

    def compact(self, info: CompactionInfo) -> CompactionOutcome:
        """Run one claimed entry to ``ready for cleaning`` or ``failed``."""
        if info.txn_id is None or info.type is None:
            raise CompactionError(f"compaction {info.id} was not claimed (no compactor txn)")
        beat = _Heartbeat(self.metastore, info.txn_id)
        beat.start()
        plan: RewritePlan | None = None
        try:
            checkpoint("worker.claimed")
            if info.type is CompactionType.REBALANCE:
                self._lock_for_rebalance(info)
            plan = self._plan(info)
            checkpoint("worker.planned")
            highest = safe_highest_write_id(plan)
            result: RewriteResult | None = None
            executor: CompactionExecutor | None = None
            if plan.enough and info.type is CompactionType.REBALANCE:
                result = rebalance(plan, parse_order_by(info.order_by), info.number_of_buckets)
            elif plan.enough:
                executor = self.router.choose(plan.input_bytes)
                result = executor.execute(plan)
            if result is not None and plan.request.hive3_names:
                checkpoint("worker.staged")
                result = _publish(plan, result)
            if result is not None:
                _record_output(self.metastore, info, highest, result)
            checkpoint("worker.files_written")
            beat.stop()
            replaced = [basename(p) for p in plan.inputs] if result is not None else []
            self.metastore.mark_compacted(info.id, highest, replaced)
            checkpoint("worker.committed")
        except Exception as exc:  # noqa: BLE001 - every failure is recorded on the entry
            beat.stop()
            return self._fail(info, plan, exc)
        finally:
            beat.stop()
        message = describe(plan) if plan.enough else "not enough to compact; cleaning only"
        log.info("compaction %s of %s: %s", info.id, _where(info), message)
        return CompactionOutcome(
            info.id,
            info.db,
            info.table,
            info.partition,
            info.type.value,
            CompactionState.READY_FOR_CLEANING,
            info.txn_id,
            highest,
            result,
            None if executor is None else executor.name,
            message,
        )

    # ------------------------------------------------------------------ helpers
    def _plan(self, info: CompactionInfo) -> RewritePlan:
        ms = self.metastore
        assert info.txn_id is not None and info.type is not None
        spec = ms.get_table(info.db, info.table)
        if not spec.is_transactional:
            raise CompactionError(
                f"{spec.full_name} is a non-transactional table; only transactional tables are "
                "compacted"
            )
        if info.partition is not None and info.partition not in ms.list_partitions(
            spec.db, spec.name
        ):
            raise CompactionError(f"partition {info.partition} of {spec.full_name} does not exist")
        location = self.ctx.location(spec, info.partition)
        # WITH OVERWRITE TBLPROPERTIES: compactor.<key> / tblprops.<key>, this compaction only
        conf, properties = self.ctx.conf.for_compaction(spec.properties, info.properties)
        hive3 = conf.hive3_compatible_for(properties)
        if hive3:
            require_rename(location.filesystem, location.path)
        txns = ms.valid_txns(info.txn_id)
        reader = ms.valid_write_ids(info.txn_id, spec.db, spec.name, valid_txns=txns)
        if info.type is CompactionType.REBALANCE and reader.min_open_write_id is not None:
            # its base would stop below the open id, and a delete committed above it would
            # name a ROW__ID the rebalance renumbered: the deleted row would come back
            raise CompactionError(
                f"{spec.full_name}: a rebalance renumbers ROW__IDs and needs every write id of "
                f"the table decided; write id {reader.min_open_write_id} is still open "
                "(retry once its transaction ends)"
            )
        is_rebalance = info.type is CompactionType.REBALANCE
        request = RewriteRequest(
            kind="major" if is_rebalance else info.type.value,
            path=location.path,
            write_ids=ValidCompactorWriteIdList.from_reader(reader),
            valid_txns=txns,
            compactor_txn_id=info.txn_id,
            row_schema=data_schema(spec),
            compression=compression_of(properties),
            stripe_size=conf.stripe_size,
            filesystem=location.filesystem,
            record=ms.recorded_files(spec.db, spec.name).partition(info.partition or ""),
            insert_only=spec.is_insert_only,
            file_format=spec.file_format,
            properties=tuple(spec.properties.items()),
            hive3_names=hive3,
            rebalance=is_rebalance,
        )
        return plan_rewrite(request)

    def _lock_for_rebalance(self, info: CompactionInfo) -> None:
        """An ``EXCL_WRITE`` lock on the table or partition for the compactor's txn, before its
        snapshot: a rebalance renumbers ROW__IDs, so no writer may hold old ones (Hive's
        rebalance locks exclusively too). Released when the txn ends."""
        assert info.txn_id is not None
        component = LockComponent(LockType.EXCL_WRITE, info.db, info.table, info.partition)
        self.metastore.lock(info.txn_id, [component], wait_s=self.ctx.conf.wait_timeout_s)

    def _fail(
        self, info: CompactionInfo, plan: RewritePlan | None, exc: Exception
    ) -> CompactionOutcome:
        text = f"{type(exc).__name__}: {exc}"
        log.warning("compaction %s of %s failed: %s", info.id, _where(info), text)
        ms = self.metastore
        try:
            ms.mark_failed(info.id, text)
        except MetastoreError as again:  # revoked meanwhile: the entry is someone else's now
            text += f" (and could not be marked failed: {again})"
        assert info.txn_id is not None and info.type is not None
        if plan is not None and _txn_state(ms, info.txn_id) == TxnState.ABORTED:
            remove_output(plan)  # invisible for ever once T is aborted
        return CompactionOutcome(
            info.id,
            info.db,
            info.table,
            info.partition,
            info.type.value,
            CompactionState.FAILED,
            info.txn_id,
            message=text,
        )


def _publish(plan: RewritePlan, result: RewriteResult) -> RewriteResult:
    """Rename the staged output to its Hive 3 names (see :mod:`.staging`)."""
    finals, files = publish(plan.filesystem, result.output_dirs, result.files, checkpoint)
    return dataclasses.replace(result, output_dirs=finals, files=files)


def _record_output(
    ms: Metastore, info: CompactionInfo, highest: int, result: RewriteResult
) -> None:
    """Record the compaction's output as written by its txn (discarded if it aborts)."""
    assert info.txn_id is not None
    partition = info.partition or ""
    entries = [WrittenEntry(partition, basename(d)) for d in result.output_dirs]
    entries += [
        WrittenEntry(partition, basename(parent(f.path)), basename(f.path), f.size, f.rows)
        for f in result.files
    ]
    ms.record_written_files(info.txn_id, info.db, info.table, highest, entries)


def safe_highest_write_id(plan: RewritePlan) -> int:
    """The ``CQ_HIGHEST_WRITE_ID`` to record: the compactor's high watermark, lowered below any
    delta that stays in place and still holds (or may hold) aborted write ids.

    The cleaner forgets aborted write ids up to this id once it has removed the obsolete files;
    a delta left in place with an aborted id at or below it (a streaming delta reaching past the
    watermark, or a delta not compacted because there was not enough to compact) would then have
    its aborted rows come back. Hive passes such ids to ``markCleaned``; here the watermark stays
    below them instead.
    """
    ids = plan.request.write_ids
    highest = ids.high_watermark
    state = plan.state
    settled = set(plan.inputs) if plan.enough else set()
    settled |= {d.path for d in state.obsolete if isinstance(d, AcidDir)}
    settled |= {d.path for d in state.aborted}
    staying = [
        (path, parsed)
        for path, parsed in _delta_dirs(plan)
        if path not in settled and parsed.visibility_txn_id <= 0
    ]
    changed = True
    while changed:
        changed = False
        for _, d in staying:
            if d.min_write_id > highest:
                continue
            aborted = ids.is_write_id_range_aborted(d.min_write_id, min(d.max_write_id, highest))
            if d.max_write_id > highest or aborted is not RangeResponse.NONE:
                highest = d.min_write_id - 1
                changed = True
    return max(highest, 0)


def _delta_dirs(plan: RewritePlan) -> list[tuple[str, ParsedDelta]]:
    fs = plan.filesystem
    out = []
    selector = pafs.FileSelector(plan.request.path, allow_not_found=True)
    for entry in fs.get_file_info(selector):
        name = entry.base_name
        if entry.type != pafs.FileType.Directory or is_hidden(name):
            continue
        parsed = parse_acid_dir_name(name)
        if isinstance(parsed, ParsedDelta):
            out.append((entry.path, parsed))
    return out


class _Heartbeat:
    """Keeps the compactor's txn alive (every half ``hive.txn.timeout``) while the worker runs."""

    def __init__(self, metastore: Metastore, txn_id: int) -> None:
        self._ms = metastore
        self._txn_id = txn_id
        self._interval = max(metastore.txn_timeout_s / 2, 0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"compactor-hb-{txn_id}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._ms.heartbeat(txn_id=self._txn_id)
            except Exception as exc:  # noqa: BLE001 - the commit will fail and say why
                log.warning("heartbeat of compactor txn %s failed: %s", self._txn_id, exc)
                return


def _txn_state(ms: Metastore, txn_id: int) -> TxnState | None:
    try:
        return ms.get_txn_state(txn_id)
    except MetastoreError:
        return None


def _where(info: CompactionInfo) -> str:
    return f"{info.db}.{info.table}" + (f"/{info.partition}" if info.partition else "")
