"""The one event layout: where a table's event files go and how they are encoded.

Every writer of table data — the embedded writer (:mod:`.writes`), the Spark tasks
(:mod:`acid_platform.engines.spark.files`) and compaction (:mod:`acid_platform.compaction.rewrite`)
— names, creates and fills its directories and files here:

* a statement writes insert events to ``delta_<w>_<w>_<s>`` (``base_<w>`` for INSERT OVERWRITE)
  and delete events to ``delete_delta_<w>_<w>_<s>``; the compactor writes ``base_<N>_v<T>``
  (major) or ``delta_<lo>_<hi>_v<T>`` and ``delete_delta_<lo>_<hi>_v<T>`` (minor: no statement
  id). These are Hive 4's names, spelled by :mod:`acid_platform.format.names`;
* a directory gets its ``_orc_acid_version`` file when it is created;
* files are ``bucket_NNNNN``. A row goes to its bucket by Hive's bucketing hash in a bucketed
  table, to its writer's id in an unbucketed one; a delete event goes to the file of the bucket
  in the ROW__ID of the row it deletes;
* files are written with the table's ``orc.compress`` codec (Hive's default ZLIB);
* an **insert-only** table's layout (``insert_only``) writes plain data files of its
  ``file_format`` (ORC, Parquet or text; :mod:`acid_platform.format.plain_files`) named as
  Hive's tasks name them, ``000000_0`` (``%06d`` bucket or writer id), into the same
  directory names, with no ``_orc_acid_version`` and no delete deltas.

An :class:`EventLayout` is a plain picklable value (a schema, a file system, a codec, a stripe
size), so Spark tasks build and use it on their executors.

>>> import pyarrow.fs as pafs
>>> layout = EventLayout(pa.schema([("id", pa.int32())]), pafs.LocalFileSystem())
>>> layout.statement_dir("/wh/t", INSERT, 5, 1), layout.statement_dir("/wh/t", DELETE, 5, 1)
('/wh/t/delta_0000005_0000005_0001', '/wh/t/delete_delta_0000005_0000005_0001')
>>> layout.statement_dir("/wh/t", INSERT, 5, 0, overwrite=True)
'/wh/t/base_0000005'
>>> layout.compacted_dir("/wh/t", DELETE, 1, 2, 19)
'/wh/t/delete_delta_0000001_0000002_v0000019'
>>> layout.compacted_dir("/wh/t", INSERT, 1, 2, 19, major=True)
'/wh/t/base_0000002_v0000019'
>>> layout.bucket_path("/wh/t/base_0000002_v0000019", 3)
'/wh/t/base_0000002_v0000019/bucket_00003'
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.format import (
    DEFAULT_COMPRESSION,
    ROW_ID_FIELDS,
    EventWriter,
    base_dir_name,
    bucket_file_name,
    bucket_ids,
    compression_of,
    delete_delta_dir_name,
    delta_dir_name,
    write_acid_version_file,
)
from acid_platform.format.bucket_codec import decode_bucket_ids
from acid_platform.format.fs import join, make_dirs
from acid_platform.format.names import original_file_name
from acid_platform.format.plain_files import ORC, write_plain_file
from acid_platform.format.streaming_file import StreamingEventFile
from acid_platform.format.writer import DEFAULT_STRIPE_SIZE, pyarrow_codec
from acid_platform.metastore.model import TableSpec
from acid_platform.table.schema import data_schema

#: The two kinds of event file: insert events (rows) and delete events (ROW__IDs).
INSERT, DELETE = "insert", "delete"
#: Writer (task) id of the first writer of an unbucketed table.
UNBUCKETED_WRITER_ID = 0


@dataclass(frozen=True)
class FileInfo:
    """One event file written: where, for which partition, statement and bucket, what kind
    (:data:`INSERT` or :data:`DELETE`), how many events and bytes."""

    path: str
    partition: str
    statement: int
    bucket: int
    kind: str
    rows: int
    bytes: int

    @property
    def directory(self) -> str:
        """The base or delta directory holding the file."""
        return posixpath.dirname(self.path)


class RowIds(NamedTuple):
    """ROW__IDs of rows (of one bucket) to delete, as arrays."""

    original_write_ids: np.ndarray
    bucket_properties: np.ndarray
    row_ids: np.ndarray


@dataclass(frozen=True)
class EventLayout:
    """How the event files of one table are named, created and encoded (see module docs)."""

    row_schema: pa.Schema
    filesystem: pafs.FileSystem
    compression: str = DEFAULT_COMPRESSION
    stripe_size: int = DEFAULT_STRIPE_SIZE
    #: an insert-only table's layout: plain data files of ``file_format``
    insert_only: bool = False
    file_format: str = ORC
    #: the table's properties a plain file's codec comes from (``parquet.compression``)
    properties: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls, spec: TableSpec, filesystem: pafs.FileSystem, *, stripe_size: int = DEFAULT_STRIPE_SIZE
    ) -> EventLayout:
        """The layout of a table: its data columns, its ``orc.compress`` codec and, for an
        insert-only table, its file format."""
        return cls(
            data_schema(spec),
            filesystem,
            compression_of(spec.properties),
            stripe_size,
            insert_only=spec.is_insert_only,
            file_format=spec.file_format if spec.is_insert_only else ORC,
            properties=tuple(spec.properties.items()) if spec.is_insert_only else (),
        )

    # ------------------------------------------------------------------ names
    def statement_dir(
        self,
        partition_dir: str,
        kind: str,
        write_id: int,
        statement: int,
        *,
        overwrite: bool = False,
    ) -> str:
        """The directory a statement writes ``kind`` events to: ``delete_delta_w_w_s`` for
        deletes, ``delta_w_w_s`` for inserts (``base_w`` when ``overwrite``)."""
        if _check_kind(kind) == DELETE:
            name = delete_delta_dir_name(write_id, write_id, statement)
        elif overwrite:
            name = base_dir_name(write_id)
        else:
            name = delta_dir_name(write_id, write_id, statement)
        return join(partition_dir, name)

    def compacted_dir(
        self,
        partition_dir: str,
        kind: str,
        min_write_id: int,
        max_write_id: int,
        compactor_txn_id: int,
        *,
        major: bool = False,
    ) -> str:
        """The directory a compaction in txn ``compactor_txn_id`` writes ``kind`` events to:
        ``base_<max>_v<T>`` (``major``, inserts only), else ``delta_<min>_<max>_v<T>`` or
        ``delete_delta_<min>_<max>_v<T>``."""
        if _check_kind(kind) == DELETE:
            if major:
                raise ValueError("a major compaction writes no delete events")
            name = delete_delta_dir_name(min_write_id, max_write_id, -1, compactor_txn_id)
        elif major:
            name = base_dir_name(max_write_id, compactor_txn_id)
        else:
            name = delta_dir_name(min_write_id, max_write_id, -1, compactor_txn_id)
        return join(partition_dir, name)

    def batch_dir(
        self, partition_dir: str, min_write_id: int, max_write_id: int, statement: int = -1
    ) -> str:
        """The insert delta a streaming transaction batch writes: ``delta_<min>_<max>``, with
        ``_<statement>`` only when one is given (an unmanaged writer's)."""
        return join(partition_dir, delta_dir_name(min_write_id, max_write_id, statement))

    def bucket_path(self, directory: str, bucket: int) -> str:
        """The file of ``bucket`` in a base or delta directory: ``<directory>/bucket_NNNNN``
        (``<directory>/NNNNNN_0`` in an insert-only table)."""
        if self.insert_only:
            return join(directory, original_file_name(bucket))
        return join(directory, bucket_file_name(bucket))

    # ------------------------------------------------------------------ writing
    def create_dir(self, directory: str) -> str:
        """Create a base or delta directory with its ``_orc_acid_version`` (an insert-only
        table's has none); returns it."""
        if self.insert_only:
            make_dirs(self.filesystem, directory)
        else:
            write_acid_version_file(directory, self.filesystem)
        return directory

    def write_plain(self, path: str, rows: pa.Table) -> int:
        """Write an insert-only table's data file (``rows``: its data columns); its size."""
        if not self.insert_only:
            raise ValueError("plain data files belong to insert-only tables")
        return write_plain_file(
            self.filesystem,
            path,
            rows,
            self.row_schema,
            self.file_format,
            properties=dict(self.properties),
            orc_codec=pyarrow_codec(path, self.compression),
            stripe_size=self.stripe_size,
        )

    def open_file(self, path: str) -> EventWriter:
        """An :class:`~acid_platform.format.EventWriter` for one bucket file of this table."""
        return EventWriter(
            path,
            self.row_schema,
            filesystem=self.filesystem,
            compression=self.compression,
            stripe_size=self.stripe_size,
        )

    def open_streaming_file(self, path: str, *, side_file: bool) -> StreamingEventFile:
        """A :class:`~acid_platform.format.streaming_file.StreamingEventFile` for one bucket file
        of a streaming delta (with its ``_flush_length`` side file when ``side_file``)."""
        return StreamingEventFile(
            path,
            self.row_schema,
            filesystem=self.filesystem,
            compression=self.compression,
            stripe_size=self.stripe_size,
            side_file=side_file,
        )


def hive_buckets(spec: TableSpec, rows: pa.Table) -> np.ndarray:
    """Hive's bucket of each row of a bucketed table (``rows`` holds the bucketing columns,
    typed as the table's)."""
    types = dict(spec.columns)
    return np.asarray(
        bucket_ids(
            [rows.column(c) for c in spec.bucket_columns],
            [types[c] for c in spec.bucket_columns],
            spec.num_buckets,
            spec.bucketing_version,
        )
    )


def split_rows(
    spec: TableSpec, rows: pa.Table, writer_ids: Sequence[int] = (UNBUCKETED_WRITER_ID,)
) -> list[tuple[int, pa.Table]]:
    """``rows`` grouped by the bucket file they go to, by ascending bucket.

    A bucketed table routes each row by :func:`hive_buckets`. An unbucketed table gives each
    writer id a contiguous slice of the rows (all of them for a single writer), as Hive gives
    each writer task its own ``bucket_<writer id>``. No rows, no groups.
    """
    if rows.num_rows == 0:
        return []
    if not spec.num_buckets:
        if len(writer_ids) == 1:
            return [(writer_ids[0], rows)]
        bounds = np.linspace(0, rows.num_rows, len(writer_ids) + 1).astype(np.int64)
        return [
            (w, rows.slice(int(lo), int(hi - lo)))
            for w, lo, hi in zip(writer_ids, bounds[:-1], bounds[1:], strict=True)
        ]
    ids = hive_buckets(spec, rows)
    return [(int(b), rows.filter(pa.array(ids == b))) for b in np.unique(ids)]


def split_row_ids(row_ids: pa.Table) -> list[tuple[int, RowIds]]:
    """ROW__IDs (columns ``writeid``, ``bucketid``, ``rowid``) grouped by the bucket their rows
    live in, by ascending bucket; each group keeps the input order."""
    owid, prop, rowid = (row_ids.column(c).to_numpy() for c in ROW_ID_FIELDS)
    buckets = decode_bucket_ids(prop)
    out = []
    for bucket in np.unique(buckets):
        pick = buckets == bucket
        out.append((int(bucket), RowIds(owid[pick], prop[pick], rowid[pick])))
    return out


def _check_kind(kind: str) -> str:
    if kind not in (INSERT, DELETE):
        raise ValueError(f"event kind must be {INSERT!r} or {DELETE!r}, not {kind!r}")
    return kind


__all__ = [
    "DELETE",
    "INSERT",
    "UNBUCKETED_WRITER_ID",
    "EventLayout",
    "FileInfo",
    "RowIds",
    "hive_buckets",
    "split_row_ids",
    "split_rows",
]
