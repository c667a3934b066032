"""The warehouse's catalog and administration calls: databases, table existence, partitions,
and the metastore's SHOW / ABORT views, as typed methods of
:class:`~acid_platform.table.warehouse.TableWarehouse` (which inherits :class:`WarehouseCatalog`).

Front ends (the SQL layer, the CLI) call these instead of reaching into ``wh.metastore``.

>>> import tempfile
>>> from acid_platform import Warehouse
>>> wh = Warehouse.open(tempfile.mkdtemp())
>>> wh.create_database("hr")
>>> wh.database_exists("hr"), wh.table_exists("hr.employee")
(True, False)
>>> wh.drop_database("hr")
>>> wh.list_databases()
['default']
>>> wh.close()
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from acid_platform.errors import (
    AlreadyExistsError,
    InvalidNameError,
    MetastoreError,
    NoSuchObjectError,
    NoSuchWarehouseError,
    UnsupportedOperationError,
)
from acid_platform.format.fs import join
from acid_platform.metastore import Metastore, TableSpec
from acid_platform.metastore.metastore import METASTORE_FILE
from acid_platform.metastore.names import (
    DEFAULT_DATABASE,
    choices_text,
    database_name_to_create,
    normalize_identifier,
)
from acid_platform.metastore.store import masked_url

if TYPE_CHECKING:
    from acid_platform.table.table import Table
    from acid_platform.table.transaction import Transaction


class _Warehouse(Protocol):
    """What the catalog calls need of the warehouse they are mixed into."""

    root: str
    metastore: Metastore

    @property
    def current_transaction(self) -> Transaction | None: ...

    def table(self, name: str) -> Table: ...

    def drop_table(self, name: str, if_exists: bool = False, purge: bool = True) -> None: ...

    def list_tables(self, db: str = DEFAULT_DATABASE) -> list[str]: ...

    def require_no_transaction(self, what: str) -> None: ...


class WarehouseCatalog:
    """Catalog and administration methods of a warehouse (mixed into ``TableWarehouse``)."""

    # ------------------------------------------------------------------ databases
    def create_database(
        self: _Warehouse, name: str, if_not_exists: bool = False, location: str | None = None
    ) -> None:
        """CREATE DATABASE (directory ``<root>/<name>.db`` unless ``location`` is given; a
        relative ``location`` is below the warehouse root, stored absolute)."""
        self.require_no_transaction("CREATE DATABASE")
        name = database_name_to_create(name)
        self.metastore.create_database(
            name,
            location=absolute_location(self.root, location or f"{name}.db"),
            if_not_exists=if_not_exists,
        )

    def list_databases(self: _Warehouse) -> list[str]:
        """Database names."""
        return self.metastore.list_databases()

    def database_exists(self: _Warehouse, name: str) -> bool:
        """Whether database ``name`` exists."""
        return normalize_identifier(name, "database name") in self.metastore.list_databases()

    def drop_database(
        self: _Warehouse, name: str, *, if_exists: bool = False, cascade: bool = False
    ) -> None:
        """DROP DATABASE [IF EXISTS] name [CASCADE]: with ``cascade`` each table is dropped first
        (under its own EXCLUSIVE lock, files purged); without it the database must be empty."""
        self.require_no_transaction("DROP DATABASE")
        name = normalize_identifier(name, "database name")
        if name == DEFAULT_DATABASE:
            raise UnsupportedOperationError("Can not drop default database")
        databases = self.metastore.list_databases()
        if name not in databases:
            if if_exists:
                return
            raise NoSuchObjectError(
                f"Database does not exist: {name}" + choices_text(name, databases, "databases")
            )
        tables = self.list_tables(name)
        if tables and not cascade:
            raise MetastoreError(
                f"Database {name} is not empty ({len(tables)} table(s)); use DROP DATABASE … CASCADE"
            )
        for table in tables:
            self.drop_table(f"{name}.{table}")
        self.metastore.drop_database(name, if_exists=if_exists, cascade=False)

    def list_tables(self: _Warehouse, db: str = DEFAULT_DATABASE) -> list[str]:
        """Table names of a database."""
        return self.metastore.list_tables(db)

    def table_spec(self: _Warehouse, db: str, table: str) -> TableSpec:
        """The catalog entry of ``db.table``; an unknown one raises NoSuchObjectError naming the
        tables the database has."""
        try:
            return self.metastore.get_table(db, table)
        except NoSuchObjectError as exc:
            try:
                names = self.metastore.list_tables(db)
            except NoSuchObjectError:
                hint = f"no database {db!r}"
            else:
                hint = ", ".join(names[:10]) + (" …" if len(names) > 10 else "") or "none"
            raise NoSuchObjectError(  # Hive's words first (ErrorMsg.INVALID_TABLE)
                f"Table not found '{table}': table {db}.{table} does not exist "
                f"(tables in {db}: {hint})"
            ) from exc

    def table_exists(self: _Warehouse, name: str) -> bool:
        """Whether table ``name`` (``"db.table"`` or ``"table"`` in ``default``) exists."""
        try:
            self.table(name)
        except NoSuchObjectError:
            return False
        return True

    def list_partitions(self: _Warehouse, name: str) -> list[str]:
        """Partition names (``k=v/…``) of table ``name``, as SHOW PARTITIONS lists them."""
        spec = self.table(name).spec
        return self.metastore.list_partitions(spec.db, spec.name)

    # ------------------------------------------------------------------ administration
    def show_transactions(self: _Warehouse) -> list[dict[str, Any]]:
        """Rows of SHOW TRANSACTIONS (open and aborted transactions; Hive's column names)."""
        return self.metastore.show_transactions()

    def show_locks(self: _Warehouse) -> list[dict[str, Any]]:
        """Rows of SHOW LOCKS (every lock component; Hive's column names)."""
        return self.metastore.show_locks()

    def show_compactions(self: _Warehouse) -> list[dict[str, Any]]:
        """Rows of SHOW COMPACTIONS (queue, then history; Hive's column names)."""
        return self.metastore.show_compactions()

    def abort_transactions(self: _Warehouse, txn_ids: Iterable[int]) -> list[int]:
        """ABORT TRANSACTIONS: abort open transactions of any session; returns those aborted."""
        return self.metastore.abort_transactions(list(txn_ids))

    def require_no_transaction(self: _Warehouse, what: str) -> None:
        """Refuse ``what`` (DDL) while a multi-statement transaction is open."""
        txn = self.current_transaction
        if txn is not None:
            raise UnsupportedOperationError(
                f"{what} is not allowed in a multi-statement transaction (txn {txn.id}); "
                "commit or roll back first"
            )


def absolute_location(root: str, location: str) -> str:
    """``location`` as stored: a URI or absolute path as given, a relative path below the
    warehouse ``root`` (the same in every process, whatever its working directory)."""
    if "://" in location or location.startswith("/"):
        return location.rstrip("/") or "/"
    relative = posixpath.normpath(location.replace(os.sep, "/"))
    if relative == ".." or relative.startswith("../") or relative == ".":
        raise InvalidNameError(
            f"location {location!r} is relative and leaves the warehouse {root}; give an "
            "absolute path or a URI"
        )
    return join(root, relative)


def warehouse_root(path: str) -> str:
    """The canonical root of a warehouse at ``path``: a URI as given (no trailing ``/``), a
    local path made absolute."""
    return path.rstrip("/") if "://" in path else os.path.abspath(path)


def warehouse_exists(path: str, metastore_url: str | None) -> bool:
    """Whether a warehouse exists at ``path``: the SQLite metastore file of a local warehouse,
    or (with ``metastore_url``) a metastore whose ``default`` database lives at ``path``.
    Creates nothing on disk. A metastore that holds the warehouse of another path raises
    :class:`~acid_platform.errors.AlreadyExistsError` (one metastore serves one warehouse)."""
    root = warehouse_root(path)
    if metastore_url is None:
        return "://" not in root and os.path.isfile(os.path.join(root, METASTORE_FILE))
    with Metastore(metastore_url) as metastore:
        try:
            location = metastore.get_database(DEFAULT_DATABASE).location
        except NoSuchObjectError:
            return False
    if location is not None and warehouse_root(location) != root:
        raise AlreadyExistsError(
            f"metastore {masked_url(metastore_url)} holds the warehouse at {location}, not {path}"
        )
    return True


def require_warehouse(path: str, metastore_url: str | None) -> None:
    """Raise :class:`~acid_platform.errors.NoSuchWarehouseError` unless
    :func:`warehouse_exists`."""
    if not warehouse_exists(path, metastore_url):
        where = f"no {METASTORE_FILE}" if metastore_url is None else "its metastore holds none"
        near = nearest_warehouses(path) if metastore_url is None else []
        if near:
            raise NoSuchWarehouseError(
                f"no warehouse at {path} ({where}); the nearest warehouse is {near[0]}"
                + (f" (also {', '.join(near[1:])})" if near[1:] else "")
                + f"; a new one at {path} is made by `acid init {path}` (or Warehouse.open(path))"
            )
        raise NoSuchWarehouseError(
            f"no warehouse at {path} ({where}); create it with `acid init {path}` "
            "(or Warehouse.open(path))"
        )


#: Entries of a directory looked at for warehouses beside a path that holds none.
NEAREST_SCAN_LIMIT = 2000


def nearest_warehouses(path: str, limit: int = 3) -> list[str]:
    """Local warehouses near ``path``, which holds none (a misspelt path): the warehouse
    ``path`` is inside of, if any; else those in the nearest existing directory above ``path``:
    the most similar name, and up to ``limit - 1`` more of similar names. None for a URI."""
    import difflib

    if "://" in path:
        return []
    root = warehouse_root(path)
    above = os.path.dirname(root)
    while True:  # a path inside a warehouse: that warehouse
        if os.path.isfile(os.path.join(above, METASTORE_FILE)):
            return [above]
        if os.path.dirname(above) == above:
            break
        above = os.path.dirname(above)
    base = os.path.dirname(root)
    while not os.path.isdir(base) and os.path.dirname(base) != base:
        base = os.path.dirname(base)
    try:
        with os.scandir(base) as entries:
            names = [e.name for _, e in zip(range(NEAREST_SCAN_LIMIT), entries, strict=False)]
    except OSError:
        return []
    found = [n for n in names if os.path.isfile(os.path.join(base, n, METASTORE_FILE))]
    name = os.path.basename(root)
    nearest = difflib.get_close_matches(name, found, n=1, cutoff=0.0)  # however unlike
    similar = difflib.get_close_matches(name, found, n=limit, cutoff=0.6)
    closest = nearest + [n for n in similar if n not in nearest][: limit - 1]
    return [os.path.join(base, n) for n in closest]


__all__ = [
    "WarehouseCatalog",
    "nearest_warehouses",
    "require_warehouse",
    "warehouse_exists",
    "warehouse_root",
]
