"""A pathlib-like handle on a file or directory of a warehouse, on whichever store it is (local
disk or an S3 server), so a test looks at what a table wrote the same way on both.

Everything goes through :func:`acid_platform.format.fs.resolve` (``pyarrow.fs``): an ``s3://``
location reaches the client configured for its bucket when the warehouse was opened.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.format.fs import Location, basename, parent, resolve


class StorePath:
    """A local path or store URI (``s3://bucket/key``); ``/`` joins parts as ``pathlib`` does."""

    __slots__ = ("_text",)

    def __init__(self, location: str | os.PathLike[str]) -> None:
        text = os.fspath(location)
        self._text = text.rstrip("/") if text.rstrip("/") else "/"

    def __fspath__(self) -> str:
        return self._text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"StorePath({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorePath) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)

    def __truediv__(self, part: str) -> StorePath:
        return StorePath(f"{self._text}/{part.strip('/')}")

    @property
    def name(self) -> str:
        return basename(self._text)

    @property
    def parent(self) -> StorePath:
        if "://" in self._text:
            return StorePath(self._text.rsplit("/", 1)[0])
        return StorePath(parent(self._text))

    @property
    def path(self) -> str:
        """The path inside its store, as the platform reports it (``bucket/key`` on S3)."""
        return self._loc().path

    def _loc(self) -> Location:
        return resolve(self._text)

    def _info(self) -> pafs.FileInfo:
        loc = self._loc()
        return loc.filesystem.get_file_info(loc.path)

    def exists(self) -> bool:
        return self._info().type != pafs.FileType.NotFound

    def is_file(self) -> bool:
        return self._info().type == pafs.FileType.File

    def size(self) -> int:
        info = self._info()
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(self._text)
        return int(info.size)

    def open(self) -> pa.NativeFile:
        """A random-access reader (for ``pyarrow.orc.ORCFile`` and the like)."""
        loc = self._loc()
        return loc.filesystem.open_input_file(loc.path)

    def open_output(self) -> pa.NativeFile:
        """A writer of the file (replacing it); its directory is created where directories
        exist."""
        loc = self._loc()
        if loc.filesystem.type_name == "local":
            loc.filesystem.create_dir(parent(loc.path), recursive=True)
        return loc.filesystem.open_output_stream(loc.path)

    def read_bytes(self) -> bytes:
        with self.open() as f:
            return bytes(f.read())

    def write_bytes(self, data: bytes) -> None:
        """Write (or replace) the file (see :meth:`open_output`)."""
        with self.open_output() as out:
            out.write(data)

    def unlink(self) -> None:
        loc = self._loc()
        loc.filesystem.delete_file(loc.path)

    def rmtree(self) -> None:
        """Delete the directory and everything below it (on an object store: the prefix)."""
        loc = self._loc()
        loc.filesystem.delete_dir(loc.path)

    def copy_to(self, dest: StorePath) -> None:
        """Copy this file to ``dest`` on the same store (its directory created where directories
        exist)."""
        loc = self._loc()
        if loc.filesystem.type_name == "local":
            loc.filesystem.create_dir(parent(dest.path), recursive=True)
        loc.filesystem.copy_file(loc.path, dest.path)

    def copytree(self, dest: StorePath) -> None:
        """Copy every file below this directory to the same place below ``dest``."""
        for rel in self.files():
            (self / rel).copy_to(dest / rel)

    def put_tree(self, local: str | os.PathLike[str]) -> None:
        """Upload every file below the local directory ``local`` to the same place below this
        directory."""
        for dirpath, _, filenames in os.walk(local):
            for name in filenames:
                rel = os.path.relpath(os.path.join(dirpath, name), local)
                with open(os.path.join(dirpath, name), "rb") as f:
                    (self / rel.replace(os.sep, "/")).write_bytes(f.read())

    def iterdir(self) -> list[StorePath]:
        """What is directly inside, sorted by name (dot files included)."""
        loc = self._loc()
        infos = loc.filesystem.get_file_info(pafs.FileSelector(loc.path, allow_not_found=True))
        return [self / i.base_name for i in sorted(infos, key=lambda i: i.base_name)]

    def files(self) -> dict[str, int]:
        """Every file below, by its path relative to this directory: its size."""
        loc = self._loc()
        selector = pafs.FileSelector(loc.path, recursive=True, allow_not_found=True)
        prefix = loc.path.rstrip("/") + "/"
        return {
            i.path[len(prefix) :]: int(i.size)
            for i in sorted(loc.filesystem.get_file_info(selector), key=lambda i: i.path)
            if i.type == pafs.FileType.File
        }
