"""Entry points for the warehouse, SQL and the CLI: compact, initiate, work, clean, show.

Each takes a :class:`~acid_platform.table.TableWarehouse` or a :class:`~acid_platform.metastore.Metastore`.

>>> # compact_table(wh, "db.t", partition="ds=2024-01-01", kind="minor")   # ALTER TABLE … COMPACT … AND WAIT
>>> # run_initiator(wh); run_worker(wh); run_cleaner(wh)                    # one pass of each service
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acid_platform.compaction.cleaner import Cleaner, CleanerReport
from acid_platform.compaction.config import CompactorConf
from acid_platform.compaction.context import CompactionContext
from acid_platform.compaction.executors import ExecutorLike, ExecutorRouter
from acid_platform.compaction.initiator import Initiator, InitiatorDecision
from acid_platform.compaction.worker import CompactionOutcome, Worker
from acid_platform.errors import (
    CompactionError,
    CompactionTimeoutError,
    InvalidPartitionError,
    SemanticError,
    UnsupportedOperationError,
)
from acid_platform.metastore import CompactionInfo, CompactionState, CompactionType, TableSpec
from acid_platform.metastore.names import split_table_name
from acid_platform.table.partitions import make_partition_name

_ACTIVE = (CompactionState.INITIATED, CompactionState.WORKING)
_POLL_S = 0.05


def compact_table(
    target: Any,
    name: str,
    partition: str | Mapping[str, Any] | None = None,
    kind: str = "major",
    wait: bool = True,
    *,
    conf: CompactorConf | None = None,
    executor: ExecutorRouter | ExecutorLike | None = None,
    timeout_s: float | None = None,
    pool: str | None = None,
    properties: Mapping[str, str] | None = None,
    enqueued: Callable[[int, bool], None] | None = None,
    order_by: Sequence[tuple[str, bool]] = (),
    number_of_buckets: int | None = None,
) -> list[CompactionInfo]:
    """``ALTER TABLE name [PARTITION (...)] COMPACT 'kind' [AND WAIT] [POOL 'pool']``.

    Queues a compaction of the table (or of one partition; of every partition of a partitioned
    table when none is named). An entry already initiated or working for the same partition is
    reused. With ``wait`` the compaction runs in this process (this process acts as a worker
    until the entries are done) and a failure raises :class:`~acid_platform.errors.CompactionError`
    with the recorded message. The wait lasts at most ``timeout_s`` (default the settings'
    ``hive.compactor.wait.timeout``, 300 s), then :class:`~acid_platform.errors.CompactionTimeoutError`
    names the state of each entry it gave up on; ``properties`` (``WITH OVERWRITE
    TBLPROPERTIES``) are stored with each entry and override, for that compaction only, a
    compactor setting (``compactor.<key>``) or a table property (``tblprops.<key>``); entries held by a dead worker go back to the
    queue once its txn times out (``hive.txn.timeout``) and are run here. Returns the entries as they stand (``ready for cleaning`` after a
    successful wait; the cleaner finishes them). ``enqueued`` is told each entry's id and
    whether it is new (``False``: one already initiated or working is reused), before any wait.
    """
    ctx = CompactionContext.of(target, conf)
    ms = ctx.metastore
    choose = getattr(target, "compaction_executor", None)
    if executor is None and choose is not None:
        # a warehouse with Spark registered routes large partitions there (TableWarehouse)
        executor = choose(target.conf)
    spec = ms.get_table(*split_table_name(name))
    if not spec.is_transactional:  # Hive's NONACID_COMPACTION_NOT_SUPPORTED; nothing queued
        raise UnsupportedOperationError(
            f"Compaction is not allowed on non-ACID table {spec.db}.{spec.name}"
        )
    kinds = [t.value for t in CompactionType]
    if kind.lower() not in kinds:
        raise SemanticError(
            f"compaction of {spec.full_name}: type {kind!r} is not one of {', '.join(kinds)}"
        )
    compaction_type = CompactionType(kind.lower())
    order_text = check_rebalance(spec, compaction_type, order_by, number_of_buckets)
    ms.reap_timed_out()  # a dead client's open txn would stop the compaction at its write id
    ids = []
    for part in _partitions(ms, spec, partition):
        cq_id = ms.enqueue_compaction(
            spec.db,
            spec.name,
            part,
            compaction_type,
            pool_name=pool,
            properties=properties,
            order_by=order_text,
            number_of_buckets=number_of_buckets,
        )
        ids.append(cq_id if cq_id is not None else _active_entry(ctx, spec, part))
        if enqueued is not None:
            enqueued(ids[-1], cq_id is not None)
    if not wait:
        return [ms.get_compaction(i) for i in ids]
    worker = Worker(ctx, executor=executor)
    limit = ctx.conf.wait_timeout_s if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    next_reap = 0.0
    while True:
        infos = [ms.get_compaction(i) for i in ids]
        pending = [i for i in infos if i.state in _ACTIVE]
        if not pending:
            break
        if time.monotonic() > deadline:
            raise CompactionTimeoutError(
                f"gave up waiting for the compaction of {spec.full_name} after {limit:g}s "
                f"(hive.compactor.wait.timeout): {'; '.join(_queue_state(i) for i in pending)}. "
                "The entries stay queued; see SHOW COMPACTIONS"
            )
        if any(i.state == CompactionState.INITIATED for i in pending):
            if worker.run_once() is None:  # another worker is claiming it right now
                time.sleep(_POLL_S)
            continue
        if time.monotonic() >= next_reap:
            # Another worker has them: if it died, its txn times out and the reaper puts the
            # entry back to initiated, for this process to take.
            ms.reap_timed_out()
            next_reap = time.monotonic() + min(1.0, ms.txn_timeout_s / 4)
        time.sleep(_POLL_S)
    failed = [i for i in infos if i.state == CompactionState.FAILED]
    if failed:
        first = failed[0]
        where = spec.full_name + (f" partition {first.partition}" if first.partition else "")
        raise CompactionError(f"compaction {first.id} of {where} failed: {first.error_message}")
    return infos


def run_initiator(target: Any, conf: CompactorConf | None = None) -> list[InitiatorDecision]:
    """One initiator pass (queues what the thresholds ask for)."""
    return Initiator(target, conf).run()


def run_worker(
    target: Any,
    *,
    max_entries: int | None = None,
    executor: ExecutorRouter | ExecutorLike | None = None,
    conf: CompactorConf | None = None,
    worker_id: str | None = None,
) -> list[CompactionOutcome]:
    """Run queued compactions until the queue is empty (or ``max_entries`` ran)."""
    return Worker(target, executor=executor, conf=conf, worker_id=worker_id).run(max_entries)


def run_cleaner(
    target: Any, conf: CompactorConf | None = None, *, sweep_aborted: bool = True
) -> CleanerReport:
    """One cleaner pass: clean every ready entry, then sweep aborted directories."""
    return Cleaner(target, conf).run(sweep_aborted=sweep_aborted)


def show_compactions(target: Any) -> list[dict[str, Any]]:
    """SHOW COMPACTIONS rows (queue, then history)."""
    return CompactionContext.of(target).metastore.show_compactions()


# --------------------------------------------------------------------------- helpers


def check_rebalance(
    spec: TableSpec,
    kind: CompactionType,
    order_by: Sequence[tuple[str, bool]],
    number_of_buckets: int | None,
) -> str | None:
    """Refuse what Hive refuses for ``'rebalance'`` (Hive's messages); the ``ORDER BY`` text
    stored with the entry (``k DESC,v ASC``), or ``None``."""
    if kind is not CompactionType.REBALANCE:
        if order_by or number_of_buckets is not None:
            raise SemanticError(
                "CLUSTERED INTO n BUCKETS and ORDER BY can only be used with 'rebalance' compaction"
            )
        return None
    if not spec.is_transactional or spec.is_insert_only:
        raise UnsupportedOperationError(
            f"{spec.full_name}: Rebalance compaction can only be supported on full ACID tables."
        )
    if spec.bucket_columns:
        raise UnsupportedOperationError(
            f"{spec.full_name}: Rebalance compaction is supported only on implicitly-bucketed "
            "tables!"
        )
    if number_of_buckets is not None and number_of_buckets <= 0:
        raise SemanticError(f"{spec.full_name}: CLUSTERED INTO {number_of_buckets} BUCKETS")
    columns = {c.lower() for c, _ in spec.columns}
    unknown = [c for c, _ in order_by if c.lower() not in columns]
    if unknown:
        raise SemanticError(f"{spec.full_name}: ORDER BY {unknown[0]}: no such data column")
    if not order_by:
        return None
    return ",".join(f"{c.lower()} {'DESC' if d else 'ASC'}" for c, d in order_by)


def _partitions(
    ms: Any, spec: TableSpec, partition: str | Mapping[str, Any] | None
) -> list[str | None]:
    if not spec.is_partitioned:
        if partition:  # Hive's ValidationFailureSemanticException, with Java's Map text
            given = (
                "{" + ", ".join(f"{k}={v}" for k, v in partition.items()) + "}"
                if isinstance(partition, Mapping)
                else f"{{{partition}}}"
            )
            raise InvalidPartitionError(
                f"table is not partitioned but partition spec exists: {given} ({spec.full_name})"
            )
        return [None]
    if partition is None:
        names: list[str | None] = list(ms.list_partitions(spec.db, spec.name))
        return names
    if isinstance(partition, Mapping):
        values = {k.lower(): v for k, v in partition.items()}
        missing = [c for c in spec.partition_column_names if c not in values]
        if missing:
            raise InvalidPartitionError(
                f"table {spec.full_name}: partition spec {dict(partition)} lacks {missing}"
            )
        partition = make_partition_name(
            spec.partition_column_names, [values[c] for c in spec.partition_column_names]
        )
    if partition not in ms.list_partitions(spec.db, spec.name):
        raise InvalidPartitionError(f"table {spec.full_name} has no partition {partition}")
    return [partition]


def _queue_state(info: CompactionInfo) -> str:
    where = f" partition {info.partition}" if info.partition else ""
    held = (
        f" by worker {info.worker_id} (compactor txn {info.txn_id})"
        if info.state == CompactionState.WORKING
        else ""
    )
    return f"compaction {info.id}{where} is {info.state.value}{held}"


def _active_entry(ctx: CompactionContext, spec: TableSpec, partition: str | None) -> int:
    for row in ctx.metastore.show_compactions():
        if (
            row["Database"] == spec.db
            and row["Table"] == spec.name
            and row["Partition"] == partition
            and row["State"] in (s.value for s in _ACTIVE)
        ):
            return int(row["CompactionId"])
    raise CompactionError(  # pragma: no cover - enqueue said one exists
        f"no active compaction of {spec.full_name} found after a duplicate enqueue"
    )
