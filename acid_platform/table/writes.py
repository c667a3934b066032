"""Rows of one statement -> Hive ACID event files, in the table's event layout.

Insert events go to ``delta_w_w_s/bucket_N`` (``base_w/bucket_N`` for INSERT OVERWRITE), delete
events to ``delete_delta_w_w_s/bucket_N``: names, ``_orc_acid_version``, buckets and codec are
:mod:`.event_layout`'s. A row's partition comes from its partition column values
(:mod:`.partitions`); its bucket from Hive's bucketing hash for bucketed tables, or the writer id
(0, more writers for a large statement) for unbucketed ones. Row ids count from 0 per
(file, statement); a delete event goes to the bucket file of the row it deletes, sorted by
ROW__ID. Files are written straight to their final place: they are invisible until the
transaction commits, and an abort leaves them for the cleaner."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.format import delete_events, encode_bucket, insert_events
from acid_platform.format.fs import Location
from acid_platform.format.parallel import read_threads, run_parallel
from acid_platform.metastore.model import TableSpec
from acid_platform.table.event_layout import (
    DELETE,
    INSERT,
    UNBUCKETED_WRITER_ID,
    EventLayout,
    FileInfo,
    split_row_ids,
    split_rows,
)
from acid_platform.table.partitions import make_partition_name, partition_path

#: An unbucketed statement gets one more writer (bucket_N file) per this many rows, up to the
#: number of decoding threads.
ROWS_PER_WRITER = 500_000


@dataclass
class WriteMetrics:
    """What a statement wrote: directories, files and event counts."""

    rows_inserted: int = 0
    rows_deleted: int = 0
    dirs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    bytes_written: int = 0
    #: The files in full (size, rows, partition): what the commit records they wrote.
    infos: list[FileInfo] = field(default_factory=list)

    @classmethod
    def from_files(cls, files: Iterable[FileInfo], dirs: Iterable[str] = ()) -> WriteMetrics:
        """The metrics of the event files ``files`` (whichever engine wrote them). ``dirs`` are
        directories created for them, first, in order (an empty ``base_w`` has no file); the
        other files' directories follow in file order."""
        files = list(files)
        seen = dict.fromkeys([*dirs, *(f.directory for f in files)])
        return cls(
            rows_inserted=sum(f.rows for f in files if f.kind == INSERT),
            rows_deleted=sum(f.rows for f in files if f.kind == DELETE),
            dirs=list(seen),
            files=[f.path for f in files],
            bytes_written=sum(f.bytes for f in files),
            infos=files,
        )

    def add(self, other: WriteMetrics) -> None:
        """Accumulate ``other`` into this."""
        self.rows_inserted += other.rows_inserted
        self.rows_deleted += other.rows_deleted
        self.dirs.extend(d for d in other.dirs if d not in self.dirs)
        self.files.extend(other.files)
        self.bytes_written += other.bytes_written
        self.infos.extend(other.infos)


@dataclass(frozen=True)
class EventSink:
    """Where and how one table's events are written for one write id."""

    spec: TableSpec
    table_location: Location
    write_id: int

    @functools.cached_property
    def layout(self) -> EventLayout:
        """The table's event layout (names, ``_orc_acid_version``, codec)."""
        return EventLayout.of(self.spec, self.table_location.filesystem)

    def partition_dir(self, partition: str) -> str:
        """The directory of a partition (the table directory for ``""``)."""
        return partition_path(self.table_location.path, partition)

    def write_inserts(
        self, partition: str, rows: pa.Table, statement_id: int, *, overwrite: bool = False
    ) -> WriteMetrics:
        """Insert events for ``rows`` (data columns only) of one partition.

        ``overwrite`` writes ``base_w`` (INSERT OVERWRITE) instead of ``delta_w_w_s``; an empty
        overwrite still writes the (empty) base so it hides everything older.
        """
        return run_writes([self.insert_writes(partition, rows, statement_id, overwrite=overwrite)])

    def write_deletes(self, partition: str, row_ids: pa.Table, statement_id: int) -> WriteMetrics:
        """Delete events for the rows named by ``row_ids`` (columns ``writeid``, ``bucketid``,
        ``rowid``) of one partition, each in the bucket file of the row it deletes."""
        return run_writes([self.delete_writes(partition, row_ids, statement_id)])

    def insert_writes(
        self, partition: str, rows: pa.Table, statement_id: int, *, overwrite: bool = False
    ) -> PendingWrites:
        """:meth:`write_inserts` as pending file writes (the directory is created now)."""
        if rows.num_rows == 0 and not overwrite:
            return PendingWrites()
        layout = self.layout
        directory = layout.create_dir(
            layout.statement_dir(
                self.partition_dir(partition),
                INSERT,
                self.write_id,
                statement_id,
                overwrite=overwrite,
            )
        )
        files: list[Callable[[], FileInfo]] = []
        groups = split_rows(self.spec, rows, self._writer_ids(rows))
        if layout.insert_only:
            if (
                not groups
            ):  # an empty INSERT OVERWRITE: an empty file keeps the base on object stores
                groups = [(UNBUCKETED_WRITER_ID, rows)]
            for bucket, part in groups:
                info = FileInfo(
                    layout.bucket_path(directory, bucket),
                    partition,
                    statement_id,
                    bucket,
                    INSERT,
                    0,
                    0,
                )
                files.append(functools.partial(self._write_plain, info, part))
            return PendingWrites([directory], files)
        for bucket, part in groups:
            info = FileInfo(
                layout.bucket_path(directory, bucket), partition, statement_id, bucket, INSERT, 0, 0
            )
            events = functools.partial(
                insert_events, part, self.write_id, encode_bucket(bucket, statement_id)
            )
            files.append(functools.partial(self._write_file, info, events))
        return PendingWrites([directory], files)

    def delete_writes(self, partition: str, row_ids: pa.Table, statement_id: int) -> PendingWrites:
        """:meth:`write_deletes` as pending file writes (the directory is created now)."""
        if row_ids.num_rows == 0:
            return PendingWrites()
        layout = self.layout
        directory = layout.create_dir(
            layout.statement_dir(self.partition_dir(partition), DELETE, self.write_id, statement_id)
        )
        files: list[Callable[[], FileInfo]] = []
        for bucket, ids in split_row_ids(row_ids):
            info = FileInfo(
                layout.bucket_path(directory, bucket), partition, statement_id, bucket, DELETE, 0, 0
            )
            events = functools.partial(delete_events, *ids, self.write_id, layout.row_schema)
            files.append(functools.partial(self._write_file, info, events))
        return PendingWrites([directory], files)

    def _write_plain(self, info: FileInfo, rows: pa.Table) -> FileInfo:
        size = self.layout.write_plain(info.path, rows)
        return dataclasses.replace(info, rows=rows.num_rows, bytes=size)

    def _write_file(self, info: FileInfo, events: Callable[[], pa.Table]) -> FileInfo:
        with self.layout.open_file(info.path) as writer:
            writer.write(events())
        result = writer.result
        assert result is not None
        return dataclasses.replace(info, rows=result.rows, bytes=result.size)

    def _writer_ids(self, rows: pa.Table) -> range:
        # Hive gives each writer task of an unbucketed table its own bucket_N file; a large
        # statement is written by several writers at once (contiguous slices of its rows).
        writers = max(1, min(read_threads(), rows.num_rows // ROWS_PER_WRITER))
        return range(UNBUCKETED_WRITER_ID, UNBUCKETED_WRITER_ID + writers)


@dataclass
class PendingWrites:
    """Directories already created and the file writes still to run (each returns the
    :class:`~acid_platform.table.event_layout.FileInfo` of its file)."""

    dirs: list[str] = field(default_factory=list)
    files: list[Callable[[], FileInfo]] = field(default_factory=list)


def run_writes(pending: Sequence[PendingWrites]) -> WriteMetrics:
    """Run every pending file write, several at once (ORC encoding runs without the GIL), and
    return the metrics in the order the writes were planned."""
    files = run_parallel([f for p in pending for f in p.files])
    return WriteMetrics.from_files(files, [d for p in pending for d in p.dirs])


def split_by_partition(
    rows: pa.Table, partition_columns: Sequence[str], keep: Sequence[str]
) -> list[tuple[str, pa.Table]]:
    """Group rows by partition name (Hive-escaped ``k=v/…``), sorted by name.

    Each group's table holds the ``keep`` columns. Without partition columns there is one group
    named ``""`` (none for no rows). NULL and empty values share the default partition.
    """
    if rows.num_rows == 0:
        return []
    if not partition_columns:
        return [("", rows.select(list(keep)))]
    groups = _group_indices(rows.select(list(partition_columns)))
    if len(groups) == 1:  # one partition (a Dagster partition's rows): no copy of the rows
        return [(make_partition_name(partition_columns, groups[0][0]), rows.select(list(keep)))]
    # one take puts each partition's rows together; each partition is then a zero-copy slice
    together = rows.select(list(keep)).take(pa.concat_arrays([i for _, i in groups]))
    out = []
    start = 0
    for values, indices in groups:
        out.append(
            (make_partition_name(partition_columns, values), together.slice(start, len(indices)))
        )
        start += len(indices)
    out.sort(key=lambda x: x[0])
    return _merge_same_names(out)


def _group_indices(keys: pa.Table) -> list[tuple[list[Any], pa.Array]]:
    indexed = keys.append_column("__acid_idx", pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    grouped = indexed.group_by(keys.column_names, use_threads=False).aggregate(
        [("__acid_idx", "list")]
    )
    out = []
    for row in range(grouped.num_rows):
        values = [grouped.column(c)[row].as_py() for c in keys.column_names]
        indices = grouped.column("__acid_idx_list")[row].values
        out.append((values, pc.cast(indices, pa.int64())))
    return out


def _merge_same_names(groups: list[tuple[str, pa.Table]]) -> list[tuple[str, pa.Table]]:
    # NULL and '' both map to the default partition name: put their rows together.
    merged: list[tuple[str, pa.Table]] = []
    for name, table in groups:
        if merged and merged[-1][0] == name:
            merged[-1] = (name, pa.concat_tables([merged[-1][1], table]))
        else:
            merged.append((name, table))
    return merged
