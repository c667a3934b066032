"""A local file system that counts the directory listings asked of it, and a warehouse whose
tables live on it: how tests prove a statement lists only the partitions it touches (real
files, real listings, counted)."""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from acid_platform import Warehouse


class CountingFileSystem(pafs.FileSystemHandler):
    """The local file system, counting the directory listings asked of it (per directory)."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.listed: dict[str, int] = {}

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        path = selector.base_dir.rstrip("/")
        self.listed[path] = self.listed.get(path, 0) + 1
        return self.local.get_file_info(selector)

    def get_type_name(self) -> str:
        return "counting-local"

    def equals(self, other: Any) -> bool:
        return other is self

    def normalize_path(self, path: str) -> str:
        return self.local.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.local.get_file_info(paths)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.local.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not on this file system")

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.local.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.local.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.local.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.local.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_append_stream(path, metadata=metadata)


class CountingWarehouse(Warehouse):
    """A warehouse whose tables live on a :class:`CountingFileSystem`."""

    counter = CountingFileSystem()

    def filesystem_for(self, location: str) -> pafs.FileSystem | None:
        return pafs.PyFileSystem(self.counter)


__all__ = ["CountingFileSystem", "CountingWarehouse"]
