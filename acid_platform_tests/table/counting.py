"""A local file system that counts the directory listings and the files opened for reading
asked of it, a warehouse whose tables live on it, and the metastore statements sent
(:class:`Sent`): how tests prove a statement lists only the partitions it touches (real files,
real listings, real statements, counted)."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow.fs as pafs
from sqlalchemy import event
from sqlalchemy.engine import Engine

from acid_platform import Warehouse


class CountingFileSystem(pafs.FileSystemHandler):
    """The local file system, counting the directory listings asked of it (per directory) and
    the files opened for reading (per file)."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.listed: dict[str, int] = {}
        self.opened: dict[str, int] = {}

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
        self.opened[path] = self.opened.get(path, 0) + 1
        return self.local.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_append_stream(path, metadata=metadata)


#: The open-transaction count ``hive.max.open.txns`` refreshes at most once a second.
OPEN_COUNT = "SELECT COUNT(*) AS COUNT_1 FROM TXNS WHERE TXNS.TXN_STATE"
#: The database clock's reads (``metastore.clock``: asked again every ``resync_s``).
CLOCK_READS = (
    "SELECT CAST(EXTRACT(EPOCH FROM CLOCK_TIMESTAMP())",
    "SELECT CAST(ROUND((JULIANDAY('NOW')",
    "SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3))",
)


class Sent:
    """While entered: the statements every SQLAlchemy engine sends, with their parameters —
    but those sent on a clock, not for the statement: a transaction's heartbeat (its own
    thread), the count of open transactions (refreshed at most once a second) and the
    database clock's resync."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def __enter__(self) -> Sent:
        event.listen(Engine, "before_cursor_execute", self._statement)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(Engine, "before_cursor_execute", self._statement)

    def _statement(self, conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        text = " ".join(statement.split()).upper()
        if threading.current_thread().name == "acid-heartbeat" or text.startswith(
            (OPEN_COUNT, *CLOCK_READS)
        ):
            return
        self.statements.append((text, parameters))

    def record_partitions_fetched(self) -> set[str]:
        """The partition names whose file record was fetched (``wf_partition IN (…)``)."""
        names: set[str] = set()
        for text, params in self.statements:
            if "FROM WRITE_FILES" in text and "WF_PARTITION IN" in text:
                values = params.values() if isinstance(params, dict) else params
                names |= {v for v in values if isinstance(v, str) and v.startswith("d=")}
        return names


class CountingWarehouse(Warehouse):
    """A warehouse whose tables live on a :class:`CountingFileSystem`."""

    counter = CountingFileSystem()

    def filesystem_for(self, location: str) -> pafs.FileSystem | None:
        return pafs.PyFileSystem(self.counter)


__all__ = ["OPEN_COUNT", "CountingFileSystem", "CountingWarehouse", "Sent"]
