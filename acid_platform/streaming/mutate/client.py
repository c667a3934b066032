"""``MutatorClient`` and its transaction: one long transaction over several tables (Hive's
``MutatorClient``, ``MutatorClientBuilder``, ``Transaction`` and ``LockFailureListener``).

>>> # client = MutatorClient(wh, sinks=["db.accounts", SinkTable("db.ledger", create_partitions=True)],
>>> #                        lock_failure_listener=lambda txn, tables, exc: job.cancel())
>>> # txn = client.new_transaction().begin()        # lock, write ids, heartbeat
>>> # handles = txn.tables                           # AcidTable per table: send them to workers
>>> # ... workers: MutatorCoordinator(handles["db.accounts"]) ... -> reports
>>> # txn.commit(reports)                            # everything visible at once, or nothing
>>> # client.close()

:meth:`MutationTransaction.begin` opens the transaction in the metastore and, as Hive 4 does for
UPDATE / DELETE / MERGE, takes EXCL_WRITE on every sink table (SHARED_WRITE with
``hive.txn.xlock.write=false``; then the commit's write-set check decides) and SHARED_READ on
every source table, in one all-or-nothing request. If a writer committed to a sink between the
transaction's snapshot and the lock, the snapshot is stale and every update would lose to the
write-set check at commit: the transaction is re-opened (up to ``OUTDATED_RETRIES`` times)
before anything is written. It then allocates each sink's write id and heartbeats the
transaction every ``hive.txn.timeout / 2``; if a heartbeat fails (the transaction timed out or
was aborted), the lock-failure listener is called. The snapshot the client reads ROW__IDs with
(:meth:`MutationTransaction.read`) is the transaction's own.

:meth:`MutationTransaction.commit` takes the coordinators' reports: it records each table's
write components (partition, operation) for the write-set check and the compactor, creates the
partitions written that the catalog lacks (the documentation's "collect the affected partitions
and create them with one metastore connection"), checks that every event file of the
transaction on disk is one a report names (a coordinator that died mid-write leaves files no
report names: the commit refuses and aborts), and commits. The write ids of all tables become
valid in one metastore transaction: readers see every table's changes, or none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import (
    GroupRevisitedError,
    MutationError,
    TransactionStateError,
    TxnAbortedError,
    UnsupportedOperationError,
)
from acid_platform.format.fs import resolve
from acid_platform.metastore.model import LockComponent, LockType, TableSpec
from acid_platform.metastore.names import split_table_name
from acid_platform.streaming.mutate.files import unreported_files
from acid_platform.streaming.mutate.report import MutationReport, merge_reports, total
from acid_platform.streaming.mutate.table import STATEMENT_COUNT, AcidTable
from acid_platform.table.deprecation import renamed_argument
from acid_platform.table.statement import (
    OUTDATED_RETRIES,
    StatementMetrics,
    register_partitions,
)
from acid_platform.table.table import Table
from acid_platform.table.transaction import (
    Heartbeat,
    OutdatedSnapshot,
    abort_quietly,
    lock_wait_s,
    newer_writes,
    write_lock_type,
)
from acid_platform.table.warehouse import TableWarehouse
from acid_platform.table.writes import WriteMetrics
from acid_platform.table.written_files import record_written

#: ``listener(txn_id, table names, error)``: the transaction's heartbeat failed (it timed out
#: or was aborted); the job should stop and abort (Hive's ``LockFailureListener``).
LockFailureListener = Callable[[int, Sequence[str], BaseException], None]


@dataclass(frozen=True)
class SinkTable:
    """A table the transaction writes; ``create_partitions`` lets its coordinators create the
    partitions they write (Hive's ``addSinkTable(db, table, createPartitions)``)."""

    name: str
    create_partitions: bool = False


class MutatorClient:
    """Connects to a warehouse's metastore for a set of sink and source tables and opens
    mutation transactions over them (see module docs)."""

    def __init__(
        self,
        warehouse: TableWarehouse,
        sinks: Sequence[str | SinkTable],
        sources: Sequence[str] = (),
        *,
        lock_failure_listener: LockFailureListener | None = None,
        agent: str = "acid_platform mutation client",
    ) -> None:
        self.warehouse = warehouse
        self.lock_failure_listener = lock_failure_listener
        self.agent = agent
        wanted = [s if isinstance(s, SinkTable) else SinkTable(s) for s in sinks]
        if not wanted:
            raise MutationError("a mutation client needs at least one sink table")
        self.sinks: dict[str, tuple[TableSpec, bool]] = {}
        for sink in wanted:
            spec = self._spec(sink.name, sink=True)
            self.sinks[spec.full_name] = (spec, sink.create_partitions)
        read_only = (self._spec(n, sink=False) for n in sources)
        #: Tables read but not written (a sink is read at the transaction's snapshot anyway).
        self.sources = {s.full_name: s for s in read_only if s.full_name not in self.sinks}
        self._transactions: list[MutationTransaction] = []
        self.closed = False

    def new_transaction(self) -> MutationTransaction:
        """A transaction over the client's tables; :meth:`MutationTransaction.begin` opens it."""
        if self.closed:
            raise TransactionStateError("the mutation client is closed")
        txn = MutationTransaction(self)
        self._transactions.append(txn)
        return txn

    def close(self) -> None:
        """Abort the client's transactions still open; the client accepts no new ones."""
        for txn in self._transactions:
            if txn.state == "open":
                txn.abort()
        self.closed = True

    def __enter__(self) -> MutatorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spec(self, name: str, *, sink: bool) -> TableSpec:
        db, table = split_table_name(name)
        spec = self.warehouse.table_spec(db, table)
        if sink and (not spec.is_transactional or spec.is_insert_only):
            raise UnsupportedOperationError(
                f"table {spec.full_name}: the Mutation API writes full ACID tables "
                "(transactional=true, not insert_only)"
            )
        return spec


class MutationTransaction:
    """One mutation transaction: ``begin`` → coordinators write → ``commit`` or ``abort``."""

    def __init__(self, client: MutatorClient) -> None:
        self.client = client
        self.state = "new"
        self.txn_id: int | None = None
        self.lock_failure: BaseException | None = None
        self._tables: dict[str, AcidTable] = {}
        self._reports: list[MutationReport] = []
        self._heartbeat: Heartbeat | None = None
        self._started = 0.0

    # ------------------------------------------------------------------ begin
    def begin(self) -> MutationTransaction:
        """Open the transaction, lock its tables, allocate write ids, start heartbeating."""
        if self.state != "new":
            raise TransactionStateError(f"mutation transaction is {self.state}, not new")
        wh = self.client.warehouse
        ms = wh.metastore
        self._started = time.perf_counter()
        for attempt in range(OUTDATED_RETRIES + 1):
            txn_id = ms.open_txn(agent_info=self.client.agent[:128])
            try:
                if self._open(txn_id):
                    break
            except BaseException:
                abort_quietly(ms, txn_id)
                raise
            abort_quietly(ms, txn_id)
            if attempt == OUTDATED_RETRIES:
                raise OutdatedSnapshot(
                    f"write conflict on {', '.join(self.client.sinks)}: each of "
                    f"{OUTDATED_RETRIES + 1} attempts found writes committed by other "
                    "transactions after its snapshot while it waited for its locks; retrying "
                    "may succeed"
                )
        self.state = "open"
        self._heartbeat = Heartbeat(
            lambda: ms.heartbeat(txn_id=self.txn_id), ms.txn_timeout_s / 2, self._lost
        )
        self._heartbeat.start()
        return self

    def _open(self, txn_id: int) -> bool:
        """Lock and allocate write ids in ``txn_id``; ``False`` if its snapshot is stale."""
        wh = self.client.warehouse
        ms = wh.metastore
        valid_txns = ms.valid_txns(txn_id)
        lock = write_lock_type(wh.conf)
        components = [LockComponent(lock, s.db, s.name) for s, _ in self.client.sinks.values()]
        components += [
            LockComponent(LockType.SHARED_READ, s.db, s.name) for s in self.client.sources.values()
        ]
        ms.lock(txn_id, components, wait_s=lock_wait_s(wh.conf))
        if lock is not LockType.SHARED_WRITE:
            for spec, _ in self.client.sinks.values():
                mine = ms.valid_write_ids(txn_id, spec.db, spec.name, valid_txns=valid_txns)
                if newer_writes(ms, spec, mine):
                    return False
        self.txn_id = txn_id
        sinks = {s.full_name: (s, c) for s, c in self.client.sinks.values()}
        sources = {s.full_name: (s, False) for s in self.client.sources.values()}
        for name, (spec, create) in {**sinks, **sources}.items():
            write_id = ms.allocate_write_id(txn_id, spec.db, spec.name) if name in sinks else None
            ids = ms.valid_write_ids(txn_id, spec.db, spec.name, valid_txns=valid_txns)
            self._tables[name] = AcidTable(
                spec,
                txn_id,
                write_id,
                str(valid_txns),
                str(ids),
                ms.url,
                ms.txn_timeout_s,
                create_partitions=create,
            )
        return True

    # ------------------------------------------------------------------ while open
    @property
    def tables(self) -> dict[str, AcidTable]:
        """The handles of the transaction's tables by ``db.table`` (after :meth:`begin`)."""
        if self.state == "new":
            raise TransactionStateError(
                "begin() the mutation transaction before asking for its tables"
            )
        return dict(self._tables)

    def table(self, name: str) -> AcidTable:
        """The handle of one table (``db.table`` or ``table`` in ``default``)."""
        db, table = split_table_name(name)
        found = self.tables.get(f"{db}.{table}")
        if found is None:
            raise MutationError(
                f"table {db}.{table} is not in the transaction ({sorted(self._tables)})"
            )
        return found

    def read(
        self,
        name: str,
        columns: Sequence[str] | None = None,
        where: str | exp.Expr | None = None,
        with_row_id: bool = True,
        *,
        filter: str | exp.Expr | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> pa.Table:
        """Rows of a table of the transaction, at its snapshot, with ROW__IDs by default (to
        join the change set with); ``where`` is a Hive predicate (``filter=`` is its
        deprecated alias)."""
        where = renamed_argument(where, filter, "filter=", "where=")
        handle = self.table(name)
        table = Table(self.client.warehouse, handle.spec)
        scan = table.scan(columns, where, with_row_id=with_row_id, snapshot=handle.snapshot)
        return scan.to_arrow()

    def add_reports(self, reports: Iterable[MutationReport]) -> None:
        """Keep coordinators' reports for :meth:`commit` (or :meth:`abort`)."""
        self._reports.extend(reports)

    # ------------------------------------------------------------------ end
    def commit(self, reports: Iterable[MutationReport] = ()) -> list[StatementMetrics]:
        """Record what the reports say was written, check the files, and commit; on any
        failure abort and raise. Returns one :class:`StatementMetrics` per sink table."""
        self._check_open()
        if self.lock_failure is not None:
            self._end_aborted()
            raise TxnAbortedError(
                f"transaction {self.txn_id} lost its locks ({self.lock_failure}); it is aborted"
            )
        self.add_reports(reports)
        wh = self.client.warehouse
        ms = wh.metastore
        assert self.txn_id is not None
        try:
            by_table = self._reports_by_table()
            for name, handle in self._tables.items():
                if handle.is_sink:
                    self._publish(handle, by_table.get(name, []))
            if self._heartbeat is not None:
                self._heartbeat.stop()
            ms.commit_txn(self.txn_id)
        except BaseException:
            self._end_aborted()
            raise
        self.state = "committed"
        return [self._metrics(h, by_table.get(n, [])) for n, h in self._tables.items() if h.is_sink]

    def abort(self) -> None:
        """Abort: nothing the coordinators wrote becomes visible."""
        if self.state == "committed":
            raise TransactionStateError(f"transaction {self.txn_id} is already committed")
        if self.state == "new":
            self.state = "aborted"
            return
        if self.state == "open":
            try:  # so the cleaner finds the partitions written
                by_table = self._reports_by_table()
                for name, handle in self._tables.items():
                    if handle.is_sink:
                        self._record(handle, by_table.get(name, []))
            except Exception:  # noqa: BLE001, S110 - aborting matters more than the record
                pass
        self._end_aborted()

    def __enter__(self) -> MutationTransaction:
        return self.begin() if self.state == "new" else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self.state == "open":
            self.commit()
        elif self.state == "open":
            self.abort()

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self.state != "open":
            raise TransactionStateError(f"mutation transaction {self.txn_id} is {self.state}")

    def _lost(self, exc: BaseException) -> None:
        self.lock_failure = exc
        listener = self.client.lock_failure_listener
        if listener is not None and self.txn_id is not None:
            listener(self.txn_id, sorted(self._tables), exc)

    def _end_aborted(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()
        if self.txn_id is not None:
            abort_quietly(self.client.warehouse.metastore, self.txn_id)
        self.state = "aborted"

    def _reports_by_table(self) -> dict[str, list[MutationReport]]:
        by_table = merge_reports(self._reports)
        for name, reports in by_table.items():
            handle = self._tables.get(name)
            if handle is None or not handle.is_sink:
                raise MutationError(
                    f"a report names table {name}, which this transaction does not write"
                )
            for r in reports:
                if (r.txn_id, r.write_id) != (handle.txn_id, handle.write_id):
                    raise MutationError(
                        f"a report of {name} belongs to txn {r.txn_id} write id {r.write_id}, "
                        f"not to this transaction (txn {handle.txn_id}, write id {handle.write_id})"
                    )
        return by_table

    def _publish(self, handle: AcidTable, reports: list[MutationReport]) -> None:
        """Check a sink's files against its reports, record its components, add partitions."""
        seen: dict[str, None] = {}
        for r in reports:
            for f in r.files:
                if f.path in seen:
                    raise GroupRevisitedError(
                        f"table {handle.name}: {f.path} was written by two coordinators; give each "
                        "(partition, bucket) group to one coordinator"
                    )
                seen[f.path] = None
        stray = unreported_files(
            handle, seen, self.client.warehouse.filesystem_for(handle.spec.location)
        )
        if stray:
            raise MutationError(
                f"table {handle.name}: {len(stray)} file(s) of txn {handle.txn_id} were written but "
                f"no coordinator reported them (did one die mid-write?), e.g. {stray[:3]}; "
                "the transaction is aborted"
            )
        self._record(handle, reports)
        wh = self.client.warehouse
        written = WriteMetrics.from_files([f for r in reports for f in r.files])
        root = resolve(handle.spec.location, wh.filesystem_for(handle.spec.location)).path
        assert handle.write_id is not None  # a sink's
        record_written(wh.metastore, handle.txn_id, handle.spec, handle.write_id, root, [written])
        names = sorted({p for r in reports for p in r.partitions if p})
        register_partitions(self.client.warehouse, handle.spec, names)

    def _record(self, handle: AcidTable, reports: list[MutationReport]) -> None:
        by_op: dict[str, list[str | None]] = {}
        for r in reports:
            if not r.recorded:
                for partition, op in r.components:
                    by_op.setdefault(op, []).append(partition or None)
        ms = self.client.warehouse.metastore
        spec = handle.spec
        assert self.txn_id is not None
        if by_op:
            groups = [(op, list(dict.fromkeys(parts))) for op, parts in by_op.items()]
            ms.add_write_component_groups(self.txn_id, spec.db, spec.name, groups)

    def _metrics(self, handle: AcidTable, reports: list[MutationReport]) -> StatementMetrics:
        files = [f for r in reports for f in r.files]
        return StatementMetrics(
            table=handle.name,
            txn_id=handle.txn_id,
            write_id=handle.write_id,
            statement_ids=tuple(range(STATEMENT_COUNT)),
            rows_inserted=total(reports, "rows_inserted"),
            rows_updated=total(reports, "rows_updated"),
            rows_deleted=total(reports, "rows_deleted"),
            dirs_written=tuple(sorted({f.directory for f in files})),
            files_written=len(files),
            bytes_written=sum(f.bytes for f in files),
            duration_s=time.perf_counter() - self._started,
        )


__all__ = ["LockFailureListener", "MutationTransaction", "MutatorClient", "SinkTable"]
