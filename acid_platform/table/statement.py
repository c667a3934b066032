"""The statement lifecycle: the one way a statement runs, reads and reports.

Every write — SQL, the Python API, Spark, and the layers above (Dagster, streaming) — goes
through :func:`run_write`::

    open txn (or join wh.transaction()) -> lock -> snapshot check -> record sources
      -> reserve statement ids -> the engine computes rows and writes event files (``write(ctx)``)
      -> record write components, register partitions -> commit, or abort on any failure

and returns a frozen :class:`StatementMetrics`. An engine supplies only ``write(ctx)``: compute
the rows and write the files, calling :meth:`WriteContext.record` for the write id before the
first file. Reads take one snapshot with :func:`read_snapshot` (registered with the cleaner as
a reader lease, :class:`~.read_lease.ReadLease`, while in use); inside a transaction they use
:meth:`Transaction.snapshot`. The locks, checks, statement ids and records a statement makes
go to its transaction's ledger (:func:`~.transaction.ledger_of`), not to the user's
:class:`Transaction`.

An autocommit statement holding an exclusive write lock whose snapshot went stale while it
waited (Hive 4's ``isValidTxnListState``) is re-run in a fresh transaction, up to
:data:`OUTDATED_RETRIES` times. Inside ``wh.transaction()`` a failed statement aborts the whole
transaction, as Hive does.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from acid_platform.errors import NonTransactionalTableError, UnsupportedOperationError
from acid_platform.format import Snapshot, ValidTxnList
from acid_platform.format.fs import Location, resolve
from acid_platform.metastore import Metastore
from acid_platform.metastore.model import (
    LockComponent,
    LockType,
    OperationType,
    Source,
    TableSpec,
)
from acid_platform.table.event_layout import DELETE
from acid_platform.table.read_lease import ReadLease
from acid_platform.table.schema import data_schema
from acid_platform.table.transaction import (
    OutdatedSnapshot,
    SharedTransaction,
    Transaction,
    TransactionHost,
    abort_quietly,
    insert_lock_type,
    ledger_of,
    lock_wait_s,
    write_lock_type,
)
from acid_platform.table.writes import EventSink, WriteMetrics, run_writes
from acid_platform.table.written_files import record_written

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from acid_platform.format.storage import StorageOptions
    from acid_platform.table.engine import Engine

T = TypeVar("T")
log = logging.getLogger(__name__)


class StatementHost(TransactionHost, Protocol):
    """What a statement needs of the warehouse session it runs in (a ``TableWarehouse`` is
    one; engines reach it as :attr:`WriteContext.warehouse`): declared here, so this module
    does not import the warehouse, which imports it."""

    @property
    def root(self) -> str: ...

    @property
    def storage(self) -> StorageOptions | None: ...

    @property
    def current_transaction(self) -> Transaction | None: ...

    @property
    def engine(self) -> Engine: ...

    def filesystem_for(self, location: str) -> pafs.FileSystem | None: ...

    def table_spec(self, db: str, table: str) -> TableSpec: ...


#: How often an autocommit statement with a stale snapshot is re-run before it fails.
OUTDATED_RETRIES = 3
#: The first re-run waits up to this long (uniformly drawn), each later one twice as long at
#: most ("full jitter"): writers that collided do not collide again in lock step.
OUTDATED_BACKOFF_S = 0.05


def backoff_s(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before re-run ``attempt`` (0 for the first re-run)."""
    return (rng or random).uniform(0.0, OUTDATED_BACKOFF_S * 2**attempt)


@dataclass(frozen=True)
class WriterTask:
    """A task of a native engine that wrote files of a statement: the host and process it ran
    in, and the engine's ids of it (Spark: stage, partition, attempt number, task attempt id)."""

    host: str
    pid: int
    stage_id: int = 0
    partition_id: int = 0
    attempt: int = 0
    task_attempt_id: int = 0


@dataclass(frozen=True)
class StatementMetrics:
    """What one write statement did. The same fields, with the same values for the same
    statement, whichever engine ran it — but :attr:`tasks`, where it ran."""

    table: str
    txn_id: int
    #: The table's write id in the transaction (``None`` if the statement wrote nothing and
    #: the transaction had not written the table before).
    write_id: int | None
    statement_ids: tuple[int, ...]
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    dirs_written: tuple[str, ...] = ()
    files_written: int = 0
    bytes_written: int = 0
    duration_s: float = 0.0
    #: The tasks of a native engine (Spark) that wrote the statement's files; empty for the
    #: embedded engine. Not compared, not in :meth:`as_dict`: where it ran, not what it did.
    tasks: tuple[WriterTask, ...] = field(default=(), compare=False)

    @property
    def rows_affected(self) -> int:
        """Rows inserted, updated and deleted (what SQL reports as the statement's count)."""
        return self.rows_inserted + self.rows_updated + self.rows_deleted

    def as_dict(self) -> dict[str, Any]:
        """The fields but :attr:`tasks` as a JSON-ready dict (lists for tuples)."""
        out = asdict(self)
        del out["tasks"]
        out["statement_ids"] = list(self.statement_ids)
        out["dirs_written"] = list(self.dirs_written)
        return out


@dataclass(frozen=True)
class WriteRequest:
    """The locks and checks a write statement needs before it writes."""

    locks: tuple[LockComponent, ...]
    #: Re-check the snapshot after locking (exclusive writers; see module docs).
    check_outdated: bool
    statement_count: int = 1
    #: The statement ids (offsets from the first reserved) the statement writes with.
    statement_offsets: tuple[int, ...] = (0,)
    overwrite: bool = False
    #: What the statement loads (landing files): recorded in its transaction before the
    #: write, committed into the table with it, at most once (see ``TransactionLedger.record_source``).
    sources: tuple[Source, ...] = ()

    @classmethod
    def insert(
        cls,
        spec: TableSpec,
        conf: Mapping[str, str],
        partition: str | None,
        overwrite: bool,
        sources: Sequence[Source] = (),
    ) -> WriteRequest:
        """INSERT (SHARED_READ) or INSERT OVERWRITE (EXCLUSIVE) of one table or partition,
        loading ``sources``."""
        lock = write_lock_type(conf, overwrite=True) if overwrite else insert_lock_type(conf)
        return cls(
            (LockComponent(lock, spec.db, spec.name, partition),),
            check_outdated=overwrite,
            overwrite=overwrite,
            sources=tuple(sources),
        )

    @classmethod
    def dml(
        cls,
        spec: TableSpec,
        conf: Mapping[str, str],
        statement_count: int,
        statement_offsets: Sequence[int],
        extra_locks: Sequence[LockComponent] = (),
    ) -> WriteRequest:
        """UPDATE / DELETE / MERGE: EXCL_WRITE (SHARED_WRITE with ``hive.txn.xlock.write=false``)
        on the table, plus the read locks of a MERGE source query."""
        lock = write_lock_type(conf)
        return cls(
            (LockComponent(lock, spec.db, spec.name), *extra_locks),
            check_outdated=lock is not LockType.SHARED_WRITE,
            statement_count=statement_count,
            statement_offsets=tuple(sorted(set(statement_offsets))),
        )


@dataclass
class WriteOutcome:
    """What an engine's ``write(ctx)`` reports back."""

    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    written: WriteMetrics = field(default_factory=WriteMetrics)
    #: Partitions that received new rows (registered in the catalog before commit).
    partitions: Sequence[str] = ()
    #: The native engine's tasks that wrote files (:attr:`StatementMetrics.tasks`).
    tasks: Sequence[WriterTask] = ()


@dataclass
class WriteContext:
    """One write statement in its transaction, as an engine's ``write(ctx)`` sees it."""

    warehouse: StatementHost
    txn: Transaction
    spec: TableSpec
    location: Location
    #: The first of the statement ids reserved for this statement.
    first_statement: int

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot the statement reads the table with (its transaction's)."""
        return self.txn.snapshot(self.spec)

    def record(self, components: Sequence[tuple[str | None, OperationType]]) -> int:
        """Record write components (partition, operation) and return the write id. Call it
        before writing a file, so an abort leaves the cleaner enough to find them."""
        return ledger_of(self.txn).record_writes(self.spec, components)


def require_acid_writes(spec: TableSpec) -> None:
    """Refuse any write to a non-transactional table before it starts: every writer here
    writes Hive ACID files (``delta_w_w_s/bucket_n`` with ACID columns), which Hive would
    misread as the rows of a plain table."""
    if not spec.is_transactional:
        raise NonTransactionalTableError(
            f"Attempt to insert into table {spec.full_name} that is not transactional: this "
            "project writes only Hive ACID files, which Hive would misread in a plain table"
        )


def require_event_writer(spec: TableSpec) -> None:
    """Refuse a writer of ACID event files (Spark's executors, a detached write) into an
    insert-only table, whose files are plain: such writes take the embedded path."""
    if spec.is_insert_only:
        raise UnsupportedOperationError(
            f"{spec.full_name} is an insert-only table: Spark writes ACID event files, not its "
            "plain files; insert through Table.insert / SQL on the embedded engine "
            "(e.g. a DataFrame's rows as Arrow)"
        )


def run_write(
    warehouse: StatementHost,
    spec: TableSpec,
    location: Location,
    request: WriteRequest,
    write: Callable[[WriteContext], WriteOutcome],
) -> StatementMetrics:
    """Run a write statement through the whole lifecycle (see module docs)."""
    require_acid_writes(spec)
    started = time.perf_counter()

    def run(txn: Transaction) -> StatementMetrics:
        ledger = ledger_of(txn)
        ledger.lock(request.locks)
        if request.check_outdated:
            ledger.check_outdated(spec)
        if request.sources:
            ledger.record_source(spec, *request.sources)
        first = ledger.reserve_statements(
            spec, request.statement_count, overwrite=request.overwrite
        )
        ctx = WriteContext(warehouse, txn, spec, location, first)
        outcome = write(ctx)
        ledger.record_files(spec, location.path, outcome.written)
        ledger.registered_partitions(spec, register_partitions(warehouse, spec, outcome.partitions))
        return StatementMetrics(
            table=spec.full_name,
            txn_id=txn.id,
            write_id=ledger.write_id_of(spec),
            statement_ids=tuple(first + s for s in request.statement_offsets),
            rows_inserted=outcome.rows_inserted,
            rows_updated=outcome.rows_updated,
            rows_deleted=outcome.rows_deleted,
            dirs_written=tuple(sorted(set(outcome.written.dirs))),
            files_written=len(outcome.written.files),
            bytes_written=outcome.written.bytes_written,
            duration_s=time.perf_counter() - started,
            tasks=tuple(outcome.tasks),
        )

    return run_statement(warehouse, run, request.locks)


@dataclass(frozen=True)
class DetachedWrite:
    """A write statement whose phases run in different processes, its transaction named by id
    (Spark's data-source writer: planned in one Python process, committed in another, its
    tasks heartbeating the transaction): an INSERT [OVERWRITE], or with :attr:`command` a
    row-level UPDATE / DELETE / MERGE. :func:`begin_detached` opens it (lock, write id);
    :func:`commit_detached` or :func:`abort_detached` ends it. It is not re-run on a stale
    snapshot: it fails instead.

    With :attr:`joined` it is a statement of a shared multi-statement transaction
    (``wh.transaction()``, :class:`~.transaction.SharedTransaction`): it takes its locks, write
    id and statement ids in that transaction, its commit records what it wrote there without
    committing (the transaction's owner commits), and its failure aborts the transaction, as
    Hive aborts a multi-statement transaction whose statement fails."""

    spec: TableSpec
    txn_id: int
    write_id: int
    overwrite: bool
    opened_at: float
    first_statement: int = 0
    #: ``UPDATE``, ``DELETE`` or ``MERGE`` for a row-level statement; ``None`` for an insert.
    command: str | None = None
    #: A statement of a shared multi-statement transaction (see above).
    joined: bool = False


def begin_detached(
    metastore: Metastore,
    spec: TableSpec,
    conf: Mapping[str, str],
    *,
    overwrite: bool = False,
    agent: str,
    command: str | None = None,
    shared: SharedTransaction | None = None,
    statements: int = 1,
) -> DetachedWrite:
    """Open the transaction of an INSERT [OVERWRITE] of ``spec`` (or, with ``command``, of a
    row-level UPDATE / DELETE / MERGE: :meth:`WriteRequest.dml`'s lock), take its lock and
    allocate the write id (before any file is written); aborts on any failure. With
    ``shared``, join that transaction instead (see :class:`DetachedWrite`), reserving
    ``statements`` statement ids in it."""
    require_acid_writes(spec)
    require_event_writer(spec)
    if command is not None:
        request = WriteRequest.dml(spec, conf, 1, (0,))
    else:
        request = WriteRequest.insert(spec, conf, None, overwrite)
    txn_id = shared.txn_id if shared is not None else metastore.open_txn(agent_info=agent[:128])
    first = 0
    try:
        metastore.lock(txn_id, list(request.locks), wait_s=lock_wait_s(conf))
        write_id = (
            metastore.add_write_components(txn_id, spec.db, spec.name, [None], OperationType.INSERT)
            if command is None and not spec.partition_columns
            else metastore.allocate_write_id(txn_id, spec.db, spec.name)
        )
        if shared is not None:
            first = metastore.reserve_statement_ids(txn_id, statements)
    except BaseException:
        abort_quietly(metastore, txn_id)
        raise
    command = command.upper() if command is not None else None
    return DetachedWrite(
        spec,
        txn_id,
        write_id,
        overwrite,
        time.time(),
        first_statement=first,
        command=command,
        joined=shared is not None,
    )


def commit_detached(
    metastore: Metastore,
    write: DetachedWrite,
    outcome: WriteOutcome,
    sources: Sequence[Source] = (),
    snapshot: ValidTxnList | None = None,
) -> StatementMetrics:
    """Record the write components (:func:`record_detached`) and the ``sources`` loaded,
    register the partitions, write the empty base of an INSERT OVERWRITE of no rows, and
    commit (aborting on any failure; a :attr:`~DetachedWrite.joined` statement records all
    this in its transaction and leaves the commit to the transaction's owner). ``sources`` are committed into the table with the
    transaction, at most once, as ``WriteRequest.sources``: one committed already raises
    :class:`~acid_platform.errors.DuplicateSourceError` and the transaction is aborted.
    ``snapshot``: what the statement read the table at, if older than its transaction (a Spark
    SQL statement's scan): a writer that committed an update or delete of the same partition
    after it conflicts (:class:`~acid_platform.errors.WriteConflictError`), as one after the
    transaction opened does."""
    spec = write.spec
    try:
        record_detached(metastore, write, outcome)
        if sources:
            metastore.record_sources(write.txn_id, spec.db, spec.name, list(sources))
        if spec.partition_columns and outcome.partitions:
            metastore.add_partitions(spec.db, spec.name, sorted(set(outcome.partitions)))
        written = outcome.written
        if write.overwrite and not spec.partition_columns and not written.files:
            location = resolve(spec.location)
            written = run_writes(
                [
                    EventSink(spec, location, write.write_id).insert_writes(
                        "", data_schema(spec).empty_table(), write.first_statement, overwrite=True
                    )
                ]
            )
        record_written(
            metastore,
            write.txn_id,
            spec,
            write.write_id,
            resolve(spec.location).path,
            [written],
        )
        if not write.joined:
            metastore.commit_txn(write.txn_id, snapshot=snapshot)
    except BaseException:
        abort_quietly(metastore, write.txn_id)
        raise
    statements = sorted({f.statement for f in written.infos})
    return StatementMetrics(
        table=spec.full_name,
        txn_id=write.txn_id,
        write_id=write.write_id,
        statement_ids=tuple(statements) or (write.first_statement,),
        rows_inserted=outcome.rows_inserted,
        rows_updated=outcome.rows_updated,
        rows_deleted=outcome.rows_deleted,
        dirs_written=tuple(sorted(set(written.dirs))),
        files_written=len(written.files),
        bytes_written=written.bytes_written,
        duration_s=time.time() - write.opened_at,
        tasks=tuple(outcome.tasks),
    )


def abort_detached(metastore: Metastore, write: DetachedWrite, outcome: WriteOutcome) -> None:
    """Record what was written (so the cleaner finds it), then abort: it stays invisible (a
    :attr:`~DetachedWrite.joined` statement's whole transaction is aborted, as in Hive)."""
    try:
        record_detached(metastore, write, outcome)
    except Exception as exc:  # noqa: BLE001 - aborting matters more than the record
        log.warning("txn %s: could not record written partitions: %s", write.txn_id, exc)
    abort_quietly(metastore, write.txn_id)


def record_detached(metastore: Metastore, write: DetachedWrite, outcome: WriteOutcome) -> None:
    """Record the write components of what a detached write wrote (Hive's write set, which
    other writers are checked against): an insert's partitions as INSERT (an unpartitioned
    table's was recorded when it began); a row-level statement's files by kind — DELETE and
    INSERT, or UPDATE for all of an UPDATE's — and, when it wrote nothing into an
    unpartitioned table, the table under its command's operation."""
    spec = write.spec
    if write.command is None:
        if spec.partition_columns and outcome.partitions:
            metastore.add_write_components(
                write.txn_id,
                spec.db,
                spec.name,
                sorted(set(outcome.partitions)),
                OperationType.INSERT,
            )
        return
    by_operation: dict[OperationType, set[str | None]] = {}
    for f in outcome.written.infos:
        if write.command == "UPDATE":
            operation = OperationType.UPDATE
        else:
            operation = OperationType.DELETE if f.kind == DELETE else OperationType.INSERT
        by_operation.setdefault(operation, set()).add(f.partition or None)
    if not by_operation and not spec.partition_columns:
        update = write.command == "UPDATE"
        by_operation[OperationType.UPDATE if update else OperationType.DELETE] = {None}
    for operation, partitions in by_operation.items():
        names: list[str | None] = (
            sorted(partitions, key=lambda p: p or "") if spec.partition_columns else [None]
        )
        metastore.add_write_components(write.txn_id, spec.db, spec.name, names, operation)


def run_statement(
    warehouse: StatementHost,
    run: Callable[[Transaction], T],
    locks: Sequence[LockComponent] = (),
) -> T:
    """Run ``run`` in the open multi-statement transaction (aborting it if ``run`` fails) or
    in a transaction of its own, committed on success (re-run on a stale snapshot). A
    transaction of its own is opened holding ``locks`` (the statement's first
    :meth:`~.transaction.TransactionLedger.lock` of them then asks nothing more)."""
    txn = warehouse.current_transaction
    if txn is not None:
        ledger_of(txn).check_open()
        try:
            return run(txn)
        except BaseException:
            txn.rollback()  # Hive: a failed statement aborts its multi-statement transaction
            raise
    for attempt in range(OUTDATED_RETRIES + 1):
        auto = Transaction(warehouse, locks=locks)
        try:
            result = run(auto)
        except OutdatedSnapshot as exc:
            auto.rollback()
            if attempt == OUTDATED_RETRIES:
                raise OutdatedSnapshot(
                    f"{exc} (the statement was run {OUTDATED_RETRIES + 1} times, each time "
                    "against a newer snapshot)"
                ) from None
            time.sleep(backoff_s(attempt))
            continue
        except BaseException:
            auto.rollback()
            raise
        auto.commit()
        return result
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def statement_guard(warehouse: StatementHost) -> Iterator[Transaction | None]:
    """A statement's checks and planning: inside a multi-statement transaction a failure here
    aborts the transaction too (Hive aborts it on any failed statement). Yields the open
    transaction, if any."""
    txn = warehouse.current_transaction
    if txn is None:
        yield None
        return
    ledger_of(txn).check_open()
    try:
        yield txn
    except BaseException:
        txn.rollback()
        raise


@contextmanager
def read_snapshot(
    warehouse: StatementHost, specs: Sequence[TableSpec]
) -> Iterator[dict[str, Snapshot]]:
    """One snapshot (table name -> :class:`Snapshot`) for reading ``specs``.

    Inside a multi-statement transaction: the transaction's. Otherwise a fresh one, registered
    with the cleaner as a heartbeated reader lease while in use (``acid.scan.read.lease``), so
    the cleaner keeps every file it needs.
    """
    with statement_guard(warehouse) as txn:
        if txn is not None:
            yield {s.full_name: txn.snapshot(s) for s in specs}
            return
        with ReadLease(warehouse, specs) as snapshots:
            yield snapshots


def register_partitions(
    warehouse: StatementHost, spec: TableSpec, names: Sequence[str]
) -> list[str]:
    """Add the partitions ``names`` to the catalog if they are new (cached per warehouse), in
    ONE metastore write however many there are; returns those this call registered."""
    if not spec.partition_columns:
        return []
    unknown = warehouse.known_partitions.unknown(spec, names)
    if not unknown:
        return []
    created = warehouse.metastore.add_partitions(spec.db, spec.name, unknown)
    warehouse.known_partitions.add(spec, unknown)
    return created


__all__ = [
    "OUTDATED_RETRIES",
    "DetachedWrite",
    "StatementMetrics",
    "WriteContext",
    "WriteOutcome",
    "WriteRequest",
    "WriterTask",
    "abort_detached",
    "begin_detached",
    "commit_detached",
    "read_snapshot",
    "register_partitions",
    "run_statement",
    "run_write",
    "statement_guard",
]
