"""A transaction batch: Hive's ``TransactionBatch`` of Streaming Ingest V2.

:meth:`TransactionBatch.open` opens ``n`` transactions at once, allocates their ``n`` consecutive
write ids on the table, records their write components (the static partition, or the table) in
one metastore write, and requests the first transaction's lock. Every partition the batch writes
gets one ``delta_<min>_<max>`` (:class:`~.delta_files.DeltaFiles`) for all ``n`` transactions.

Per transaction: :meth:`~TransactionBatch.begin` waits for its lock; :meth:`~TransactionBatch.commit`
makes its rows readable in every file (a tail and a flush length each) and then commits it in
the metastore, requesting the next transaction's lock in the same metastore write;
:meth:`~TransactionBatch.abort` drops its rows and aborts it. A background heartbeat keeps the
batch's open transactions alive (``heartbeatTxnRange``, every half ``hive.txn.timeout``).
:meth:`~TransactionBatch.close` aborts what is still open or unused and ends the files (their
side files deleted). A batch of one transaction writes ``delta_w_w`` without side files: its
files are ended before it commits.

An object store has no append, and an object is readable only once its upload completes: there
every transaction of a batch writes its own ``delta_w_w`` (write ids still allocated for the
whole batch), its files ended before it commits, with no side files. Hive and Trino read those
as any delta; compaction merges them as it merges any run of deltas.

Each commit records in the metastore, with its transaction, the files it wrote into: with their
committed length in a shared delta (a *growing* directory: a file must be at least that long),
their whole size in a ``delta_w_w`` (:mod:`acid_platform.format.file_record`). Readers, the
compactor, the cleaner and ``acid fsck`` then find a deleted or truncated streamed file as
they find any other (a typed error naming it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from acid_platform.errors import StreamingError
from acid_platform.format.fs import is_object_store
from acid_platform.metastore.model import LockComponent, LockState, TableSpec
from acid_platform.streaming.delta_files import DeltaFiles
from acid_platform.table.event_layout import EventLayout
from acid_platform.table.partitions import partition_path
from acid_platform.table.statement import StatementMetrics, register_partitions
from acid_platform.table.transaction import Heartbeat, abort_quietly
from acid_platform.table.warehouse import TableWarehouse

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchTarget:
    """What every batch of one connection writes to, and how."""

    warehouse: TableWarehouse
    spec: TableSpec
    table_path: str
    layout: EventLayout
    #: The static partition's name (``""`` for an unpartitioned table; ``None``: dynamic).
    static_partition: str | None
    lock: tuple[LockComponent, ...]
    agent_info: str
    lock_wait_s: float
    heartbeat_s: float


class TransactionBatch:
    """``n`` transactions sharing one delta per partition (see module docs)."""

    def __init__(self, target: BatchTarget, txn_ids: Sequence[int], write_ids: Sequence[int]):
        self.target = target
        self.txn_ids = list(txn_ids)
        self.write_ids = list(write_ids)
        self.min_write_id, self.max_write_id = min(write_ids), max(write_ids)
        #: On an object store (no append) each transaction writes its own ``delta_w_w``.
        self.per_transaction = is_object_store(target.layout.filesystem)
        self.side_files = self.min_write_id != self.max_write_id and not self.per_transaction
        self.index = -1  # the current (or last) transaction
        self.states = ["pending"] * len(self.txn_ids)
        self.deltas: dict[str, DeltaFiles] = {}
        self._lock_ids: dict[int, tuple[int, LockState]] = {}
        self._recorded: set[str] = set()
        self.timed_out: set[int] = set()
        self._mutex = threading.Lock()
        self._beat = Heartbeat(self._heartbeat, target.heartbeat_s)
        self._beat.start()

    @classmethod
    def open(cls, target: BatchTarget, size: int) -> TransactionBatch:
        """Open ``size`` transactions with consecutive write ids and request the first lock."""
        ms = target.warehouse.metastore
        spec = target.spec
        txn_ids = ms.open_txns(size, agent_info=target.agent_info[:128])
        try:
            write_ids = ms.allocate_write_ids(txn_ids, spec.db, spec.name)
            batch = cls(target, txn_ids, write_ids)
        except BaseException:
            ms.abort_txns(txn_ids)
            raise
        try:
            if target.static_partition is not None:
                batch.record_partition(target.static_partition)
            batch.request_lock(0)
        except BaseException:
            batch.close()
            raise
        return batch

    # ------------------------------------------------------------------ state
    @property
    def remaining(self) -> int:
        """Transactions not begun yet."""
        return len(self.txn_ids) - 1 - self.index

    @property
    def txn_id(self) -> int:
        return self.txn_ids[self.index]

    @property
    def write_id(self) -> int:
        return self.write_ids[self.index]

    @property
    def is_open(self) -> bool:
        """Whether the current transaction is begun and not yet ended."""
        return self.index >= 0 and self.states[self.index] == "open"

    # ------------------------------------------------------------------ transactions
    def request_lock(self, index: int) -> None:
        """Request (without waiting) the lock of transaction ``index``; :meth:`begin` waits."""
        t = self.target
        response = t.warehouse.metastore.lock(
            self.txn_ids[index], list(t.lock), agent_info=t.agent_info
        )
        self._lock_ids[index] = (response.lock_id, response.state)

    def begin(self) -> None:
        """Begin the next transaction: wait for its lock."""
        if self.remaining <= 0:
            raise StreamingError("the transaction batch has no transaction left")
        self.index += 1
        ms = self.target.warehouse.metastore
        txn = self.txn_id
        if txn in self.timed_out:
            raise StreamingError(f"txn {txn} was aborted (heartbeat found it timed out)")
        if self.index not in self._lock_ids:  # the previous transaction aborted
            self.request_lock(self.index)
        lock_id, state = self._lock_ids[self.index]
        if state != LockState.ACQUIRED:
            ms.wait_for_lock(lock_id, self.target.lock_wait_s)
        self.states[self.index] = "open"

    def record_partition(self, name: str) -> None:
        """Make sure ``name`` (``""``: the table) is in the catalog and recorded as written by
        the current and every later transaction (once per batch and partition)."""
        if name in self._recorded:
            return
        t = self.target
        if name:
            register_partitions(t.warehouse, t.spec, [name])
        later = self.txn_ids[max(self.index, 0) :]
        t.warehouse.metastore.record_batch_writes(later, t.spec.db, t.spec.name, [name or None])
        self._recorded.add(name)

    def write(self, partition: str, rows: pa.Table) -> None:
        """Buffer ``rows`` (data columns) of the current transaction into ``partition``."""
        delta = self.deltas.get(partition)
        if delta is None:
            self.record_partition(partition)
            t = self.target
            low, high = (
                (self.write_id, self.write_id)
                if self.per_transaction
                else (self.min_write_id, self.max_write_id)
            )
            directory = t.layout.batch_dir(partition_path(t.table_path, partition), low, high)
            delta = self.deltas[partition] = DeltaFiles(
                t.spec, t.layout, directory, self.side_files
            )
        delta.write(rows, self.write_id)

    @property
    def pending_bytes(self) -> int:
        return sum(d.pending_bytes for d in self.deltas.values())

    def flush(self) -> None:
        """Append every buffered row's stripes (memory pressure)."""
        for d in self.deltas.values():
            d.flush()

    def commit(self) -> StatementMetrics:
        """Make the transaction's rows readable, then commit it (and request the next lock)."""
        started = time.perf_counter()
        ms = self.target.warehouse.metastore
        spec = self.target.spec
        rows = sum(d.txn_rows for d in self.deltas.values())
        touched: list[str] = []
        written = []
        for partition, d in self.deltas.items():
            mine = d.commit()
            if not self.side_files:  # no flush length: whole files before the commit
                d.close()
            touched += mine
            if mine:
                written += d.written_entries(partition, mine)
        nxt = self.index + 1 if self.index + 1 < len(self.txn_ids) else None
        try:
            # what this commit made readable, with its committed lengths (see file_record)
            ms.record_written_files(self.txn_id, spec.db, spec.name, self.write_id, written)
            response = ms.commit_and_lock(
                self.txn_id,
                db=spec.db,
                table=spec.name,
                next_txn_id=None if nxt is None else self.txn_ids[nxt],
                lock=self.target.lock,
                agent_info=self.target.agent_info,
            )
        except BaseException:
            self.states[self.index] = "aborted"
            abort_quietly(ms, self.txn_id)  # (a no-op if the commit already aborted it)
            raise
        self.states[self.index] = "committed"
        if response is not None and nxt is not None:
            self._lock_ids[nxt] = (response.lock_id, response.state)
        deltas = list(self.deltas.values())
        if self.per_transaction:
            self.deltas = {}
        return StatementMetrics(
            table=spec.full_name,
            txn_id=self.txn_id,
            write_id=self.write_id,
            statement_ids=(),
            rows_inserted=rows,
            dirs_written=tuple(sorted(d.directory for d in deltas if d.files)),
            files_written=len(set(touched)),
            bytes_written=sum(d.bytes_written() for d in deltas),
            duration_s=time.perf_counter() - started,
        )

    def abort(self) -> None:
        """Drop the transaction's rows and abort it."""
        for d in self.deltas.values():
            d.abort()
            if self.per_transaction:  # its own delta: end the files (the write id is aborted)
                d.close()
        if self.per_transaction:
            self.deltas = {}
        self.states[self.index] = "aborted"
        self.target.warehouse.metastore.abort_txn(self.txn_id)

    def close(self) -> None:
        """Abort the open and unused transactions, end the files (side files deleted)."""
        self._beat.stop()
        left = [
            t for t, s in zip(self.txn_ids, self.states, strict=True) if s in ("pending", "open")
        ]
        for d in self.deltas.values():
            d.abort()
        if left:
            try:
                self.target.warehouse.metastore.abort_txns(left)
            except Exception as exc:  # noqa: BLE001 - the time-out reaper finishes the abort
                log.warning("could not abort txns %s: %s", left, exc)
                for txn in left:
                    abort_quietly(self.target.warehouse.metastore, txn)
        for i, s in enumerate(self.states):
            if s in ("pending", "open"):
                self.states[i] = "aborted"
        for d in self.deltas.values():
            d.close()

    # ------------------------------------------------------------------ heartbeat
    def _heartbeat(self) -> None:
        open_ids = [
            t for t, s in zip(self.txn_ids, self.states, strict=True) if s in ("pending", "open")
        ]
        if not open_ids:
            return
        aborted, missing = self.target.warehouse.metastore.heartbeat_txn_range(
            min(open_ids), max(open_ids)
        )
        lost = (set(aborted) | set(missing)) & set(open_ids)
        if lost:
            log.warning("streaming batch: txns %s were aborted by the metastore", sorted(lost))
            self.timed_out |= lost
