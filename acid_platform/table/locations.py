"""Whose files are whose: one metastore per warehouse directory, one directory per table
incarnation.

* :func:`claim_warehouse`: the warehouse root carries ``_acid_metastore``, the identity of the
  metastore that serves it (written on first open). Opening it with another metastore raises
  :class:`~acid_platform.errors.WarehouseOwnershipError`: two metastores allocating the same
  write ids into one directory would write each other's files.
* :func:`claim_table_dir`: each CREATE TABLE gets a directory nobody used before: ``<name>``
  when it does not exist, else ``<name>.v<n>`` (as Hive 4 suffixes the location of a table
  re-created over a soft-deleted one). The directory is created exclusively, so a table never
  adopts files it did not write — a dropped table's leftovers (DROP without PURGE), or a DROP
  still deleting its directory after its metastore commit.

>>> import tempfile, os
>>> from acid_platform.format.fs import resolve
>>> root = resolve(tempfile.mkdtemp())
>>> claim_table_dir(root.filesystem, root.path + "/t").rsplit("/", 1)[-1]
't'
>>> claim_table_dir(root.filesystem, root.path + "/t").rsplit("/", 1)[-1]
't.v0000001'
"""

from __future__ import annotations

import contextlib
import hashlib
import os

import pyarrow.fs as pafs

from acid_platform.errors import WarehouseOwnershipError
from acid_platform.format.fs import Location, create_new, join

#: The file in a warehouse root naming the metastore that serves it.
OWNER_FILE = "_acid_metastore"
_MAX_INCARNATIONS = 10_000_000


def claim_warehouse(root: Location, metastore_id: str) -> None:
    """Mark ``root`` as served by metastore ``metastore_id``, or check that it is; another
    metastore's mark raises :class:`~acid_platform.errors.WarehouseOwnershipError`."""
    fs, path = root.filesystem, join(root.path, OWNER_FILE)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        try:
            with create_new(fs, path) as out:
                out.write(metastore_id.encode())
            return
        except FileExistsError:
            pass  # another process of the same (or another) metastore marked it first
        except OSError:
            return  # a read-only mount: nothing can be written into it either
    with fs.open_input_stream(path) as stream:
        owner = stream.read().decode("utf-8", "replace").strip()
    if owner != metastore_id:
        raise WarehouseOwnershipError(
            f"warehouse {root.path} belongs to another metastore (id {owner or '?'}), not to "
            f"this one (id {metastore_id}): one warehouse directory is served by one "
            "metastore; open it with its own metastore, or use another directory"
        )


def claim_table_dir(fs: pafs.FileSystem, base: str) -> str:
    """Create and return a directory for a new table: ``base`` if it does not exist, else the
    first free ``base.v<n>``; each is created exclusively (see module docs)."""
    parent = base.rsplit("/", 1)[0]
    fs.create_dir(parent, recursive=True)
    for n in range(_MAX_INCARNATIONS):
        path = base if n == 0 else f"{base}.v{n:07d}"
        if _create_exclusive_dir(fs, path):
            return path
    raise WarehouseOwnershipError(f"no free directory for a new table at {base}")


def release_table_dir(fs: pafs.FileSystem, path: str) -> None:
    """Remove a directory :func:`claim_table_dir` made, if it is still empty (the table's
    CREATE failed)."""
    if isinstance(fs, pafs.LocalFileSystem):
        with contextlib.suppress(OSError):
            os.rmdir(path)
        return
    if not fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        fs.delete_dir(path)


def _create_exclusive_dir(fs: pafs.FileSystem, path: str) -> bool:
    if isinstance(fs, pafs.LocalFileSystem):
        try:
            os.mkdir(path)
        except FileExistsError:
            return False
        return True
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        return False
    fs.create_dir(path, recursive=True)
    return True


def incarnation_of(location: str, created: int = 0) -> str:
    """A table incarnation's identity: its location (each CREATE TABLE claims a directory no
    live table uses: :func:`claim_table_dir`) and the metastore's creation time (a purged
    table's name may be claimed again). Twelve hex digits of their SHA-256.

    >>> incarnation_of("/wh/t", 1) != incarnation_of("/wh/t", 2) != incarnation_of("/wh/t.v1", 1)
    True
    """
    key = f"{location.rstrip('/')}\n{created}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


__all__ = [
    "OWNER_FILE",
    "claim_table_dir",
    "claim_warehouse",
    "incarnation_of",
    "release_table_dir",
]
