"""The SQL engine under the metastore: connections, transactions, retries, id sequences.

Concurrency model (what makes eight processes safe):

* **SQLite** (default, a file in the warehouse): WAL journal; every write transaction starts
  with ``BEGIN IMMEDIATE``, so writers are serialised by the database file lock and no update
  is ever lost; reads use a deferred ``BEGIN`` and see one consistent WAL snapshot. Writers of
  this library first queue on a blocking ``flock`` of ``<file>.writer-lock`` (handed over by
  the kernel the moment the previous writer commits, instead of SQLite's sleep-and-retry);
  ``database is locked`` is still retried for 30 s. ``synchronous=FULL`` by default (one fsync per commit: a committed txn or write
  id survives power loss, so no write id is ever handed out twice). ``?synchronous=normal``
  on the URL trades that for speed: still never corrupt and safe against killed processes,
  but a power cut or OS crash may lose the last commits.
* **PostgreSQL / MySQL**: writes run at READ COMMITTED with explicit row locks
  (``SELECT ... FOR UPDATE``) taken in one global order — txn rows (ascending id), then the
  ``acid_sequences`` rows, then compaction queue rows — the way Hive's TxnHandler mutexes on
  ``NEXT_TXN_ID``/``NEXT_LOCK_ID``. Multi-statement reads run at REPEATABLE READ so a snapshot
  (high watermark + open list) is one consistent picture. On PostgreSQL, opening txns takes
  the ``NEXT_TXN_ID`` row lock for a single statement committed without waiting for the WAL
  flush, then makes it durable outside the lock (:meth:`Store.write_unsynced`).
* Serialization failures, deadlocks and "database is locked" are retried with jittered
  back-off; the unit of work is a function of a connection, so a retry re-runs all of it.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from sqlalchemy import bindparam, create_engine, event, select, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import StaticPool

from acid_platform.errors import (
    MetastoreError,
    MetastoreUnavailableError,
    ReadOnlyMetastoreError,
)
from acid_platform.metastore.clock import TimeSource, time_source
from acid_platform.metastore.schema import acid_sequences
from acid_platform.runtime import require

T = TypeVar("T")

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer keeps trying to get the database write lock."""
SQLITE_HANDLER_BUSY_MS = 10
"""SQLite's own busy handler wait per attempt; :meth:`Store._run` retries around it."""
MAX_ATTEMPTS = 50
_TRANSIENT_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
_TRANSIENT_MYSQL_CODES = frozenset({1205, 1213})
_TRANSIENT_SQLITE_TEXT = ("database is locked", "database is busy", "database table is locked")


_seq = acid_sequences
_ALLOCATE_RETURNING = (
    update(_seq)
    .where(_seq.c.seq_name == bindparam("b_name"))
    .values(next_val=_seq.c.next_val + bindparam("b_n"))
    .returning(_seq.c.next_val)
)
_LOCK_SEQUENCE = (
    select(_seq.c.next_val).where(_seq.c.seq_name == bindparam("b_name")).with_for_update()
)
_PEEK_SEQUENCE = select(_seq.c.next_val).where(_seq.c.seq_name == bindparam("b_name"))
_SET_SEQUENCE = (
    update(_seq).where(_seq.c.seq_name == bindparam("b_name")).values(next_val=bindparam("b_value"))
)


class CommitAndRaise(Exception):
    """Raised inside a unit of work to commit what it did and then raise ``error``.

    Used where Hive commits a side effect before failing, e.g. a write conflict aborts the
    committing transaction (durably) and then reports the conflict.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class RetryTransaction(Exception):
    """Raised inside a unit of work to roll back and run it again (e.g. a racing first insert)."""


class Store:
    """One SQLAlchemy engine plus the rules for running units of work on it."""

    def __init__(self, url: str, *, clock: Callable[[], float] | TimeSource | None = None) -> None:
        self.url = normalize_url(url)
        #: A SQLite file on a read-only file system (or one this process may not write): it is
        #: opened read-only and immutable, and every write raises ReadOnlyMetastoreError.
        self.read_only = _sqlite_read_only(self.url)
        self.engine = _create_engine(self.url, read_only=self.read_only)
        self.dialect = self.engine.dialect.name
        self.time_source = time_source(self.dialect, clock)
        self._writer_mutex = None if self.read_only else _writer_mutex(self.url)
        self._autocommit_engine: Engine | None = None
        self._update_returning = bool(getattr(self.engine.dialect, "update_returning", False))
        _dispose_after_fork(self.engine)

    # ------------------------------------------------------------------ time
    def now_ms(self, conn: Connection) -> int:
        """The metastore's current time in epoch milliseconds: the database server's clock
        (or the one injected), never this client's own (see :mod:`.clock`)."""
        return self.time_source.now_ms(conn)

    # ------------------------------------------------------------------ units of work
    def write(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction, retrying transient failures."""
        return self._run(work, write=True)

    def write_single(self, work: Callable[[Connection], T]) -> T:
        """Run ``work``, a single statement that is atomic on its own, committed as it runs
        (or a ``CALL`` of a procedure that commits by itself).

        On PostgreSQL it runs in autocommit mode (synchronous commit, as every write): one round
        trip instead of BEGIN, the statement and COMMIT. Elsewhere this is an ordinary
        :meth:`write`.
        """
        if self.dialect != "postgresql":
            return self._run(work, write=True)
        if self._autocommit_engine is None:
            self._autocommit_engine = create_engine(
                self.url, isolation_level="AUTOCOMMIT", pool_size=1, max_overflow=4
            )
            _dispose_after_fork(self._autocommit_engine)
        return self._run(work, write=True, autocommit_engine=self._autocommit_engine)

    def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a consistent read-only snapshot."""
        return self._run(work, write=False)

    def close(self) -> None:
        self.engine.dispose()
        if self._autocommit_engine is not None:
            self._autocommit_engine.dispose()
        if self._writer_mutex is not None:
            self._writer_mutex.close()

    def _run(
        self,
        work: Callable[[Connection], T],
        *,
        write: bool,
        autocommit_engine: Engine | None = None,
    ) -> T:
        if write and self.read_only:
            raise ReadOnlyMetastoreError(
                f"the metastore {make_url(self.url).database} is read-only (its file or "
                "directory cannot be written): queries run, nothing that writes can"
            )
        attempt = busy = 0
        busy_deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                if autocommit_engine is not None:
                    return self._run_autocommit(autocommit_engine, work)
                return self._run_once(work, write=write)
            except RetryTransaction:
                attempt += 1
                if attempt >= MAX_ATTEMPTS:
                    raise MetastoreError("metastore operation kept conflicting; gave up") from None
            except DBAPIError as exc:
                if is_sqlite_busy(exc) and time.monotonic() < busy_deadline:
                    # Our own short, jittered waits for the SQLite write lock: SQLite's busy
                    # handler sleeps up to 100 ms at a time, which convoys eight writers.
                    busy += 1
                    time.sleep(random.uniform(0.0002, min(0.0005 * 1.5**busy, 0.01)))
                    continue
                attempt += 1
                if not is_transient(exc) or attempt >= MAX_ATTEMPTS:
                    raise
            time.sleep(random.uniform(0, min(0.002 * 2 ** min(attempt, 7), 0.25)))

    @staticmethod
    def _run_autocommit(engine: Engine, work: Callable[[Connection], T]) -> T:
        with engine.connect() as conn:
            return work(conn)

    def _run_once(self, work: Callable[[Connection], T], *, write: bool) -> T:
        if write and self._writer_mutex is not None:
            with self._writer_mutex:
                return self._run_once_unlocked(work, write=write)
        return self._run_once_unlocked(work, write=write)

    def _run_once_unlocked(self, work: Callable[[Connection], T], *, write: bool) -> T:
        with self.engine.connect() as conn:
            if write:
                conn.execution_options(acid_begin="IMMEDIATE")
            elif self.dialect != "sqlite":
                conn.execution_options(isolation_level="REPEATABLE READ")
            trans = conn.begin()
            try:
                result = work(conn)
            except CommitAndRaise as car:
                trans.commit()
                raise car.error from None
            except BaseException:
                trans.rollback()
                raise
            trans.commit()
            return result

    # ------------------------------------------------------------------ sequences
    def allocate(self, conn: Connection, name: str, n: int = 1) -> int:
        """Take ``n`` consecutive ids from sequence ``name``; returns the first.

        The sequence row stays locked until the surrounding transaction ends, so ids become
        visible in allocation order (the lock queue relies on this).
        """
        if self._update_returning:
            new_next: int = conn.execute(
                _ALLOCATE_RETURNING, {"b_name": name, "b_n": n}
            ).scalar_one()
            return int(new_next) - n
        first: int = conn.execute(_LOCK_SEQUENCE, {"b_name": name}).scalar_one()
        conn.execute(_SET_SEQUENCE, {"b_name": name, "b_value": first + n})
        return int(first)

    def lock_sequence(self, conn: Connection, name: str) -> int:
        """Lock sequence ``name`` (a mutex, like Hive's S4U on NEXT_TXN_ID); returns next value."""
        return int(conn.execute(_LOCK_SEQUENCE, {"b_name": name}).scalar_one())

    @staticmethod
    def peek_sequence(conn: Connection, name: str) -> int:
        """Next value of a sequence, without locking it."""
        return int(conn.execute(_PEEK_SEQUENCE, {"b_name": name}).scalar_one())


class _FileMutex:
    """Writers of one SQLite file queue on a blocking ``flock`` (and a thread lock).

    SQLite's own busy handling polls with sleeps, which convoys when eight processes write at
    once; a kernel lock hands over to the next writer as soon as the last one commits. The
    kernel drops the lock of a killed process. BEGIN IMMEDIATE still guards correctness on its
    own (other SQLite clients need not know this file).
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._pid = os.getpid()

    def __enter__(self) -> None:
        self._thread_lock.acquire()
        try:
            if self._fd is None or self._pid != os.getpid():
                self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
                self._pid = os.getpid()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = None


def _writer_mutex(url: str) -> _FileMutex | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    if fcntl is None:  # pragma: no cover - Windows: SQLite's own locking only
        return None
    return _FileMutex(os.path.abspath(str(parsed.database)) + ".writer-lock")


def tuples(result: Any) -> list[tuple[Any, ...]]:
    """Rows of a result as plain tuples of ``Any`` (SQLAlchemy types them ``object``)."""
    return [tuple(row) for row in result]


def normalize_url(url: str) -> str:
    """Pick the drivers this project's extras install: psycopg 3 for PostgreSQL
    (``[postgres]``), PyMySQL for MySQL and MariaDB (``[mysql]``); without the extra,
    :class:`~acid_platform.errors.MissingExtraError` names it."""
    parsed = make_url(url)
    driver = parsed.drivername
    if driver.split("+")[0] in ("postgresql", "postgres"):
        if "+" not in driver:
            parsed = parsed.set(drivername="postgresql+psycopg")
        if parsed.drivername == "postgresql+psycopg":
            require("psycopg", "postgres", "a PostgreSQL metastore")
    elif driver.split("+")[0] in ("mysql", "mariadb"):
        if "+" not in driver:
            parsed = parsed.set(drivername=f"{driver}+pymysql")
        if parsed.drivername.endswith("+pymysql"):
            require("pymysql", "mysql", "a MySQL / MariaDB metastore")
    return parsed.render_as_string(hide_password=False)


def open_store(url: str, *, clock: Callable[[], float] | TimeSource | None = None) -> Store:
    """A :class:`Store` for ``url``; a URL that names no usable database raises
    :class:`~acid_platform.errors.MetastoreUnavailableError`."""
    try:
        return Store(url, clock=clock)
    except (ArgumentError, ValueError) as exc:  # ValueError: a port that is not a number
        raise MetastoreUnavailableError(
            f"{masked_url(url)} is not a metastore URL: {exc}"
        ) from None
    except OSError as exc:
        raise MetastoreUnavailableError(
            f"cannot open the metastore {masked_url(url)}: {exc.strerror or exc}"
        ) from None


def unavailable(url: str, exc: DBAPIError) -> MetastoreUnavailableError:
    """The typed error for a metastore that fails on first use (unreachable, not a database)."""
    reason = " ".join(str(exc.orig).split()) or type(exc.orig).__name__
    if "file is not a database" in reason:
        reason += " (the metastore file is damaged, or is not a metastore)"
    return MetastoreUnavailableError(f"cannot use the metastore {masked_url(url)}: {reason}")


def masked_url(url: str) -> str:
    """``url`` with its password masked (``***``), for messages and reprs; text that does not
    parse as a URL is masked after its ``scheme://user:``.

    >>> masked_url("postgresql+psycopg://acid:s3cret@db:5432/metastore")
    'postgresql+psycopg://acid:***@db:5432/metastore'
    >>> masked_url("postgresql://acid:s3cret@db:notaport/m")
    'postgresql://acid:***@db:notaport/m'
    """
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url))


def _sqlite_read_only(url: str) -> bool:
    """Whether ``url`` is an existing SQLite file this process cannot write (a read-only
    mount, a file or directory without write permission)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return False
    path = os.path.abspath(str(parsed.database))
    if not os.path.isfile(path):
        return False
    return not (os.access(path, os.W_OK) and os.access(os.path.dirname(path), os.W_OK))


def _create_engine(url: str, *, read_only: bool = False) -> Engine:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite" and read_only:
        # A read-only directory refuses the -shm / -wal files SQLite makes for a WAL database.
        # Closed cleanly, the database has none: open it immutable (its file alone is the
        # whole truth). With a -wal file left (a writer elsewhere, a crash) SQLite reads it
        # read-only, so no committed transaction of it is missed.
        path = os.path.abspath(str(parsed.database))
        immutable = "&immutable=1" if not os.path.exists(f"{path}-wal") else ""
        return create_engine(
            f"sqlite:///file:{path}?mode=ro{immutable}&uri=true",
            connect_args={"check_same_thread": False},
        )
    if backend == "sqlite":
        synchronous = str(parsed.query.get("synchronous", "full")).upper()
        if synchronous not in ("NORMAL", "FULL", "EXTRA"):
            raise MetastoreError(
                f"sqlite metastore: synchronous={synchronous.lower()!r} is not one of "
                "normal, full, extra"
            )
        parsed = parsed.difference_update_query(["synchronous"])
        return _create_sqlite_engine(
            parsed.render_as_string(hide_password=False),
            in_memory=parsed.database in (None, "", ":memory:"),
            synchronous=synchronous,
        )
    if backend == "postgresql":
        return create_engine(url, isolation_level="READ COMMITTED", pool_size=4, max_overflow=4)
    if backend in ("mysql", "mariadb"):
        return create_engine(
            url,
            isolation_level="READ COMMITTED",
            pool_size=4,
            max_overflow=8,
            pool_recycle=3600,
        )
    raise MetastoreError(
        f"unsupported metastore database {backend!r} in {parsed.render_as_string()}; "
        "use sqlite, postgresql or mysql/mariadb"
    )


def _create_sqlite_engine(url: str, *, in_memory: bool, synchronous: str) -> Engine:
    kwargs: dict[str, Any] = {
        "connect_args": {"timeout": SQLITE_HANDLER_BUSY_MS / 1000, "check_same_thread": False}
    }
    if in_memory:
        kwargs["poolclass"] = StaticPool
    else:
        database = make_url(url).database or ""
        parent = os.path.dirname(os.path.abspath(database))
        os.makedirs(parent, exist_ok=True)
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module: we issue BEGIN ourselves.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {SQLITE_HANDLER_BUSY_MS}")
        if not in_memory:
            _enable_wal(cur)
        # In WAL mode NORMAL never corrupts and survives process crashes; FULL also survives
        # power loss (no write id handed out twice after a crash), at one fsync per commit.
        cur.execute(f"PRAGMA synchronous = {synchronous}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("acid_begin")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if mode == "IMMEDIATE" else "BEGIN")

    return engine


def _enable_wal(cur: Any) -> None:
    """Switch a new SQLite file to WAL; the switch does not wait on the busy handler, so retry."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            mode = cur.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() == "wal" or cur.execute("PRAGMA journal_mode = WAL").fetchone():
                return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.001, 0.02))


def is_sqlite_busy(exc: DBAPIError) -> bool:
    """SQLite could not get its lock in time (another writer holds it)."""
    message = str(exc.orig).lower()
    return isinstance(exc.orig, sqlite3.OperationalError) and any(
        text in message for text in _TRANSIENT_SQLITE_TEXT
    )


def is_transient(exc: DBAPIError) -> bool:
    """A failure that goes away when the unit of work is run again."""
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if sqlstate in _TRANSIENT_SQLSTATES:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _TRANSIENT_MYSQL_CODES:
        return True
    message = str(orig).lower()
    return any(text in message for text in _TRANSIENT_SQLITE_TEXT)


def _dispose_after_fork(engine: Engine) -> None:
    """A forked child must not share pooled connections with its parent."""
    ref = weakref.ref(engine)

    def _after_fork() -> None:
        eng = ref()
        if eng is not None:
            eng.dispose(close=False)

    os.register_at_fork(after_in_child=_after_fork)
