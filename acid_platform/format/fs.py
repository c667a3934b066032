"""One way to reach files: ``pyarrow.fs``.

Every byte the format layer reads or writes goes through a ``pyarrow.fs.FileSystem`` so the same
code serves local disk, HDFS and S3. A location is a local path or a URI (``file:///``, ``s3://``,
``hdfs://``); an object store's endpoint and credentials come from
:mod:`acid_platform.format.storage`. Nothing here renames: visibility comes from snapshots, not from moves.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import FileConflictError
from acid_platform.format.storage import filesystem_for, path_in_store


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
    remote = "://" in text
    if filesystem is not None:
        return Location(filesystem, path_in_store(text) if remote else text.rstrip("/") or "/")
    if remote:
        return Location(filesystem_for(text), path_in_store(text))
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


#: Object-store files up to this size are read with one request, whole (an ORC reader makes
#: many small ranged reads per file: tail, footer, then each stripe's streams, block by block).
WHOLE_READ_BYTES = 64 << 20


def is_object_store(filesystem: pafs.FileSystem) -> bool:
    """Whether ``filesystem`` is an object store (no directories, no append, no rename)."""
    return filesystem.type_name in ("s3", "gcs")


#: A larger object-store file is read in windows of this size (one GET each), the last
#: :data:`READ_WINDOWS` of them kept: ORC decodes a stripe's column streams side by side, block
#: by block, so its reads move forward in several places of the file at once.
READ_WINDOW_BYTES = 8 << 20
READ_WINDOWS = 8


def open_for_reading(filesystem: pafs.FileSystem, path: str) -> pa.NativeFile:
    """A random-access reader of ``path``; an object-store file is fetched whole when small,
    else through a :class:`WindowedReader`."""
    f = filesystem.open_input_file(path)
    if not is_object_store(filesystem):
        return f
    if f.size() <= WHOLE_READ_BYTES:
        with f:
            return pa.BufferReader(f.read_buffer())
    return pa.PythonFile(WindowedReader(f, READ_WINDOW_BYTES, READ_WINDOWS), mode="r")


class WindowedReader:
    """A file-like reader over a random-access file that fetches aligned ``window``-byte
    windows (one request each) and keeps the ``keep`` most recently used, serving reads from
    them (one request per window on an object store instead of one per small read)."""

    def __init__(self, raw: pa.NativeFile, window: int, keep: int) -> None:
        self._raw = raw
        self._size = raw.size()
        self._window = window
        self._keep = keep
        self._windows: OrderedDict[int, bytes] = OrderedDict()
        self._pos = 0
        self.closed = False
        self.fetches = 0

    def size(self) -> int:
        return self._size

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, min(self._size, base + offset))
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        start, self._pos = self._pos, end
        if end - start > self._window:  # larger than a window: straight through
            return bytes(self._raw.read_at(end - start, start))
        parts = []
        first, last = start // self._window, max(start, end - 1) // self._window
        for index in range(first, last + 1):
            data = self._fetch(index)
            lo = max(start - index * self._window, 0)
            hi = min(end - index * self._window, len(data))
            parts.append(data[lo:hi])
        return b"".join(parts)

    def _fetch(self, index: int) -> bytes:
        data = self._windows.get(index)
        if data is None:
            offset = index * self._window
            data = bytes(self._raw.read_at(min(self._window, self._size - offset), offset))
            self.fetches += 1
            self._windows[index] = data
            if len(self._windows) > self._keep:
                self._windows.popitem(last=False)
        else:
            self._windows.move_to_end(index)
        return data

    def close(self) -> None:
        self._raw.close()
        self._windows.clear()
        self.closed = True


def make_dirs(filesystem: pafs.FileSystem, path: str) -> None:
    """Create directory ``path`` (and its parents) where directories exist: an object store has
    none (a key's prefix is its directory), so nothing is written there."""
    if not is_object_store(filesystem):
        filesystem.create_dir(path, recursive=True)


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
    elif is_object_store(filesystem):  # one HEAD (get_file_info would also list the prefix)
        try:
            filesystem.open_input_file(path).close()
        except FileNotFoundError:
            pass
        else:
            raise FileConflictError(f"{path} exists already; nothing was replaced")
    elif filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        raise FileConflictError(f"{path} exists already; nothing was replaced")
    return filesystem.open_output_stream(path)
