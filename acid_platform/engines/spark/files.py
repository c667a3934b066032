"""What one Spark task writes: Hive ACID event files, streamed through the one event writer.

A task keeps one :class:`~acid_platform.format.EventWriter` open per file — a (directory, bucket)
pair — and appends to it batch after batch, so rows are never gathered in memory. The rules are
the table layer's (:mod:`acid_platform.table.writes`): insert events of a partition go to
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
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from acid_platform.errors import InvalidBucketError
from acid_platform.format import (
    MAX_BUCKET_ID,
    ROW_ID_FIELDS,
    EventWriter,
    base_dir_name,
    bucket_file_name,
    bucket_ids,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    write_acid_version_file,
)
from acid_platform.format.bucket_codec import decode_bucket_ids
from acid_platform.format.fs import join
from acid_platform.metastore.model import TableSpec
from acid_platform.table.partitions import partition_path
from acid_platform.table.schema import data_schema
from acid_platform.table.writes import DEFAULT_COMPRESSION

INSERT, DELETE = "insert", "delete"


@dataclass(frozen=True)
class FileInfo:
    """One event file a task wrote."""

    path: str
    partition: str
    statement: int
    bucket: int
    kind: str  # "insert" or "delete"
    rows: int
    bytes: int


@dataclass(frozen=True)
class TaskInfo:
    """Which process wrote: executor host and pid, Spark stage, partition and attempt."""

    host: str
    pid: int
    stage_id: int
    partition_id: int
    attempt: int
    task_attempt_id: int

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
    filesystem: Any
    write_id: int
    writer_id: int
    overwrite: bool = False
    _open: dict[tuple[str, str, int, int], _OpenFile] = field(default_factory=dict)
    _dirs: set[str] = field(default_factory=set)
    _done: list[FileInfo] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.spec.num_buckets and self.writer_id > MAX_BUCKET_ID:
            raise InvalidBucketError(
                f"table {self.spec.full_name}: Spark task {self.writer_id} cannot be a Hive writer "
                f"id (at most {MAX_BUCKET_ID}); write with fewer partitions (df.coalesce(n))"
            )

    def write_inserts(self, partition: str, rows: pa.Table, statement: int) -> None:
        """Insert events for ``rows`` (the table's data columns) of one partition."""
        if rows.num_rows == 0:
            return
        for bucket, part in self._by_bucket(rows):
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
        owid, prop, rowid = (row_ids.column(c).to_numpy() for c in ROW_ID_FIELDS)
        buckets = decode_bucket_ids(prop)
        schema = data_schema(self.spec)
        for bucket in np.unique(buckets):
            pick = buckets == bucket
            handle = self._file(DELETE, partition, statement, int(bucket))
            handle.writer.write(
                delete_events(owid[pick], prop[pick], rowid[pick], self.write_id, schema)
            )
            handle.next_row_id += int(pick.sum())

    def close(self) -> list[FileInfo]:
        """Finish every open file; returns all files written."""
        for key in list(self._open):
            handle = self._open.pop(key)
            result = handle.writer.close()
            info = handle.info
            self._done.append(
                FileInfo(
                    info.path,
                    info.partition,
                    info.statement,
                    info.bucket,
                    info.kind,
                    result.rows,
                    result.size,
                )
            )
        return list(self._done)

    def abort(self) -> None:
        """Drop partial files and the files already finished: a failed task leaves nothing."""
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
            return handle
        if kind == DELETE:
            name = delete_delta_dir_name(self.write_id, self.write_id, statement)
        elif self.overwrite:
            name = base_dir_name(self.write_id)
        else:
            name = delta_dir_name(self.write_id, self.write_id, statement)
        directory = join(partition_path(self.table_path, partition), name)
        if directory not in self._dirs:
            write_acid_version_file(directory, self.filesystem)
            self._dirs.add(directory)
        path = join(directory, bucket_file_name(bucket))
        writer = EventWriter(
            path, data_schema(self.spec), filesystem=self.filesystem, compression=self.compression
        )
        handle = self._open[key] = _OpenFile(
            writer, FileInfo(path, partition, statement, bucket, kind, 0, 0)
        )
        return handle

    @property
    def compression(self) -> str:
        """The table's ``orc.compress`` (default ZLIB, as Hive)."""
        return self.spec.properties.get("orc.compress", DEFAULT_COMPRESSION).upper()

    def _by_bucket(self, rows: pa.Table) -> list[tuple[int, pa.Table]]:
        if not self.spec.num_buckets:
            return [(self.writer_id, rows)]
        ids = hive_buckets(self.spec, rows)
        return [(int(b), rows.filter(pa.array(ids == b))) for b in np.unique(ids)]


def hive_buckets(spec: TableSpec, rows: pa.Table) -> np.ndarray:
    """Hive's bucket of each row of ``rows`` (which holds the bucketing columns, table-typed)."""
    types = dict(spec.columns)
    return np.asarray(
        bucket_ids(
            [rows.column(c) for c in spec.bucket_columns],
            [types[c] for c in spec.bucket_columns],
            spec.num_buckets,
            spec.bucketing_version,
        )
    )


def reports_files(reports: Sequence[TaskReport]) -> list[FileInfo]:
    """All files of several task reports."""
    return [f for r in reports for f in r.files]
