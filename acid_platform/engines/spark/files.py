"""What one Spark task writes: Hive ACID event files, streamed through the one event writer.

A task keeps one :class:`~acid_platform.format.EventWriter` open per file — a (directory, bucket)
pair — and appends to it batch after batch, so rows are never gathered in memory. The layout is
the table layer's (:mod:`acid_platform.table.event_layout`): insert events of a partition go to
``delta_w_w_s/bucket_N`` (``base_w/bucket_N`` for INSERT OVERWRITE) with row ids counted from 0
per file; delete events go to ``delete_delta_w_w_s/bucket_N``, N being the bucket of the row
they delete, sorted by ROW__ID (the caller feeds them in that order). A bucketed table routes
rows with Hive's bucketing hash; an unbucketed one writes ``bucket_<writer id>``, the writer id
being the Spark task's partition id, so no two tasks ever write the same file.

The task returns a :class:`TaskReport` (files, rows, who wrote them) to the driver, which records
the transaction's write components and commits or aborts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import InvalidBucketError
from acid_platform.format import (
    MAX_BUCKET_ID,
    EventWriter,
    delete_events,
    encode_bucket,
    insert_events,
)
from acid_platform.metastore.model import TableSpec
from acid_platform.table.event_layout import (
    DELETE,
    INSERT,
    EventLayout,
    FileInfo,
    split_row_ids,
    split_rows,
)
from acid_platform.table.partitions import partition_path
from acid_platform.table.statement import WriterTask


@dataclass(frozen=True)
class TaskInfo(WriterTask):
    """Which process wrote: executor host and pid, Spark stage, partition and attempt (the
    table layer's :class:`~acid_platform.table.statement.WriterTask`, as a Spark task tells it;
    statements report them in :attr:`StatementMetrics.tasks
    <acid_platform.table.statement.StatementMetrics.tasks>`)."""

    @classmethod
    def current(cls) -> TaskInfo:
        """The running Spark task (zeros outside Spark)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is None:
            return cls(socket.gethostname(), os.getpid(), 0, 0, 0, 0)
        return cls(
            socket.gethostname(),
            os.getpid(),
            ctx.stageId(),
            ctx.partitionId(),
            ctx.attemptNumber(),
            ctx.taskAttemptId(),
        )


@dataclass(frozen=True)
class TaskReport:
    """Everything a task tells the driver: its identity, its files, per-statement row counts
    and (DML) the first MERGE cardinality violation it saw."""

    task: TaskInfo
    files: tuple[FileInfo, ...] = ()
    counts: tuple[tuple[int, int], ...] = ()  # (statement offset, rows)
    violation: dict[str, Any] | None = None
    #: (Spark SQL DML) the ValidTxnList its query's scan read the target at
    snapshot: str | None = None

    def to_json(self) -> str:
        """JSON text (what a mapInArrow task returns)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> TaskReport:
        """Parse :meth:`to_json` output."""
        raw = json.loads(text)
        return cls(
            TaskInfo(**raw["task"]),
            tuple(FileInfo(**f) for f in raw["files"]),
            tuple((int(s), int(n)) for s, n in raw["counts"]),
            raw.get("violation"),
            raw.get("snapshot"),
        )


@dataclass
class _OpenFile:
    writer: EventWriter
    info: FileInfo
    next_row_id: int = 0


@dataclass
class EventFiles:
    """The event files of one task for one table and write id (see module docs)."""

    spec: TableSpec
    table_path: str
    filesystem: pafs.FileSystem
    write_id: int
    writer_id: int
    overwrite: bool = False
    layout: EventLayout = field(init=False)
    _open: dict[tuple[str, str, int, int], _OpenFile] = field(default_factory=dict)
    _dirs: set[str] = field(default_factory=set)
    _done: list[FileInfo] = field(default_factory=list)
    _where: tuple[str, str | None] | None = None  # (partition, file) being written

    def __post_init__(self) -> None:
        if not self.spec.num_buckets and self.writer_id > MAX_BUCKET_ID:
            raise InvalidBucketError(
                f"table {self.spec.full_name}: Spark task {self.writer_id} cannot be a Hive writer "
                f"id (at most {MAX_BUCKET_ID}); write with fewer partitions (df.coalesce(n))"
            )
        self.layout = EventLayout.of(self.spec, self.filesystem)

    def write_inserts(self, partition: str, rows: pa.Table, statement: int) -> None:
        """Insert events for ``rows`` (the table's data columns) of one partition."""
        self._where = (partition, None)
        for bucket, part in split_rows(self.spec, rows, (self.writer_id,)):
            handle = self._file(INSERT, partition, statement, bucket)
            handle.writer.write(
                insert_events(
                    part,
                    self.write_id,
                    encode_bucket(bucket, statement),
                    first_row_id=handle.next_row_id,
                )
            )
            handle.next_row_id += part.num_rows

    def write_deletes(self, partition: str, row_ids: pa.Table, statement: int) -> None:
        """Delete events for ``row_ids`` (``writeid``, ``bucketid``, ``rowid``), each in the file
        of its row's bucket; calls must come in ROW__ID order per bucket."""
        if row_ids.num_rows == 0:
            return
        self._where = (partition, None)
        for bucket, ids in split_row_ids(row_ids):
            handle = self._file(DELETE, partition, statement, bucket)
            handle.writer.write(delete_events(*ids, self.write_id, self.layout.row_schema))
            handle.next_row_id += len(ids.row_ids)

    def close(self) -> list[FileInfo]:
        """Finish every open file; returns all files written."""
        for key in list(self._open):
            handle = self._open.pop(key)
            result = handle.writer.close()
            self._done.append(dataclasses.replace(handle.info, rows=result.rows, bytes=result.size))
        return list(self._done)

    def abort(self, error: BaseException | None = None) -> None:
        """Drop partial files and the files already finished: a failed task leaves nothing.
        ``error`` (what failed the task) gets a note naming the table, partition and file, which
        Spark carries to the driver in the worker's traceback."""
        if error is not None:
            where = f"while writing table {self.spec.full_name}"
            if self._where is not None:
                partition, path = self._where
                where += f", partition {partition}" if partition else ""
                where += f", file {path}" if path else ""
            error.add_note(f"{where} (Spark task, Hive writer id {self.writer_id})")
        for handle in self._open.values():
            with contextlib.suppress(Exception):
                handle.writer.abort()
        self._open.clear()
        for info in self._done:
            with contextlib.suppress(Exception):
                self.filesystem.delete_file(info.path)
        self._done.clear()

    # ------------------------------------------------------------------ helpers
    def _file(self, kind: str, partition: str, statement: int, bucket: int) -> _OpenFile:
        key = (kind, partition, statement, bucket)
        handle = self._open.get(key)
        if handle is not None:
            self._where = (partition, handle.info.path)
            return handle
        directory = self.layout.statement_dir(
            partition_path(self.table_path, partition),
            kind,
            self.write_id,
            statement,
            overwrite=self.overwrite,
        )
        if directory not in self._dirs:
            self.layout.create_dir(directory)
            self._dirs.add(directory)
        path = self.layout.bucket_path(directory, bucket)
        handle = self._open[key] = _OpenFile(
            self.layout.open_file(path), FileInfo(path, partition, statement, bucket, kind, 0, 0)
        )
        self._where = (partition, path)
        return handle


def reports_files(reports: Sequence[TaskReport]) -> list[FileInfo]:
    """All files of several task reports."""
    return [f for r in reports for f in r.files]
