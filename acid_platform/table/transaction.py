"""The transaction lifecycle: open -> lock -> allocate write id -> write files -> commit / rollback.

A :class:`Transaction` is one metastore transaction. Single statements run in their own
("autocommit") transaction; ``wh.transaction()`` opens one that several statements share, as
Hive's ``START TRANSACTION … COMMIT``. What the statements do in it (locks, statement and write
ids, the files they record) is kept by its :class:`TransactionLedger`, which only the statement
lifecycle (:mod:`.statement`) and the table layer reach (:func:`ledger_of`). Within a transaction each table gets
one write id, allocated on its first write, and statement ids 0, 1, 2… in order, so every
statement writes its own ``delta_w_w_s`` / ``delete_delta_w_w_s`` directories.

The snapshot (a ``ValidTxnList``) is taken when the transaction opens — for an autocommit
statement, once the locks it opened with are granted, as Hive's driver takes it; each table's
``ValidWriteIdList`` is derived from it on first use and refreshed once the transaction's own
write id exists, so statements see the rows and deletes of the transaction's earlier statements
(own write id valid; statement ids keep their ROW__IDs apart) and nothing committed later.

Locks follow Hive 4 (``AcidUtils.makeLockComponents``): INSERT takes SHARED_READ, UPDATE /
DELETE / MERGE take EXCL_WRITE (SHARED_WRITE when ``hive.txn.xlock.write=false``), INSERT
OVERWRITE takes EXCLUSIVE. Taking the snapshot after the locks means the writer an UPDATE waited
for is one it reads, so the commit's write-set check (which ignores writers the snapshot sees)
passes and concurrent updaters of one table queue instead of failing. Should a write still commit
between the snapshot and the statement's check (a writer under a compatible lock), an autocommit
statement holding an exclusive write lock is re-run in a fresh transaction after a short, jittered
back-off (:class:`OutdatedSnapshot` once the retries run out).

A multi-statement transaction on a warehouse with a native engine that plans statements in
other processes (Spark SQL's DML, planned and committed in Spark's Python workers) is *shared*
(:meth:`TransactionLedger.share`): the engine's statements name it by id
(:class:`SharedTransaction`) and join it (:func:`~.statement.begin_detached` with ``shared``).
Its statement ids then come from one counter in the metastore, per transaction across its
tables as Hive's ``DbTxnManager`` numbers them, so statements of both processes never reuse
one; and its reads reload the table's write ids and file record, which the other process's
statements may have changed.

A heartbeat thread keeps the transaction alive (every ``txn_timeout_s / 2``). Any failure aborts
the transaction: the files already written stay invisible and the cleaner removes them.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from acid_platform.errors import (
    LockTimeoutError,
    RetryableError,
    TransactionStateError,
    TxnAbortedError,
    UnsupportedOperationError,
)
from acid_platform.format import Snapshot, ValidTxnList, ValidWriteIdList
from acid_platform.format.file_record import TableRecord
from acid_platform.metastore.file_records import TableWrite
from acid_platform.metastore.model import (
    LockComponent,
    LockResponse,
    LockType,
    OperationType,
    Source,
    TableSpec,
)
from acid_platform.table.deprecation import deprecated
from acid_platform.table.writes import WriteMetrics
from acid_platform.table.written_files import written_entries

if TYPE_CHECKING:
    from acid_platform.metastore import Metastore
    from acid_platform.table.partition_cache import KnownPartitions

log = logging.getLogger(__name__)


class TransactionHost(Protocol):
    """What a transaction needs of the warehouse session it runs in (a ``TableWarehouse``
    is one): declared here, so this module does not import the warehouse, which imports it."""

    @property
    def metastore(self) -> Metastore: ...

    @property
    def conf(self) -> Mapping[str, str]: ...

    @property
    def known_partitions(self) -> KnownPartitions: ...

    def end_transaction(self, txn: Transaction) -> None: ...


class OutdatedSnapshot(TransactionStateError, RetryableError):
    """An autocommit statement's snapshot went stale while it waited for its lock; it is re-run
    in a new transaction (and surfaces only when the retries run out). The message says what
    conflicted, with whom, and that a retry may succeed, as :class:`WriteConflictError` does."""


@dataclass(frozen=True)
class SharedTransaction:
    """A multi-statement transaction as other processes join it (see module docs): its id and
    its snapshot of transactions, as one string a Spark session carries
    (:meth:`to_text` / :meth:`from_text`)."""

    txn_id: int
    valid_txns: str

    def to_text(self) -> str:
        return json.dumps({"txn_id": self.txn_id, "valid_txns": self.valid_txns})

    @classmethod
    def from_text(cls, text: str) -> SharedTransaction:
        value = json.loads(text)
        return cls(int(value["txn_id"]), str(value["valid_txns"]))


@dataclass
class _TableState:
    write_ids: ValidWriteIdList
    write_id: int | None = None
    next_statement: int = 0
    #: statements of this process that wrote the table
    statements: int = 0
    overwritten: bool = False
    #: The table's file record as this transaction sees it (reloaded after it records).
    files: TableRecord | None = None


class Transaction:
    """One metastore transaction, shared by the statements that run in it.

    Use it as a context manager (commit on success, roll back on an exception)::

        with wh.transaction():
            wh.table("t").delete("id = 1")
            wh.table("t").insert([{"id": 1, "v": "new"}])

    What a user does with it: :attr:`id`, :meth:`snapshot`, :meth:`commit`, :meth:`rollback`,
    :attr:`is_open` (and :attr:`state`), the context manager. The word for undoing it is
    **rollback**, as Hive and SQL say it (``ROLLBACK``; ``wh.rollback()``); ``abort()`` is a
    deprecated alias (the metastore below keeps Hive's internal word: ``abort_txn``, an aborted
    transaction). What its statements do on the way — locks, the snapshot check, statement and
    write ids, the files and sources they record, the partitions they register — is kept by its
    :class:`TransactionLedger` (:func:`ledger_of`), the statement lifecycle's business.
    """

    def __init__(
        self,
        warehouse: TransactionHost,
        *,
        explicit: bool = False,
        locks: Sequence[LockComponent] = (),
    ) -> None:
        """Open it; with ``locks``, holding them (requested with the open, waited for as
        :meth:`TransactionLedger.lock` waits): the ledger's first lock of exactly these asks
        nothing more."""
        self._warehouse = warehouse
        ms = warehouse.metastore
        agent = f"acid_platform {'multi' if explicit else 'auto'}-statement"
        request: LockResponse | None = None
        if locks:
            txn_id, request = ms.open_txn_and_lock(locks, agent_info=agent)
        else:
            txn_id = ms.open_txn(agent_info=agent)
        self._ledger = TransactionLedger(warehouse, txn_id, explicit=explicit, locks=locks)
        _LEDGERS[self] = self._ledger
        self._heartbeat = Heartbeat(
            lambda: ms.heartbeat(txn_id=txn_id), ms.txn_timeout_s / 2, self._on_heartbeat_error
        )
        self._heartbeat.start()
        try:
            if request is not None and not request.acquired:
                ms.wait_for_lock(request.lock_id, lock_wait_s(warehouse.conf))
            # the snapshot once the locks are granted (Hive's driver): every writer this one
            # waited for has committed and is read, a younger txn included; the commit's
            # write-set check passes it. A multi-statement txn's is taken at its open.
            self._ledger.valid_txns = ms.valid_txns(txn_id, latest=request is not None)
        except BaseException:
            self._heartbeat.stop()
            self._ledger.abort()
            raise

    @property
    def id(self) -> int:
        """The metastore's transaction id (``SHOW TRANSACTIONS``, ``ABORT TRANSACTIONS``)."""
        return self._ledger.txn_id

    @property
    def txn_id(self) -> int:
        """Deprecated alias of :attr:`id` (removed in the next release)."""
        deprecated("Transaction.txn_id", "Transaction.id")
        return self._ledger.txn_id

    @property
    def state(self) -> str:
        """``open``, ``committed`` or ``aborted`` (rolled back, or failed)."""
        return self._ledger.state

    @property
    def is_open(self) -> bool:
        """Whether statements can still run in it."""
        return self._ledger.state == "open"

    def snapshot(self, spec: TableSpec) -> Snapshot:
        """What this transaction's statements read ``spec`` with."""
        return self._ledger.snapshot(spec)

    # ------------------------------------------------------------------ end
    def commit(self) -> None:
        """Commit (first committer wins: a write conflict rolls back and raises
        :class:`~acid_platform.errors.WriteConflictError`)."""
        self._ledger.check_open()
        self._heartbeat.stop()
        self._ledger.commit()

    def rollback(self) -> None:
        """Roll back: everything written stays invisible (idempotent)."""
        if self._ledger.state == "committed":
            raise TransactionStateError(f"transaction {self.id} is already committed")
        self._heartbeat.stop()
        self._ledger.abort()

    def abort(self) -> None:
        """Deprecated alias of :meth:`rollback` (removed in the next release)."""
        deprecated("Transaction.abort()", "Transaction.rollback()")
        self.rollback()

    def _on_heartbeat_error(self, exc: BaseException) -> None:
        if isinstance(exc, TxnAbortedError):
            self._ledger.state = "aborted"

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None and self.is_open:
                self.commit()
            elif self.is_open:
                self.rollback()
            elif exc_type is None and self.state == "aborted":
                raise TxnAbortedError(f"transaction {self.id} was aborted; nothing was committed")
        finally:
            self._warehouse.end_transaction(self)

    def __repr__(self) -> str:
        return f"Transaction(id={self.id}, state={self.state!r}, explicit={self._ledger.explicit})"


def ledger_of(txn: Transaction) -> TransactionLedger:
    """The ledger of ``txn``: what the statement lifecycle (:mod:`.statement`) and the table
    layer's catalog operations record and check in it. Not for users of the table API."""
    return _LEDGERS[txn]


#: Each open transaction's ledger (kept off the user's object; gone with the transaction).
_LEDGERS: weakref.WeakKeyDictionary[Transaction, TransactionLedger] = weakref.WeakKeyDictionary()


class TransactionLedger:
    """What the statements of one transaction lock, check, reserve and record (the plumbing
    behind a :class:`Transaction`; see :func:`ledger_of`).

    Within a transaction each table gets one write id, on its first write, and statement ids
    0, 1, 2… in order. What its statements wrote is recorded with the commit (one durable
    metastore commit fewer per write), or first if a statement reads the table back; the
    partitions they registered are unregistered if it rolls back.
    """

    #: The snapshot of transactions (set by :class:`Transaction` once its locks are granted).
    valid_txns: ValidTxnList

    def __init__(
        self,
        warehouse: TransactionHost,
        txn_id: int,
        *,
        explicit: bool = False,
        locks: Sequence[LockComponent] = (),
    ) -> None:
        self.warehouse = warehouse
        self.txn_id = txn_id
        #: A multi-statement transaction (``wh.transaction()``), not an autocommit statement's.
        self.explicit = explicit
        #: Shared with statements of other processes (:meth:`share`).
        self.shared = False
        #: ``open``, ``committed`` or ``aborted``.
        self.state = "open"
        self._held_at_open: tuple[LockComponent, ...] | None = tuple(locks) or None
        self._tables: dict[str, _TableState] = {}
        #: Partitions this transaction registered, per table: unregistered if it aborts.
        self._new_partitions: dict[str, tuple[TableSpec, list[str]]] = {}
        #: What its statements wrote, not yet recorded: recorded with the commit (one durable
        #: metastore commit fewer per write), or first if a statement reads it back.
        self._unrecorded: list[TableWrite] = []

    def check_open(self) -> None:
        """Raise unless the transaction can still run statements."""
        if self.state == "aborted":
            raise TxnAbortedError(
                f"transaction {self.txn_id} was aborted (a statement failed or it timed out); roll it back"
            )
        if self.state != "open":
            raise TransactionStateError(f"transaction {self.txn_id} is {self.state}")

    # ------------------------------------------------------------------ snapshot
    def snapshot(self, spec: TableSpec) -> Snapshot:
        """What the transaction's statements read ``spec`` with (shared: reloaded, as the
        other process's statements may have written the table)."""
        state = self._table(spec)
        if self.shared:
            state.files = None
            if state.write_id is None:
                state.write_ids = self.warehouse.metastore.valid_write_ids(
                    self.txn_id, spec.db, spec.name, valid_txns=self.valid_txns
                )
        if state.files is None:
            self._record_unrecorded()
            state.files = self.warehouse.metastore.recorded_files(spec.db, spec.name)
        return Snapshot(self.valid_txns, state.write_ids, state.files)

    def write_ids(self, spec: TableSpec) -> ValidWriteIdList:
        """The table's ValidWriteIdList for this transaction (its own writes valid)."""
        return self._table(spec).write_ids

    def _table(self, spec: TableSpec) -> _TableState:
        state = self._tables.get(spec.full_name)
        if state is None:
            ids = self.warehouse.metastore.valid_write_ids(
                self.txn_id, spec.db, spec.name, valid_txns=self.valid_txns
            )
            state = self._tables[spec.full_name] = _TableState(ids)
        return state

    # ------------------------------------------------------------------ locks
    def lock(self, components: Sequence[LockComponent]) -> None:
        """Acquire locks for a statement (held until commit/rollback); waits up to the
        configured time, then raises :class:`~acid_platform.errors.LockTimeoutError`."""
        self.check_open()
        if self._held_at_open is not None and self._held_at_open == tuple(components):
            self._held_at_open = None  # taken with the open
            return
        response = self.warehouse.metastore.lock(
            self.txn_id, list(components), wait_s=lock_wait_s(self.warehouse.conf)
        )
        if not response.acquired:  # pragma: no cover - the metastore raises on time-out
            raise LockTimeoutError(f"lock {response.lock_id} of txn {self.txn_id} was not acquired")

    def check_outdated(self, spec: TableSpec) -> None:
        """Raise :class:`OutdatedSnapshot` if a write to ``spec`` committed after this
        transaction's snapshot (Hive 4 ``isValidTxnListState``); only for autocommit statements
        holding an exclusive write lock, which are then re-run."""
        if self.explicit:
            return
        newer = newer_writes(self.warehouse.metastore, spec, self.write_ids(spec))
        if newer:
            writers = self.warehouse.metastore.writers_of(spec.db, spec.name, newer)
            who = ", ".join(
                f"txnid:{writers[w]} (write id {w})" if w in writers else f"write id {w}"
                for w in newer[:5]
            ) + (f" and {len(newer) - 5} more" if len(newer) > 5 else "")
            raise OutdatedSnapshot(
                f"write conflict on {spec.full_name}: while txnid:{self.txn_id} waited for its "
                f"lock, {who} committed a write to the table after its snapshot; this "
                "statement's transaction was aborted. The other transaction committed first; "
                "retrying the statement against the new snapshot may succeed."
            )

    # ------------------------------------------------------------------ writes
    def reserve_statements(self, spec: TableSpec, count: int, *, overwrite: bool = False) -> int:
        """Reserve ``count`` statement ids on the table; returns the first."""
        self.check_open()
        state = self._table(spec)
        if state.overwritten or (overwrite and state.statements > 0):
            raise UnsupportedOperationError(
                f"table {spec.full_name}: INSERT OVERWRITE must be the only statement writing the table "
                f"in transaction {self.txn_id}"
            )
        if self.shared:
            first = self.warehouse.metastore.reserve_statement_ids(self.txn_id, count)
        else:
            first = state.next_statement
            state.next_statement += count
        state.statements += 1
        state.overwritten = overwrite
        return first

    def share(self) -> SharedTransaction:
        """Share this multi-statement transaction with statements of other processes (see
        module docs): from now on its statement ids come from the metastore's counter."""
        self.check_open()
        if not self.shared:
            first = max((t.next_statement for t in self._tables.values()), default=0)
            self.warehouse.metastore.share_statement_ids(self.txn_id, first)
            self.shared = True
        return SharedTransaction(self.txn_id, str(self.valid_txns))

    def record_writes(
        self, spec: TableSpec, components: Sequence[tuple[str | None, OperationType]]
    ) -> int:
        """Record write components (partition, operation) and return the table's write id.

        Called before any file is written, so an abort leaves the cleaner enough to find them.
        """
        self.check_open()
        ms = self.warehouse.metastore
        state = self._table(spec)
        by_op: dict[OperationType, list[str | None]] = {}
        for partition, op in components:
            by_op.setdefault(op, []).append(partition)
        write_id = state.write_id
        if by_op:  # one metastore transaction for every operation
            groups = [(op, list(dict.fromkeys(parts))) for op, parts in by_op.items()]
            write_id = ms.add_write_component_groups(self.txn_id, spec.db, spec.name, groups)
        if write_id is None:
            write_id = ms.allocate_write_id(self.txn_id, spec.db, spec.name)
        if state.write_id is None:
            state.write_id = write_id
            # From now on this transaction sees its own write id as valid.
            state.write_ids = ms.valid_write_ids(
                self.txn_id, spec.db, spec.name, valid_txns=self.valid_txns
            )
        return write_id

    def record_files(self, spec: TableSpec, table_root: str, metrics: WriteMetrics) -> None:
        """Record what a statement of this transaction wrote into ``spec`` (its directories
        and files, with sizes and row counts): with the commit, in its metastore transaction,
        or before a later statement of this transaction reads the table."""
        state = self._table(spec)
        if state.write_id is None or not (metrics.dirs or metrics.infos):
            return
        entries = tuple(written_entries(table_root, metrics))
        self._unrecorded.append(TableWrite(spec.db, spec.name, state.write_id, entries))
        state.files = None  # its own writes are part of what it reads next

    def _record_unrecorded(self) -> None:
        """Record what its statements wrote so far, in one metastore transaction (a
        statement is about to read it)."""
        self.warehouse.metastore.record_table_writes(self.txn_id, self._unrecorded)
        self._unrecorded.clear()

    def record_source(self, spec: TableSpec, *sources: Source) -> None:
        """Record that this transaction loads ``sources`` into the table: committed into it
        with the transaction, forgotten if it aborts. A source committed into the table
        already raises :class:`~acid_platform.errors.DuplicateSourceError` here; one a
        concurrent transaction commits first raises it from :meth:`commit` (this transaction
        is then aborted). Call it before writing the sources' rows."""
        self.check_open()
        self.warehouse.metastore.record_sources(self.txn_id, spec.db, spec.name, sources)

    def write_id_of(self, spec: TableSpec) -> int | None:
        """The transaction's write id on the table (``None`` before its first write)."""
        state = self._tables.get(spec.full_name)
        return None if state is None else state.write_id

    def registered_partitions(self, spec: TableSpec, names: Sequence[str]) -> None:
        """Note partitions a statement of this transaction registered in the catalog."""
        if names:
            self._new_partitions.setdefault(spec.full_name, (spec, []))[1].extend(names)

    # ------------------------------------------------------------------ end
    def commit(self) -> None:
        """Commit in the metastore, with what the statements wrote and not yet recorded; on a
        failure the transaction is aborted and the error raised."""
        try:
            self.warehouse.metastore.commit_txn(self.txn_id, self._unrecorded, self.valid_txns)
        except BaseException:
            self.state = "aborted"
            self._abort_quietly()
            raise
        self.state = "committed"
        self._release_statement_ids()

    def _release_statement_ids(self) -> None:
        if not self.shared:
            return
        try:
            self.warehouse.metastore.release_statement_ids(self.txn_id)
        except Exception as exc:  # noqa: BLE001 - a counter row left behind is harmless
            log.warning("txn %s: could not drop its statement id counter: %s", self.txn_id, exc)

    def abort(self) -> None:
        """Abort in the metastore and unregister the partitions it registered (idempotent)."""
        if self.state != "aborted":
            self.state = "aborted"
            self._abort_quietly()

    def _abort_quietly(self) -> None:
        ms = self.warehouse.metastore
        abort_quietly(ms, self.txn_id)
        self._release_statement_ids()
        for spec, names in self._new_partitions.values():
            try:
                dropped = ms.drop_partitions_left_by(self.txn_id, spec.db, spec.name, names)
            except Exception as exc:  # noqa: BLE001 - best effort: the rows stay invisible
                log.warning("could not unregister partitions of txn %s: %s", self.txn_id, exc)
                continue
            self.warehouse.known_partitions.forget(spec.full_name, dropped)
        self._new_partitions.clear()


def newer_writes(metastore: Metastore, spec: TableSpec, mine: ValidWriteIdList) -> list[int]:
    """Write ids of ``spec`` committed after the snapshot ``mine`` was taken (Hive 4
    ``isValidTxnListState``), ascending; empty if the snapshot is current."""
    now = metastore.valid_write_ids(None, spec.db, spec.name)
    newer = range(mine.high_watermark + 1, now.high_watermark + 1)
    return sorted(w for w in (*mine.exceptions, *newer) if now.is_write_id_valid(w))


def lock_wait_s(conf: Mapping[str, str]) -> float:
    """Seconds a statement waits for its locks (``acid.lock.wait.timeout.s``); a zero wait
    still needs the metastore to withdraw the request and raise."""
    return max(float(conf.get("acid.lock.wait.timeout.s", "60")), 0.001)


def abort_quietly(metastore: Metastore, txn_id: int) -> None:
    """Abort ``txn_id``; a failure is logged (the time-out reaper finishes the abort)."""
    try:
        metastore.abort_txn(txn_id)
    except Exception as exc:  # noqa: BLE001 - the abort is best effort; the reaper finishes it
        log.warning("could not abort txn %s: %s", txn_id, exc)


def write_lock_type(conf: Mapping[str, str], *, overwrite: bool = False) -> LockType:
    """Hive 4's lock for UPDATE/DELETE/MERGE (and INSERT OVERWRITE with ``overwrite``)."""
    xlock = conf_bool(conf, "hive.txn.xlock.write")
    if overwrite:
        return (
            LockType.EXCLUSIVE
            if xlock and conf_bool(conf, "hive.txn.xlock.iow")
            else LockType.EXCL_WRITE
        )
    return LockType.EXCL_WRITE if xlock else LockType.SHARED_WRITE


def insert_lock_type(conf: Mapping[str, str]) -> LockType:
    """Hive 4's lock for INSERT into an ACID table."""
    return (
        LockType.SHARED_READ if conf_bool(conf, "hive.txn.xlock.write") else LockType.SHARED_WRITE
    )


def conf_bool(conf: Mapping[str, str], key: str) -> bool:
    """A boolean setting (``true``/``false``, case-insensitive)."""
    return str(conf.get(key, "true")).strip().lower() in ("true", "1", "yes", "on")


class Heartbeat:
    """Calls ``beat`` every ``interval_s`` seconds on a daemon thread until stopped."""

    def __init__(
        self,
        beat: Callable[[], None],
        interval_s: float,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._beat = beat
        self._interval = max(float(interval_s), 0.05)
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start beating."""
        self._thread = threading.Thread(target=self._run, name="acid-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating (and wait for the thread)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._beat()
            except Exception as exc:  # noqa: BLE001 - reported, and the owner decides
                log.warning("heartbeat failed: %s", exc)
                if self._on_error is not None:
                    self._on_error(exc)
                return
