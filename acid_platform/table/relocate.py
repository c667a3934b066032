"""``ALTER TABLE … SET LOCATION``: Hive 4's metadata change, kept inside the warehouse.

Hive 4 allows it on every table, transactional ones included (``AlterTableSetLocationAnalyzer``
takes a write id for the DDL): the location must be absolute (else ``BAD_LOCATION_VALUE``), and
only the metastore changes — no file moves, so the table then reads what the new directory
holds. Here the same change, with what keeps it safe:

* the new location must lie inside the warehouse (normalised, so ``..`` cannot leave it), not in
  a hidden directory, and must neither be nor contain nor lie inside another table's directory
  or a database's directory (no path leaves the warehouse, no table reads another's files);
* it must not exist or be an empty directory, and it is created (a table never adopts files it
  did not write: issue 13 item 4);
* the table must hold no data: Hive would leave its files behind and the table would read as
  empty, its committed writes lost to it (and their record here would make every read fail).
  Copy the rows with ``CREATE TABLE … AS SELECT`` instead. An empty table moves.

The change runs under an EXCLUSIVE lock on the table, as DROP TABLE does, so no write is under
way into the old directory while it is checked; the old directory (empty) is removed after.
"""

from __future__ import annotations

import contextlib
import posixpath
from typing import Protocol

import pyarrow.fs as pafs

from acid_platform.errors import InvalidNameError, UnsupportedOperationError
from acid_platform.format.fs import resolve
from acid_platform.metastore import LockComponent, LockType, TableSpec
from acid_platform.table.transaction import Transaction, TransactionHost, ledger_of


class _Named(Protocol):
    @property
    def spec(self) -> TableSpec: ...


class RelocateHost(TransactionHost, Protocol):
    """What ALTER TABLE … SET LOCATION needs of the warehouse session (a ``RelocateHost`` is
    one): declared here, so this module does not import the warehouse, which imports it."""

    @property
    def root(self) -> str: ...

    def table(self, name: str) -> _Named: ...

    def filesystem_for(self, location: str) -> pafs.FileSystem | None: ...

    def require_no_transaction(self, what: str) -> None: ...

    def list_databases(self) -> list[str]: ...

    def list_tables(self, db: str = ...) -> list[str]: ...


def set_table_location(warehouse: RelocateHost, name: str, location: str) -> TableSpec:
    """Change table ``name``'s location to ``location`` (see module docs); returns the spec."""
    what = f"ALTER TABLE {name} SET LOCATION"
    warehouse.require_no_transaction(what)
    spec = warehouse.table(name).spec
    new = _inside_warehouse(warehouse.root, location, what)
    _check_overlaps(warehouse, spec, new, what)
    new_loc = resolve(new, warehouse.filesystem_for(new))
    old_loc = resolve(spec.location, warehouse.filesystem_for(spec.location))
    if new_loc.path == old_loc.path:
        return spec
    txn = Transaction(warehouse)
    try:
        ledger_of(txn).lock([LockComponent(LockType.EXCLUSIVE, spec.db, spec.name)])
        if _entries(old_loc.filesystem, old_loc.path):
            raise UnsupportedOperationError(
                f"{what}: {spec.full_name} holds data in {spec.location}; Hive changes only the "
                "metastore and leaves those files behind, so the table would read as empty and "
                "lose its committed rows. Only an empty table's location is changed here; copy "
                "the rows with CREATE TABLE … AS SELECT instead"
            )
        _claim(new_loc.filesystem, new_loc.path, new, what)
        try:
            spec = warehouse.metastore.set_table_location(spec.db, spec.name, new)
            txn.commit()
        except BaseException:
            with contextlib.suppress(OSError):
                new_loc.filesystem.delete_dir(new_loc.path)
            raise
    finally:
        warehouse.end_transaction(txn)
        if txn.is_open:
            txn.rollback()
    warehouse.known_partitions.forget(spec.full_name)
    with contextlib.suppress(OSError):
        if not _entries(old_loc.filesystem, old_loc.path):
            old_loc.filesystem.delete_dir(old_loc.path)
    return spec


def _inside_warehouse(root: str, location: str, what: str) -> str:
    """``location`` normalised, if absolute and inside the warehouse ``root``."""
    text = location.strip()
    remote = "://" in text
    if not text or not (remote or text.startswith("/")):
        raise InvalidNameError(f"{text}  is not absolute.  Please specify a complete absolute uri.")
    if remote != ("://" in root):
        raise InvalidNameError(_outside(what, text, root))
    if remote:
        scheme, rest = text.split("://", 1)
        normal = f"{scheme}://{posixpath.normpath('/' + rest).lstrip('/')}"
    else:
        normal = posixpath.normpath(text)
    if normal == root.rstrip("/"):
        raise InvalidNameError(
            f"{what}: {text} is the warehouse root, database default's directory"
        )
    if not normal.startswith(root.rstrip("/") + "/"):
        raise InvalidNameError(_outside(what, text, root))
    relative = normal[len(root.rstrip("/")) + 1 :]
    if any(part.startswith(("_", ".")) for part in relative.split("/")):
        raise InvalidNameError(
            f"{what}: {text} is in a hidden directory of the warehouse (names starting with "
            "'_' or '.' are the warehouse's own)"
        )
    return normal


def _outside(what: str, location: str, root: str) -> str:
    return (
        f"{what}: {location} is outside the warehouse {root}; a table's files stay inside "
        "its warehouse"
    )


def _check_overlaps(warehouse: RelocateHost, spec: TableSpec, new: str, what: str) -> None:
    """Refuse a location that is, contains or lies inside another table's or a database's."""
    taken: list[tuple[str, str]] = []
    for db in warehouse.list_databases():
        location = warehouse.metastore.get_database(db).location
        if location:
            taken.append((f"database {db}", location.rstrip("/")))
        for table in warehouse.list_tables(db):
            other = warehouse.metastore.get_table(db, table)
            if other.full_name != spec.full_name:
                taken.append((f"table {other.full_name}", other.location.rstrip("/")))
    for owner, location in taken:
        database = owner.startswith("database")
        if new == location or location.startswith(new + "/"):
            raise InvalidNameError(f"{what}: {new} is or contains the directory of {owner}")
        if not database and new.startswith(location + "/"):
            raise InvalidNameError(f"{what}: {new} lies inside the directory of {owner}")


def _entries(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))  # type: ignore[no-any-return]


def _claim(fs: pafs.FileSystem, path: str, shown: str, what: str) -> None:
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File or (
        info.type == pafs.FileType.Directory and _entries(fs, path)
    ):
        raise UnsupportedOperationError(
            f"{what}: {shown} already holds files; a table never adopts files it did not write "
            "(give a new or empty directory)"
        )
    fs.create_dir(path, recursive=True)


__all__ = ["set_table_location"]
