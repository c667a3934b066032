"""Rows of one statement -> Hive ACID event files, through the one event writer.

Insert events go to ``delta_w_w_s/bucket_N`` (``base_w/bucket_N`` for INSERT OVERWRITE), delete
events to ``delete_delta_w_w_s/bucket_N``; every directory gets ``_orc_acid_version``. A row's
partition comes from its partition column values (:mod:`.partitions`); its bucket from Hive's
bucketing hash for bucketed tables, or writer id 0 for unbucketed ones. Row ids count from 0 per
(file, statement); a delete event goes to the bucket file of the row it deletes, sorted by
ROW__ID. Files are written straight to their final place: they are invisible until the
transaction commits, and an abort leaves them for the cleaner.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.format import (
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
from acid_platform.format.fs import Location, join
from acid_platform.format.parallel import read_threads, run_parallel
from acid_platform.metastore.model import TableSpec
from acid_platform.table.partitions import make_partition_name, partition_path
from acid_platform.table.schema import data_schema

#: Hive's default for the ``orc.compress`` table property.
DEFAULT_COMPRESSION = "ZLIB"
#: Writer (task) id of the first writer of an unbucketed table (one per statement and partition,
#: more for large statements: see :data:`ROWS_PER_WRITER`).
UNBUCKETED_WRITER_ID = 0
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

    def add(self, other: WriteMetrics) -> None:
        """Accumulate ``other`` into this."""
        self.rows_inserted += other.rows_inserted
        self.rows_deleted += other.rows_deleted
        self.dirs.extend(d for d in other.dirs if d not in self.dirs)
        self.files.extend(other.files)
        self.bytes_written += other.bytes_written


@dataclass(frozen=True)
class EventSink:
    """Where and how one table's events are written for one write id."""

    spec: TableSpec
    table_location: Location
    write_id: int

    @property
    def compression(self) -> str:
        """The table's ``orc.compress`` (default ZLIB, as Hive)."""
        return self.spec.properties.get("orc.compress", DEFAULT_COMPRESSION).upper()

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
        name = (
            base_dir_name(self.write_id)
            if overwrite
            else delta_dir_name(self.write_id, self.write_id, statement_id)
        )
        directory = join(self.partition_dir(partition), name)
        if rows.num_rows == 0 and not overwrite:
            return PendingWrites()
        fs = self.table_location.filesystem
        write_acid_version_file(directory, fs)
        schema = data_schema(self.spec)
        files: list[Callable[[], WriteMetrics]] = []
        for bucket, part in self._by_bucket(rows):
            path = join(directory, bucket_file_name(bucket))
            events = functools.partial(
                insert_events, part, self.write_id, encode_bucket(bucket, statement_id)
            )
            files.append(functools.partial(self._write_file, path, schema, events))
        return PendingWrites([directory], files)

    def delete_writes(self, partition: str, row_ids: pa.Table, statement_id: int) -> PendingWrites:
        """:meth:`write_deletes` as pending file writes (the directory is created now)."""
        if row_ids.num_rows == 0:
            return PendingWrites()
        directory = join(
            self.partition_dir(partition),
            delete_delta_dir_name(self.write_id, self.write_id, statement_id),
        )
        write_acid_version_file(directory, self.table_location.filesystem)
        owid, bucket_property, rowid = (row_ids.column(c).to_numpy() for c in ROW_ID_FIELDS)
        buckets = decode_bucket_ids(bucket_property)
        schema = data_schema(self.spec)
        files: list[Callable[[], WriteMetrics]] = []
        for bucket in np.unique(buckets):
            pick = buckets == bucket
            path = join(directory, bucket_file_name(int(bucket)))
            events = functools.partial(
                delete_events, owid[pick], bucket_property[pick], rowid[pick], self.write_id, schema
            )
            files.append(functools.partial(self._write_file, path, schema, events))
        return PendingWrites([directory], files)

    def _write_file(
        self, path: str, schema: pa.Schema, events: Callable[[], pa.Table]
    ) -> WriteMetrics:
        fs = self.table_location.filesystem
        with EventWriter(path, schema, filesystem=fs, compression=self.compression) as writer:
            writer.write(events())
        result = writer.result
        assert result is not None
        metrics = WriteMetrics(files=[path], bytes_written=result.size)
        metrics.rows_inserted = result.inserts + result.updates
        metrics.rows_deleted = result.deletes
        return metrics

    def _by_bucket(self, rows: pa.Table) -> list[tuple[int, pa.Table]]:
        if rows.num_rows == 0:
            return []
        spec = self.spec
        if not spec.num_buckets:
            # Hive gives each writer task of an unbucketed table its own bucket_N file; a large
            # statement is written by several writers at once (contiguous slices of its rows).
            writers = max(1, min(read_threads(), rows.num_rows // ROWS_PER_WRITER))
            if writers == 1:
                return [(UNBUCKETED_WRITER_ID, rows)]
            bounds = np.linspace(0, rows.num_rows, writers + 1).astype(np.int64)
            return [
                (UNBUCKETED_WRITER_ID + w, rows.slice(int(lo), int(hi - lo)))
                for w, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
            ]
        types = dict(spec.columns)
        ids = bucket_ids(
            [rows.column(c) for c in spec.bucket_columns],
            [types[c] for c in spec.bucket_columns],
            spec.num_buckets,
            spec.bucketing_version,
        )
        out = []
        for bucket in np.unique(ids):
            out.append((int(bucket), rows.filter(pa.array(ids == bucket))))
        return out


@dataclass
class PendingWrites:
    """Directories already created and the file writes still to run (each returns its
    :class:`WriteMetrics`)."""

    dirs: list[str] = field(default_factory=list)
    files: list[Callable[[], WriteMetrics]] = field(default_factory=list)


def run_writes(pending: Sequence[PendingWrites]) -> WriteMetrics:
    """Run every pending file write, several at once (ORC encoding runs without the GIL), and
    return the metrics in the order the writes were planned."""
    metrics = WriteMetrics()
    for p in pending:
        metrics.dirs.extend(d for d in p.dirs if d not in metrics.dirs)
    for m in run_parallel([f for p in pending for f in p.files]):
        metrics.add(m)
    return metrics


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
    out = []
    for values, indices in _group_indices(rows.select(list(partition_columns))):
        out.append(
            (make_partition_name(partition_columns, values), rows.select(list(keep)).take(indices))
        )
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
