"""The event files of one (partition, bucket) group: what Hive's ``OrcRecordUpdater`` is to its
mutation coordinator, one per group.

A group writes up to four files, each under its statement id (:class:`~.table.Mutation`):

* inserts → ``delta_w_w_<insert>/bucket_N``, row ids from 0;
* updates → delete events of the old ROW__IDs in ``delete_delta_w_w_<update>/bucket_N`` and the
  new row versions in ``delta_w_w_<update>/bucket_N`` (Hive's split update), row ids from 0;
* deletes → ``delete_delta_w_w_<delete>/bucket_N``.

Names, ``_orc_acid_version`` and codec are the table's :class:`~acid_platform.table.event_layout.EventLayout`.
Events are buffered per file and written in batches of :data:`FLUSH_ROWS`; a file is opened on
its first event, so a group writes only the files it needs. :meth:`GroupFiles.finish` hands back
the rest of the work — write what is buffered, close each file — as one task per file, so a
coordinator can finish several groups' files at once (ORC encoding runs without the GIL).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from acid_platform.format import EventWriter, delete_events, encode_bucket, insert_events
from acid_platform.table.event_layout import DELETE, INSERT, EventLayout, FileInfo
from acid_platform.table.partitions import partition_path

#: Events a file buffers before they are encoded (one ORC write call).
FLUSH_ROWS = 65_536


@dataclass
class _File:
    kind: str
    statement: int
    pending: list[pa.Table | tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list
    )
    pending_rows: int = 0
    writer: EventWriter | None = None
    info: FileInfo | None = None
    next_row_id: int = 0


class CreatedDirs:
    """The directories a coordinator created (each gets its ``_orc_acid_version`` once), safe
    to use from the threads finishing its groups."""

    def __init__(self, layout: EventLayout) -> None:
        self._layout = layout
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, directory: str) -> None:
        """Create ``directory`` (with its version file) unless this coordinator did already."""
        with self._lock:
            if directory not in self._done:
                self._layout.create_dir(directory)
                self._done.add(directory)


class GroupFiles:
    """The files one group writes for one write id (see module docs)."""

    def __init__(
        self,
        layout: EventLayout,
        table_path: str,
        partition: str,
        bucket: int,
        write_id: int,
        created_dirs: CreatedDirs,
    ) -> None:
        self.layout = layout
        self.partition = partition
        self.bucket = bucket
        self.write_id = write_id
        self._dir = partition_path(table_path, partition)
        self._created = created_dirs
        self._files: dict[tuple[str, int], _File] = {}

    def add_rows(self, statement: int, rows: pa.Table) -> None:
        """Insert events for ``rows`` (the table's data columns, typed) under ``statement``."""
        if rows.num_rows:
            self._add(INSERT, statement, rows, rows.num_rows)

    def add_deletes(
        self, statement: int, write_ids: np.ndarray, buckets: np.ndarray, row_ids: np.ndarray
    ) -> None:
        """Delete events for these ROW__IDs (in ROW__ID order) under ``statement``."""
        if len(write_ids):
            self._add(DELETE, statement, (write_ids, buckets, row_ids), len(write_ids))

    def finish(self) -> list[Callable[[], FileInfo]]:
        """One task per file: write what is buffered, close the file, return its info. Run
        them (in any threads, at once) before the group's files count as written."""
        return [functools.partial(self._finish, f) for f in self._files.values()]

    def abort(self) -> None:
        """Drop every file of the group, finished or not (the group accepts nothing more)."""
        for f in self._files.values():
            if f.writer is not None:
                with contextlib.suppress(Exception):
                    f.writer.abort()
        self._files.clear()

    # ------------------------------------------------------------------ helpers
    def _add(
        self,
        kind: str,
        statement: int,
        events: pa.Table | tuple[np.ndarray, np.ndarray, np.ndarray],
        n: int,
    ) -> None:
        f = self._files.get((kind, statement))
        if f is None:
            f = self._files[(kind, statement)] = _File(kind, statement)
        f.pending.append(events)
        f.pending_rows += n
        if f.pending_rows >= FLUSH_ROWS:
            self._flush(f)

    def _flush(self, f: _File) -> None:
        if not f.pending:
            return
        writer = f.writer if f.writer is not None else self._open(f)
        if f.kind == INSERT:
            tables = [p for p in f.pending if isinstance(p, pa.Table)]
            rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            prop = encode_bucket(self.bucket, f.statement)
            writer.write(insert_events(rows, self.write_id, prop, first_row_id=f.next_row_id))
            f.next_row_id += rows.num_rows
        else:
            ids = [p for p in f.pending if isinstance(p, tuple)]
            w, b, r = (np.concatenate([i[k] for i in ids]) for k in range(3))
            writer.write(delete_events(w, b, r, self.write_id, self.layout.row_schema))
        f.pending = []
        f.pending_rows = 0

    def _finish(self, f: _File) -> FileInfo:
        self._flush(f)
        assert f.writer is not None and f.info is not None
        result = f.writer.close()
        return dataclasses.replace(f.info, rows=result.rows, bytes=result.size)

    def _open(self, f: _File) -> EventWriter:
        directory = self.layout.statement_dir(self._dir, f.kind, self.write_id, f.statement)
        self._created.ensure(directory)
        path = self.layout.bucket_path(directory, self.bucket)
        f.info = FileInfo(path, self.partition, f.statement, self.bucket, f.kind, 0, 0)
        f.writer = self.layout.open_file(path)
        return f.writer


__all__ = ["FLUSH_ROWS", "CreatedDirs", "GroupFiles"]
