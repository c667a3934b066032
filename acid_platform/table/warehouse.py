"""``TableWarehouse``: a directory of Hive ACID tables plus the metastore that makes them transactional.

It is the base of the user's class, ``acid_platform.Warehouse`` (this one with the embedded
engine and HiveQL); on its own it cannot open (it names no engine). Open the user's:

>>> import tempfile
>>> from acid_platform import Warehouse
>>> wh = Warehouse.open(tempfile.mkdtemp())
>>> t = wh.create_table("employee", [("id", "int"), ("name", "string"), ("salary", "int")])
>>> t.insert([{"id": 1, "name": "Jerry", "salary": 5000}]).rows_inserted
1
>>> with wh.transaction():
...     _ = t.update({"salary": "salary + 1000"}, "id = 1")
...     _ = t.insert([{"id": 2, "name": "Tom", "salary": 6000}])
>>> sorted(t.scan(columns=["id", "salary"]).to_arrow().to_pylist(), key=lambda r: r["id"])
[{'id': 1, 'salary': 6000}, {'id': 2, 'salary': 6000}]
>>> wh.close()

Layout follows Hive: tables of the ``default`` database live in ``<root>/<table>``, other
databases in ``<root>/<db>.db/<table>``; partitions below that as ``k=v`` directories.
``wh.conf`` holds session settings (what SQL ``SET k=v`` writes): ``hive.merge.cardinality.check``,
``hive.txn.xlock.write``, ``hive.txn.xlock.iow``, ``acid.lock.wait.timeout.s`` (seconds a
statement waits for its locks), ``acid.scan.read.lease`` (register scans with the cleaner),
``hive.txn.timeout`` (the metastore's transaction time-out, see :meth:`TableWarehouse.set_conf`),
``hive.transactional.events.mem`` (delete events a scan holds before it merges them in key
order, ``format.delete_merge``).

A warehouse object is one session: it holds at most one open multi-statement transaction and is
not meant to be shared between threads (open one per thread; they can share the metastore).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Self

import pyarrow as pa
import pyarrow.fs as pafs
from sqlglot import exp

from acid_platform.errors import (
    AlreadyExistsError,
    InvalidNameError,
    InvalidSettingError,
    NoSuchObjectError,
    TransactionStateError,
    WarehouseLocationError,
)
from acid_platform.format.fs import join, resolve
from acid_platform.format.storage import StorageOptions, configure, options_for
from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec
from acid_platform.metastore.clock import TXN_TIMEOUT, parse_duration_s
from acid_platform.metastore.model import FILE_FORMAT_PROPERTY
from acid_platform.metastore.names import DEFAULT_DATABASE, split_table_name
from acid_platform.table.catalog_ops import (
    WarehouseCatalog,
    require_warehouse,
    warehouse_root,
)
from acid_platform.table.deprecation import deprecated
from acid_platform.table.engine import Engine
from acid_platform.table.locations import claim_table_dir, claim_warehouse, release_table_dir
from acid_platform.table.native import NativeEngines
from acid_platform.table.partition_cache import KnownPartitions
from acid_platform.table.query import bind_query
from acid_platform.table.schema import NOT_NULL_PROPERTY, RESERVED_PREFIX, storage_properties
from acid_platform.table.statement import read_snapshot, statement_guard
from acid_platform.table.table import Table
from acid_platform.table.transaction import Transaction, ledger_of

#: Session settings and their defaults (Hive's where Hive has one).
DEFAULT_CONF: Mapping[str, str] = {
    "hive.merge.cardinality.check": "true",
    "hive.txn.xlock.write": "true",
    "hive.txn.xlock.iow": "true",
    "acid.lock.wait.timeout.s": "60",
    "acid.scan.read.lease": "true",
}
#: Table properties every new table gets (full ACID, Hive 3+ bucketing hash).
DEFAULT_TABLE_PROPERTIES: Mapping[str, str] = {
    "transactional": "true",
    "transactional_properties": "default",
    "bucketing_version": "2",
}


class TableWarehouse(WarehouseCatalog):
    """Tables, transactions and the engine of one warehouse (see module docs); databases,
    partitions and SHOW / ABORT calls come from :class:`.catalog_ops.WarehouseCatalog`."""

    default_database = DEFAULT_DATABASE

    def __init__(
        self,
        root: str,
        metastore: Metastore,
        engine: Engine | None = None,
        conf: Mapping[str, str] | None = None,
    ) -> None:
        self.root = warehouse_root(root)
        self._root = resolve(self.root)
        self.metastore = metastore
        self.engine: Engine = engine if engine is not None else self.default_engine()
        #: Engines that take their own data whole (Spark DataFrames): see :mod:`.native`.
        self.native_engines = NativeEngines()
        #: What runs this warehouse's own compactions (``ALTER TABLE … COMPACT … AND WAIT``):
        #: ``None`` for the embedded executor; an engine registered above this layer (Spark)
        #: sets a function of the settings (``conf``) that returns the executor to use, so
        #: ``SET acid.compactor.*`` applies (see :mod:`acid_platform.compaction.executors`).
        self.compaction_executor: Callable[[Mapping[str, str]], object] | None = None
        self.conf: dict[str, str] = dict(DEFAULT_CONF)
        for key, value in dict(conf or {}).items():
            self.set_conf(key, value)
        self._txn: Transaction | None = None
        #: Partitions known to exist, per table (see :func:`.statement.register_partitions`).
        self.known_partitions = KnownPartitions(self.metastore)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        metastore_url: str | None = None,
        *,
        engine: Engine | None = None,
        conf: Mapping[str, str] | None = None,
        create: bool = True,
        txn_timeout_s: float | None = None,
        storage: StorageOptions | None = None,
    ) -> Self:
        """Open the warehouse at ``path`` (local directory or URI), creating it if needed unless
        ``create`` is False (then a missing one raises :class:`NoSuchWarehouseError`).

        Without ``metastore_url`` a local warehouse uses the SQLite metastore
        ``<path>/_metastore.db``; a remote one (``s3://…``) needs a ``metastore_url``.
        ``txn_timeout_s`` is ``hive.txn.timeout`` (default 300 s): transactions heartbeat every
        half of it, and a housekeeper with the same setting reaps them after it.
        ``storage`` configures an object store's endpoint and credentials (default: the AWS
        environment variables; see :mod:`acid_platform.format.storage`).
        """
        text = os.fspath(path)
        if text.startswith("file://"):
            text = text[len("file://") :]
        if "://" in text and storage is not None:  # else: this process's, or the environment's
            configure(text, storage)
        if not create:
            require_warehouse(text, metastore_url)
        remote = "://" in text
        if remote and metastore_url is None:
            raise WarehouseLocationError(
                f"warehouse {text}: a remote warehouse needs a metastore_url (SQLite lives on local disk)"
            )
        if not remote:
            _make_local_root(text)
        else:
            _make_remote_root(text)
        timeout: dict[str, Any] = {} if txn_timeout_s is None else {"txn_timeout_s": txn_timeout_s}
        if metastore_url is None:
            metastore = Metastore.for_warehouse(text, **timeout)
        else:
            metastore = Metastore(metastore_url, **timeout)
        wh = cls(text, metastore, engine, conf)
        try:
            if not metastore.read_only:  # a read-only one can write nothing, nor claim
                claim_warehouse(resolve(wh.root), metastore.identity())
                wh.metastore.create_database(DEFAULT_DATABASE, location=wh.root, if_not_exists=True)
        except BaseException:
            metastore.close()
            raise
        return wh

    def set_conf(self, key: str, value: str) -> None:
        """``SET key=value``. ``hive.txn.timeout`` (``300``, ``30s``, ``5m``) is also the
        metastore's transaction time-out from now on: the heartbeat pace of new transactions,
        and how long a silent transaction may block a lock request before it is aborted."""
        if key == TXN_TIMEOUT:
            seconds = parse_duration_s(key, value)
            if seconds <= 0:
                raise InvalidSettingError(f"{key}={value!r} must be positive")
            self.metastore.txn_timeout_s = seconds
        self.conf[key] = value

    # ------------------------------------------------------------------ catalog (more in WarehouseCatalog)
    def create_table(
        self,
        name: str,
        columns: Sequence[tuple[str, str]] | pa.Schema,
        *,
        partition_columns: Sequence[tuple[str, str]] | pa.Schema = (),
        bucket_columns: Sequence[str] = (),
        num_buckets: int = 0,
        properties: Mapping[str, str] | None = None,
        not_null: Sequence[str] = (),
        if_not_exists: bool = False,
        stored_as: str | None = None,
    ) -> Table:
        """CREATE TABLE … STORED AS ORC TBLPROPERTIES ('transactional'='true').

        ``columns`` are ``(name, hive type)`` pairs or an Arrow schema; ``partition_columns``
        likewise (PARTITIONED BY); ``bucket_columns`` + ``num_buckets`` give CLUSTERED BY …
        INTO n BUCKETS; ``not_null`` lists NOT NULL columns. An insert-only table
        (``properties={'transactional_properties': 'insert_only'}``) may be ``stored_as``
        ``'parquet'`` or ``'textfile'`` too (see docs/insert_only.md).
        """
        self.require_no_transaction("CREATE TABLE")
        db, table = split_table_name(name)
        cols = _columns(columns)
        parts = _columns(partition_columns)
        for col, _ in cols + parts:
            if col.lower().startswith(RESERVED_PREFIX):
                raise InvalidNameError(
                    f"table {db}.{table}: column names starting with {RESERVED_PREFIX!r} are reserved"
                )
        props = dict(DEFAULT_TABLE_PROPERTIES) | dict(properties or {})
        if stored_as is not None:
            props[FILE_FORMAT_PROPERTY] = stored_as
        props = storage_properties(f"{db}.{table}", props, cols)
        all_cols = {c.lower() for c, _ in cols + parts}
        missing = [c for c in not_null if c.lower() not in all_cols]
        if missing:
            raise NoSuchObjectError(
                f"table {db}.{table}: NOT NULL column(s) {missing} are not columns of the table"
            )
        if not_null:
            props[NOT_NULL_PROPERTY] = ",".join(dict.fromkeys(c.lower() for c in not_null))
        database = self.metastore.get_database(db)
        db_location = database.location or (
            self.root if db == DEFAULT_DATABASE else join(self.root, f"{db}.db")
        )
        if if_not_exists and table in self.metastore.list_tables(db):
            return Table(self, self.metastore.get_table(db, table))
        base = join(db_location, table)
        fs = resolve(base, self.filesystem_for(base)).filesystem
        location = claim_table_dir(fs, resolve(base, fs).path)
        if "://" in base:  # keep the URI form the database location has
            location = base + location[len(resolve(base, fs).path) :]
        spec = TableSpec(
            db,
            table,
            tuple(cols),
            tuple(parts),
            tuple(bucket_columns),
            num_buckets,
            int(props.get("bucketing_version", "2")),
            location,
            props,
        )
        try:
            self.metastore.create_table(spec, if_not_exists=if_not_exists)
        except AlreadyExistsError as exc:
            release_table_dir(fs, resolve(location, fs).path)
            raise AlreadyExistsError(f"table {db}.{table} already exists") from exc
        except BaseException:
            release_table_dir(fs, resolve(location, fs).path)
            raise
        spec = self.metastore.get_table(db, table)
        if spec.location != location:  # CREATE … IF NOT EXISTS lost a race: not our directory
            release_table_dir(fs, resolve(location, fs).path)
        return Table(self, spec)

    def drop_table(self, name: str, if_exists: bool = False, purge: bool = True) -> None:
        """DROP TABLE (under an EXCLUSIVE lock); ``purge`` also deletes its directory."""
        self.require_no_transaction("DROP TABLE")
        db, table = split_table_name(name)
        try:
            spec = self.metastore.get_table(db, table)
        except NoSuchObjectError:
            if if_exists:
                return
            raise
        loc = resolve(spec.location, self.filesystem_for(spec.location))
        # Only a directory that exists before the drop commits is deleted after it: a new
        # table of the same name never gets it (see .locations.claim_table_dir).
        existed = loc.filesystem.get_file_info(loc.path).type != pafs.FileType.NotFound
        txn = Transaction(self)
        try:
            ledger_of(txn).lock([LockComponent(LockType.EXCLUSIVE, db, table)])
            self.metastore.drop_table(db, table)
            txn.commit()
        finally:
            self.end_transaction(txn)
            if txn.is_open:
                txn.rollback()
        self.known_partitions.forget(spec.full_name)
        if purge and existed:
            with suppress(FileNotFoundError):
                loc.filesystem.delete_dir(loc.path)

    def set_table_location(self, name: str, location: str) -> TableSpec:
        """ALTER TABLE … SET LOCATION: an empty table's directory moves to ``location`` inside
        the warehouse (see :mod:`acid_platform.table.relocate`)."""
        from acid_platform.table.relocate import set_table_location

        return set_table_location(self, name, location)

    def table(self, name: str) -> Table:
        """The table ``name`` (``"db.table"`` or ``"table"`` in ``default``)."""
        db, table = split_table_name(name)
        return Table(self, self.table_spec(db, table))

    def query(self, sql: str | exp.Query) -> pa.Table:
        """Run a Hive SELECT (text, or a sqlglot syntax tree) over warehouse tables in one
        snapshot (the open transaction's, or a fresh one) on the engine; returns Arrow.

        >>> # wh.query("SELECT dept, count(*) AS n FROM emp GROUP BY dept")
        """
        with statement_guard(self):
            bound = bind_query(self, sql)
        with read_snapshot(self, bound.tables) as snapshots:
            return bound.run(
                self,
                lambda spec: Table(self, spec).scan(snapshot=snapshots[spec.full_name]).to_arrow(),
            )

    # ------------------------------------------------------------------ transactions
    def transaction(self) -> Transaction:
        """START TRANSACTION: open a multi-statement transaction, which the statements share
        until it commits or rolls back. Use it as ``with wh.transaction(): …`` (commit at the
        end, roll back on an exception), or end it with :meth:`commit` / :meth:`rollback`.
        With native engines registered (``register_spark``) it is shared with them: Spark SQL's
        statements on the session's tables by name join it (see
        :class:`~acid_platform.table.transaction.SharedTransaction`)."""
        if self._txn is not None:
            raise TransactionStateError(
                f"a transaction is already open (txn {self._txn.id}); commit or roll it back first"
            )
        txn = self._txn = Transaction(self, explicit=True)
        if len(self.native_engines):  # Spark SQL's statements join it
            try:
                self.native_engines.share_transaction(ledger_of(txn).share())
            except BaseException:
                txn.rollback()
                self._txn = None
                raise
        return txn

    def begin(self) -> Transaction:
        """Deprecated alias of :meth:`transaction` (removed in the next release)."""
        deprecated("TableWarehouse.begin()", "transaction()")
        return self.transaction()

    def commit(self) -> None:
        """COMMIT the open transaction."""
        txn = self._require_txn("COMMIT")
        try:
            txn.commit()
        finally:
            self.end_transaction(txn)

    def rollback(self) -> None:
        """ROLLBACK the open transaction."""
        txn = self._require_txn("ROLLBACK")
        try:
            txn.rollback()
        finally:
            self.end_transaction(txn)

    @property
    def in_transaction(self) -> bool:
        """Whether a multi-statement transaction is open."""
        return self._txn is not None

    @property
    def current_transaction(self) -> Transaction | None:
        """The open multi-statement transaction, if any."""
        return self._txn

    @classmethod
    def default_engine(cls) -> Engine:
        """The engine :meth:`open` uses when none is given. The table layer knows no engine
        (engines sit above it): ``acid_platform.Warehouse`` answers the embedded one."""
        raise TypeError(
            f"{cls.__name__}.open needs an engine (acid_platform.Warehouse has a default)"
        )

    def close(self) -> None:
        """Roll back an open transaction and release the engine and metastore."""
        if self._txn is not None:
            self.rollback()
        self.engine.close()
        self.metastore.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TableWarehouse({self.root!r})"

    # ------------------------------------------------------------------ internals
    def filesystem_for(self, location: str) -> pafs.FileSystem | None:
        """The warehouse's file system for locations under its root (else ``None``: resolve)."""
        if "://" in location:
            return self._root.filesystem if location.startswith(self.root) else None
        return self._root.filesystem if "://" not in self.root else None

    @property
    def storage(self) -> StorageOptions | None:
        """The object-store options of a remote warehouse (``None`` for local disk)."""
        return options_for(self.root) if "://" in self.root else None

    def end_transaction(self, txn: Transaction) -> None:
        """Forget ``txn`` as the open transaction (it committed or aborted)."""
        if self._txn is txn:
            self._txn = None
            if ledger_of(txn).shared:
                self.native_engines.share_transaction(None)

    def _require_txn(self, what: str) -> Transaction:
        if self._txn is None:
            raise TransactionStateError(f"{what}: no transaction is open")
        return self._txn


def _columns(columns: Sequence[tuple[str, str]] | pa.Schema) -> list[tuple[str, str]]:
    if isinstance(columns, pa.Schema):
        from acid_platform.format import to_hive_type

        return [(f.name, to_hive_type(f.type)) for f in columns]
    return [(str(c), str(t)) for c, t in columns]


def _make_local_root(path: str) -> None:
    """Create the directory of a local warehouse (or find it there); a file in its place, or
    a directory that cannot be made, is a :class:`WarehouseLocationError`."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise WarehouseLocationError(f"warehouse path {path} is a file, not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise WarehouseLocationError(
            f"cannot create the warehouse directory {path}: {exc.strerror or exc}"
        ) from None


def _make_remote_root(uri: str) -> None:
    """Create the root of a warehouse in an object store (or find it there); a scheme no file
    system serves, or a store that cannot be reached, is a :class:`WarehouseLocationError`."""
    try:
        loc = resolve(uri)
        loc.filesystem.create_dir(loc.path, recursive=True)
    except (pa.ArrowException, OSError) as exc:
        reason = " ".join(str(exc).split())
        raise WarehouseLocationError(f"cannot use the warehouse location {uri}: {reason}") from None


__all__ = ["DEFAULT_CONF", "DEFAULT_DATABASE", "DEFAULT_TABLE_PROPERTIES", "TableWarehouse"]
