"""One way to reach files: ``pyarrow.fs``.

Every byte the format layer reads or writes goes through a ``pyarrow.fs.FileSystem`` so the same
code serves local disk, HDFS and S3. A location is a local path or a URI (``file:///``, ``s3://``,
``hdfs://``). Nothing here renames: visibility comes from snapshots, not from moves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import FileConflictError


@dataclass(frozen=True)
class Location:
    """A file system and a path inside it."""

    filesystem: pafs.FileSystem
    path: str

    def join(self, *parts: str) -> Location:
        return Location(self.filesystem, join(self.path, *parts))


def resolve(
    location: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None
) -> Location:
    """Resolve a local path or URI to a :class:`Location`.

    >>> resolve("/tmp/warehouse/t").path
    '/tmp/warehouse/t'
    """
    text = os.fspath(location)
    if filesystem is not None:
        return Location(filesystem, text.rstrip("/") or "/")
    if "://" in text:
        fs, path = pafs.FileSystem.from_uri(text)
        return Location(fs, path.rstrip("/") or "/")
    return Location(pafs.LocalFileSystem(), os.path.abspath(text))


def join(base: str, *parts: str) -> str:
    """Join path parts with ``/`` (pyarrow.fs paths always use forward slashes)."""
    out = base.rstrip("/")
    for p in parts:
        out = f"{out}/{p.strip('/')}" if out else p.strip("/")
    return out


def basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def parent(path: str) -> str:
    head = path.rstrip("/").rsplit("/", 1)[0]
    return head or "/"


def create_new(filesystem: pafs.FileSystem, path: str) -> pa.NativeFile:
    """Open ``path`` for writing, creating it exclusively: a file already there raises
    :class:`~acid_platform.errors.FileConflictError` instead of being replaced (writers never
    overwrite). On local disk the claim is atomic (``O_CREAT | O_EXCL``); other file systems
    check first (their create has no exclusive mode)."""
    if isinstance(filesystem, pafs.LocalFileSystem):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError as exc:
            raise FileConflictError(
                f"{path} exists already: another writer (or another metastore on this "
                "warehouse) wrote it; nothing was replaced"
            ) from exc
    elif filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        raise FileConflictError(f"{path} exists already; nothing was replaced")
    return filesystem.open_output_stream(path)
