"""One way to reach files: ``pyarrow.fs``.

Every byte the format layer reads or writes goes through a ``pyarrow.fs.FileSystem`` so the same
code serves local disk, HDFS and S3. A location is a local path or a URI (``file:///``, ``s3://``,
``hdfs://``). Nothing here renames: visibility comes from snapshots, not from moves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.fs as pafs


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
