"""``Metastore``: the transactional truth of the platform, Hive metastore semantics on SQL.

>>> import tempfile
>>> from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec
>>> ms = Metastore.for_warehouse(tempfile.mkdtemp())
>>> ms.create_database("db")
>>> ms.create_table(TableSpec("db", "t", (("id", "int"),), location="/wh/db/t",
...                           properties={"transactional": "true"}))
>>> txn = ms.open_txn()
>>> ms.lock(txn, [LockComponent(LockType.SHARED_WRITE, "db", "t")]).state
<LockState.ACQUIRED: 'acquired'>
>>> ms.allocate_write_id(txn, "db", "t")
1
>>> str(ms.valid_write_ids(txn, "db", "t"))
'db.t:1:9223372036854775807::'
>>> ms.commit_txn(txn)
>>> ms.close()
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidWriteIdList
from acid_platform.metastore import (
    commit_fast,
    compaction_recovery,
    file_records,
    housekeeping,
    leases,
    locks,
    show,
    txns,
    writeids,
)
from acid_platform.metastore.batch_api import TxnBatchApi
from acid_platform.metastore.catalog_api import CatalogApi
from acid_platform.metastore.clock import TimeSource
from acid_platform.metastore.compaction_api import CompactionQueueApi, ReadLeaseApi
from acid_platform.metastore.file_record_api import FileRecordApi
from acid_platform.metastore.file_records import TableWrite
from acid_platform.metastore.lock_api import LockApi
from acid_platform.metastore.migrate import ensure_schema
from acid_platform.metastore.model import OperationType, TxnState, TxnType
from acid_platform.metastore.source_api import SourceApi
from acid_platform.metastore.store import open_store

METASTORE_FILE = "_metastore.db"


class Metastore(
    CatalogApi, LockApi, CompactionQueueApi, ReadLeaseApi, SourceApi, TxnBatchApi, FileRecordApi
):
    """Catalog, transactions, write ids, locks, compaction queue, reader leases, the
    sources transactions loaded and the files each write wrote.

    ``url`` is a SQLAlchemy URL: ``sqlite:///path/_metastore.db`` (embedded, the default via
    :meth:`for_warehouse`), ``postgresql://user@host/db`` (shared; psycopg 3), or
    ``mysql://user@host/db`` (PyMySQL). The schema is created or migrated on first use.
    ``txn_timeout_s`` is ``hive.txn.timeout``. Every time the metastore records or compares is
    the database server's (SQLite: the host's), never this client's own clock (see
    :mod:`.clock`); ``clock`` (seconds since the epoch, or a :class:`~.clock.TimeSource`)
    replaces it, to drive time-outs in tests.

    Clients keep what they hold alive, as in Hive: heartbeat open txns (and txn-less lock
    requests, reader leases, a compaction's ``txn_id``) about every ``txn_timeout_s / 2``.
    Expiry is part of the metastore, as Hive's lock check does it: a lock request blocked by a
    txn (or txn-less lock) silent longer than ``txn_timeout_s`` runs :meth:`reap_timed_out`
    (abort silent txns, drop their locks) and proceeds; the compactor's services reap before
    they decide, and a housekeeper may call it periodically too. All methods are safe from many threads and
    processes at once.
    """

    def __init__(
        self,
        url: str,
        txn_timeout_s: float = 300,
        *,
        max_open_txns: int = 100_000,
        clock: Callable[[], float] | TimeSource | None = None,
    ) -> None:
        self.txn_timeout_s = txn_timeout_s
        self._store = open_store(url, clock=clock)
        self.max_open_txns = int(max_open_txns)
        self._open_counter = txns.OpenTxnCounter(self.max_open_txns)
        self._user = _current_user()
        self._host = socket.gethostname()
        try:
            ensure_schema(self._store.engine, read_only=self._store.read_only)
        except BaseException:
            self._store.close()
            raise

    @classmethod
    def for_warehouse(cls, path: str | os.PathLike[str], **kwargs: Any) -> Metastore:
        """The embedded metastore of a local warehouse: SQLite at ``<path>/_metastore.db``."""
        db_file = os.path.join(os.path.abspath(os.fspath(path)), METASTORE_FILE)
        return cls(f"sqlite:///{db_file}", **kwargs)

    @property
    def url(self) -> str:
        return self._store.url

    @property
    def read_only(self) -> bool:
        """Whether the metastore cannot be written (a SQLite file on a read-only mount): it
        answers snapshots and catalog look-ups; every write raises
        :class:`~acid_platform.errors.ReadOnlyMetastoreError`."""
        return self._store.read_only

    @property
    def dialect(self) -> str:
        """``sqlite``, ``postgresql`` or ``mysql``."""
        return self._store.dialect

    def close(self) -> None:
        """Release pooled connections."""
        self._store.close()

    def __enter__(self) -> Metastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Metastore({self._store.engine.url.render_as_string()!r})"

    # ------------------------------------------------------------------ plumbing
    def _write(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        store = self._store
        return store.write(lambda conn: work(conn, *args, **kwargs, now=store.now_ms(conn)))

    def _read(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._store.read(lambda conn: work(conn, *args, **kwargs))

    def _read_at(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A read that needs the metastore's time (passed as ``now``)."""
        store = self._store
        return store.read(lambda conn: work(conn, *args, **kwargs, now=store.now_ms(conn)))

    def now_ms(self) -> int:
        """The metastore's time (epoch ms): the database server's clock, as every heartbeat,
        time-out and lease is measured (never this client's own clock)."""
        return self._store.read(self._store.now_ms)

    @property
    def txn_timeout_s(self) -> float:
        """``hive.txn.timeout`` in seconds: transactions heartbeat every half of it, and a
        txn silent this long is aborted (by the reaper, or a lock request it blocks)."""
        return self._txn_timeout_s

    @txn_timeout_s.setter
    def txn_timeout_s(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"txn_timeout_s must be a positive number, not {value!r}")
        self._txn_timeout_s = float(value)

    # ------------------------------------------------------------------ transactions
    def open_txn(
        self,
        *,
        user: str | None = None,
        host: str | None = None,
        agent_info: str | None = None,
        read_only: bool = False,
    ) -> int:
        """Open one transaction; returns its id."""
        return self.open_txns(1, user=user, host=host, agent_info=agent_info, read_only=read_only)[
            0
        ]

    def open_txns(
        self,
        n: int,
        *,
        user: str | None = None,
        host: str | None = None,
        agent_info: str | None = None,
        read_only: bool = False,
    ) -> list[int]:
        """Open ``n`` transactions with consecutive ids (a streaming batch)."""
        kind = TxnType.READ_ONLY if read_only else TxnType.DEFAULT
        return self._open(n, kind, user=user, host=host, agent_info=agent_info)[0]

    def _open(
        self,
        n: int,
        kind: TxnType,
        *,
        user: str | None = None,
        host: str | None = None,
        agent_info: str | None = None,
        then: Callable[[Any, int, list[int]], Any] | None = None,
    ) -> tuple[list[int], Any]:
        """Open ``n`` txns: their ids, and what ``then(conn, now, ids)`` returned (``None``
        without it). ``then`` runs in the same database transaction (an autocommit
        statement's lock request), the open then an ordinary write, not PostgreSQL's ``CALL``.
        """
        store = self._store

        def work(c: Any) -> tuple[list[int], Any]:
            now = store.now_ms(c)
            ids = txns.open_txns(
                store,
                c,
                now,
                n,
                user=user or self._user,
                host=host or self._host,
                agent_info=agent_info,
                txn_type=kind,
                counter=self._open_counter,
                autocommit=then is None,
            )
            return ids, None if then is None else then(c, now, ids)

        if then is None:  # PostgreSQL: one CALL from an autocommit connection (txns.open_txns)
            ids, after = store.write_single(work)
        else:
            ids, after = store.write(work)
        self._open_counter.opened(len(ids))
        return ids, after

    def commit_txn(
        self,
        txn_id: int,
        written: Sequence[TableWrite] = (),
        snapshot: ValidTxnList | None = None,
    ) -> None:
        """Commit: record what it wrote (``written``, as :meth:`record_written_files` does), release
        locks, publish components — all in one database transaction, so a write's file record
        costs no durable commit of its own; :class:`WriteConflictError` (and the txn is
        aborted, its record dropped) if an overlapping txn committed an update/delete on the
        same partition that the txn's ``snapshot`` (the ``ValidTxnList`` it read with) does
        not see. Without ``snapshot``, every writer that committed after the txn opened
        conflicts.

        On PostgreSQL a txn with nothing to record whose commit checks nothing (read-only,
        lock-only, insert-only) commits in one autocommit statement (:mod:`.commit_fast`); any
        other, and every txn elsewhere, takes the full path.
        """
        store = self._store
        batch = [w for w in written if w.entries]
        if (
            not batch
            and store.dialect == "postgresql"
            and store.write_single(
                lambda c: commit_fast.commit_unchecked(c, store.now_ms(c), txn_id)
            )
        ):
            return

        def work(c: Any, now: int) -> None:
            file_records.record_writes(c, txn_id, batch)
            txns.commit_txn(store, c, now, txn_id, snapshot)

        self._write(work)

    def abort_txn(self, txn_id: int) -> None:
        """Abort an open txn (no-op if already aborted; :class:`NoSuchTxnError` otherwise)."""
        self.abort_txns([txn_id])

    def abort_txns(self, txn_ids: Iterable[int]) -> None:
        """Abort several txns at once; unknown or committed ids fail the whole call."""
        ids = list(txn_ids)
        self._write(lambda c, now: txns.abort_txns(c, ids))

    def abort_transactions(self, txn_ids: Iterable[int]) -> list[int]:
        """ABORT TRANSACTIONS: returns the ids that were open and are now aborted."""
        ids = list(txn_ids)
        return self._write(lambda c, now: txns.abort_txns(c, ids))  # type: ignore[no-any-return]

    def heartbeat(self, txn_id: int | None = None, lock_id: int | None = None) -> None:
        """Keep a txn (and/or a txn-less lock request) alive."""
        if txn_id is None and lock_id is None:
            raise ValueError("heartbeat needs a txn_id or a lock_id")

        def work(c: Any, now: int) -> None:
            if txn_id is not None:
                txns.heartbeat_txn(c, now, txn_id)
            if lock_id is not None:
                locks.heartbeat_lock(c, now, lock_id)

        self._write(work)

    def heartbeat_txn_range(self, min_txn: int, max_txn: int) -> tuple[list[int], list[int]]:
        """Heartbeat a batch ``[min_txn, max_txn]``; returns (aborted ids, no-such ids)."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: housekeeping.heartbeat_txn_range(c, now, min_txn, max_txn)
        )

    def reap_timed_out(self, timeout_s: float | None = None) -> list[int]:
        """Abort txns silent for ``timeout_s`` (default ``txn_timeout_s``), expire txn-less
        locks silent as long, and expired reader leases; compactions whose worker's txn is
        gone go back to ``initiated``.

        Returns the aborted txn ids (Hive's AcidHouseKeeperService).
        """
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s}")
        timeout_ms = self._timeout_ms if timeout_s is None else int(timeout_s * 1000)

        def work(c: Any, now: int) -> list[int]:
            aborted = housekeeping.reap_timed_out(c, now, timeout_ms)
            leases.expire_leases(c, now)
            compaction_recovery.requeue_dead_workers(c)
            return aborted

        return self._write(work)  # type: ignore[no-any-return]

    def purge_txn_history(self) -> dict[str, int]:
        """Drop committed txn rows and write-set rows no open txn can need; returns counts."""
        return self._write(lambda c, now: housekeeping.purge_txn_history(self._store, c))  # type: ignore[no-any-return]

    def get_txn_state(self, txn_id: int) -> TxnState:
        """``"open"``, ``"committed"`` or ``"aborted"`` (:class:`NoSuchTxnError` if unknown)."""
        return self._read(txns.get_txn_state, txn_id)  # type: ignore[no-any-return]

    def valid_txns(self, txn_id: int | None = None, *, latest: bool = False) -> ValidTxnList:
        """The ValidTxnList snapshot now; for ``txn_id``, as that txn sees it (itself valid):
        nothing younger than it, or with ``latest`` every txn committed by now (the snapshot an
        autocommit statement takes once its locks are granted)."""
        return self._read(lambda c: txns.valid_txns(self._store, c, txn_id, latest=latest))  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ write ids
    def allocate_write_id(self, txn_id: int, db: str, table: str) -> int:
        """The txn's write id on ``db.table``, allocated on first call (first is 1)."""
        return self.allocate_write_ids([txn_id], db, table)[0]

    def allocate_write_ids(self, txn_ids: Sequence[int], db: str, table: str) -> list[int]:
        """Write ids for a batch of txns (streaming): consecutive, in txn id order."""
        ids = list(txn_ids)
        return self._write(lambda c, now: writeids.allocate_write_ids(c, ids, db, table))  # type: ignore[no-any-return]

    def share_statement_ids(self, txn_id: int, first: int = 0) -> None:
        """Number the statements of open txn ``txn_id`` here from ``first`` on, for every
        process that runs one (:meth:`reserve_statement_ids`): ``wh.transaction()`` shared with
        Spark SQL. :meth:`release_statement_ids` forgets the counter when the txn ends."""
        self._write(lambda c, now: writeids.share_statement_ids(c, txn_id, first))

    def reserve_statement_ids(self, txn_id: int, count: int = 1) -> int:
        """Reserve ``count`` consecutive statement ids of a shared txn; returns the first."""
        store = self._store
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: writeids.reserve_statement_ids(c, store, txn_id, count)
        )

    def release_statement_ids(self, txn_id: int) -> None:
        """Forget the statement id counter of ``txn_id`` (it committed or aborted)."""
        self._write(lambda c, now: writeids.release_statement_ids(c, txn_id))

    def valid_write_ids(
        self,
        txn_id: int | None,
        db: str,
        table: str,
        *,
        valid_txns: ValidTxnList | None = None,
    ) -> ValidWriteIdList:
        """The table's ValidWriteIdList for ``txn_id``'s snapshot (or the global one for None).

        Pass ``valid_txns`` to build it from a snapshot taken earlier (one ValidTxnList for
        every table of a statement, as Hive does).
        """

        def work(c: Any) -> ValidWriteIdList:
            snapshot = (
                valid_txns if valid_txns is not None else txns.valid_txns(self._store, c, txn_id)
            )
            return writeids.valid_write_ids(c, snapshot, db, table)

        return self._read(work)  # type: ignore[no-any-return]

    def writers_of(self, db: str, table: str, write_ids: Sequence[int]) -> dict[int, int]:
        """Which txn wrote each of ``write_ids`` on ``db.table`` (to name who conflicted)."""
        ids = list(write_ids)
        return self._read(lambda c: writeids.writers_of(c, db, table, ids))  # type: ignore[no-any-return]

    def add_write_components(
        self,
        txn_id: int,
        db: str,
        table: str,
        partitions: Sequence[str | None],
        operation: OperationType | str,
    ) -> int:
        """Record what the txn writes (``insert``/``update``/``delete``) per partition.

        Used by the commit-time write-set check (update/delete) and by the compactor. ``None``
        means the whole table. Allocates the write id if needed and returns it. Call before
        writing files.
        """
        return self.add_write_component_groups(txn_id, db, table, [(operation, partitions)])

    def add_write_component_groups(
        self,
        txn_id: int,
        db: str,
        table: str,
        groups: Sequence[tuple[OperationType | str, Sequence[str | None]]],
    ) -> int:
        """:meth:`add_write_components` for several operations (a MERGE's update, delete and
        insert branches), in one metastore transaction; returns the write id."""
        items = [(OperationType(op), list(parts)) for op, parts in groups]
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: writeids.add_write_component_groups(c, txn_id, db, table, items)
        )

    # ------------------------------------------------------------------ observability
    def show_transactions(self) -> list[dict[str, Any]]:
        """Rows of SHOW TRANSACTIONS (open and aborted txns)."""
        return self._read(show.show_transactions)  # type: ignore[no-any-return]

    def open_txns_by_agent(self, agent_info: str) -> list[int]:
        """The open txns opened with exactly ``agent_info``: a writer that tags its txns finds
        those it left open (e.g. a streaming sink, after a crash) to abort them."""
        return self._read(show.open_txns_by_agent, agent_info)  # type: ignore[no-any-return]

    def show_locks(self) -> list[dict[str, Any]]:
        """Rows of SHOW LOCKS."""
        return self._read(show.show_locks)  # type: ignore[no-any-return]

    def show_compactions(self) -> list[dict[str, Any]]:
        """Rows of SHOW COMPACTIONS (queue and history)."""
        return self._read(show.show_compactions)  # type: ignore[no-any-return]


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
