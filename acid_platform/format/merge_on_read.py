"""Merge-on-read: the rows a snapshot sees in one table or partition directory.

A row is visible when it sits in the chosen base, a current insert delta or an original file,
its write id (currentTransaction) is valid in the snapshot, and no valid delete event names its
(originalWriteId, bucketProperty, rowId). Work is planned per bucket (:func:`plan_splits`), and a
split is read stripe by stripe (:func:`read_split`), so memory is one bucket's delete set plus one
stripe. Splits are plain frozen dataclasses: an engine (Spark) ships them to its workers.

>>> # read_acid("/warehouse/db/t", ValidWriteIdList.parse("db.t:5:9223372036854775807::"))
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from acid_platform.errors import AcidFormatError, AcidSchemaError, MissingDirectoryError
from acid_platform.format import types as t
from acid_platform.format.acid_state import AcidState, acid_state
from acid_platform.format.delete_merge import split_deletes
from acid_platform.format.delete_set import DeleteLookup, DeleteSet
from acid_platform.format.file_reader import (
    ACID_KIND,
    ORIGINAL_KIND,
    PARQUET_KIND,
    TEXT_KIND,
    DataFileRef,
    FileRead,
    Filters,
    ReadStats,
    read_events,
    read_original,
    read_plain,
    to_dnf,
)
from acid_platform.format.flush_length import read_flush_length
from acid_platform.format.fs import resolve
from acid_platform.format.id_list import RangeResponse
from acid_platform.format.parallel import run_parallel
from acid_platform.format.plain_files import (
    ORC,
    PARQUET,
    TEXTFILE,
    read_plain_batches,
    wide_parquet_columns,
)
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.wide_timestamps import wide_columns, widen_schema
from acid_platform.format.write_id_list import ValidWriteIdList

T = TypeVar("T")


@dataclass(frozen=True)
class ReadSplit:
    """Everything needed to read one bucket of one directory under one snapshot."""

    bucket_id: int
    data_files: tuple[DataFileRef, ...]
    delete_files: tuple[str, ...] = ()
    partition: str | None = None
    size: int = 0


def read_acid(
    path: str | os.PathLike[str],
    write_ids: ValidWriteIdList,
    txns: ValidTxnList | None = None,
    columns: Sequence[str] | None = None,
    with_row_id: bool = False,
    *,
    filters: Filters | None = None,
    schema: pa.Schema | None = None,
    filesystem: pafs.FileSystem | None = None,
    stats: ReadStats | None = None,
    row_ids: DeleteSet | None = None,
    state: AcidState | None = None,
    delete_events_cap: int | None = None,
) -> pa.Table:
    """Read one table or partition directory under a snapshot into a ``pyarrow.Table``.

    ``columns`` selects row columns (default all); ``with_row_id`` prepends the ``row__id``
    struct<writeid:bigint,bucketid:int,rowid:bigint> column; ``filters`` (DNF tuples) prune stripes
    by their statistics and then filter rows exactly; ``schema`` is the table's row schema (needed
    for an empty table and for files written before a column was added); ``row_ids`` keeps only
    the rows with those ROW__IDs, reading only the stripes whose key range holds one of them;
    ``state`` is the directory's selection for this snapshot when the caller already computed it
    (:func:`~acid_platform.format.acid_state`): the directory is then not listed again;
    ``delete_events_cap``: see :func:`read_split`.

    Raises :class:`~acid_platform.errors.MissingDirectoryError` when ``path`` does not exist.
    """
    loc = resolve(path, filesystem)
    if state is None:
        if loc.filesystem.get_file_info(loc.path).type == pafs.FileType.NotFound:
            raise MissingDirectoryError(
                f"{loc.path}: the directory does not exist (read_acid reads a table or partition "
                "directory; check the path)"
            )
        state = acid_state(loc.path, write_ids, txns, filesystem=loc.filesystem)
    splits = pin_flush_lengths(plan_splits(state, write_ids), loc.filesystem)
    row_schema = _table_schema(loc.filesystem, state, schema)
    wanted = row_schema if columns is None else row_schema_of(row_schema, columns)
    row_schema = widen_schema(row_schema, wide_columns_of_splits(splits, loc.filesystem, wanted))
    out_schema = output_schema(row_schema, columns, with_row_id)
    read = functools.partial(
        _read_part,
        filesystem=loc.filesystem,
        write_ids=write_ids,
        columns=columns,
        with_row_id=with_row_id,
        filters=filters,
        schema=out_schema_row(out_schema),
        row_ids=row_ids,
    )
    parts = read_balanced(splits, read, loc.filesystem, write_ids, stats, delete_events_cap)
    return pa.Table.from_batches([b for part in parts for b in part], schema=out_schema)


def _read_part(
    _: int, split: ReadSplit, deleted: DeleteLookup, stats: ReadStats, **kwargs: Any
) -> list[pa.RecordBatch]:
    return list(read_split(split, deleted=deleted, stats=stats, **kwargs))


def read_balanced(
    splits: Sequence[ReadSplit],
    read: Callable[[int, ReadSplit, DeleteLookup, ReadStats], list[T]],
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    stats: ReadStats | None = None,
    delete_events_cap: int | None = None,
) -> list[list[T]]:
    """``read(i, split, deleted, stats)`` of every split (``i``: its index in ``splits``) on the
    read threads; each split's results, in order.

    Each split's delete events are loaded once (the splits in parallel). Then each data file of
    a split is a task of its own, largest first, so that a table of one large base file and
    many small deltas in one bucket keeps every thread busy to the end (a task per split left
    one thread decoding the deltas after the other had finished). A split with original files
    (their synthetic row ids count on from the file before) or with its delete events merged
    in key order (one cursor, :mod:`.delete_merge`) is one task. Every split's delete set is
    held until the read ends: a caller that streams one split at a time uses
    :func:`read_split`."""
    counters = [ReadStats() for _ in splits]
    deletes = run_parallel(
        [
            functools.partial(
                split_deletes, filesystem, s.delete_files, write_ids, c, delete_events_cap
            )
            for s, c in zip(splits, counters, strict=True)
        ]
    )
    parts: list[tuple[int, ReadSplit, int]] = []
    for i, (split, deleted) in enumerate(zip(splits, deletes, strict=True)):
        whole = not isinstance(deleted, DeleteSet) or any(
            ref.kind == ORIGINAL_KIND for ref in split.data_files
        )
        if whole or len(split.data_files) == 1:
            parts.append((i, split, split.size))
        else:
            parts += [(i, replace(split, data_files=(ref,)), ref.size) for ref in split.data_files]
    order = sorted(range(len(parts)), key=lambda k: -parts[k][2])
    part_stats = [ReadStats() for _ in parts]
    done = run_parallel(
        [
            functools.partial(read, parts[k][0], parts[k][1], deletes[parts[k][0]], part_stats[k])
            for k in order
        ]
    )
    results: list[list[T]] = [[] for _ in splits]
    by_part = dict(zip(order, done, strict=True))
    for k, (i, _, _) in enumerate(parts):
        results[i].extend(by_part[k])
        counters[i].add(part_stats[k])
    if stats is not None:
        for c in counters:
            stats.add(c)
    return results


def plan_splits(
    state: AcidState,
    write_ids: ValidWriteIdList,
    partition: str | None = None,
    *,
    plain_format: str | None = None,
) -> list[ReadSplit]:
    """Group a directory's selected files by bucket id: one split per bucket.

    ``plain_format`` (``orc``, ``parquet``, ``textfile``) reads an insert-only table's
    directory instead: one split per plain data file (:func:`plan_plain_splits`)."""
    if plain_format is not None:
        return plan_plain_splits(state, plain_format, partition)
    data: dict[int, list[tuple[int, DataFileRef]]] = defaultdict(list)
    deletes: dict[int, list[str]] = defaultdict(list)
    sizes: dict[int, int] = defaultdict(int)
    for f in state.original_files:
        if f.bucket_id < 0:  # Trino refuses these too: without a bucket there is no ROW__ID
            raise AcidFormatError(
                f"{f.path}: original file name does not follow Hive's NNNNNN_M[_copy_K] pattern; "
                "its bucket (and so its rows' ROW__IDs) cannot be determined"
            )
        data[f.bucket_id].append((0, DataFileRef(f.path, ORIGINAL_KIND, size=f.size)))
        sizes[f.bucket_id] += f.size
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    for order, d in enumerate(dirs, start=1):
        if d.is_delete:
            for af in d.files:
                deletes[af.bucket_id].append(af.path)
                sizes[af.bucket_id] += af.size
            continue
        filter_ids = False if d.is_base else _range_needs_filter(write_ids, d)
        for af in d.files:
            ref = DataFileRef(
                af.path,
                ORIGINAL_KIND if d.is_raw else ACID_KIND,
                filter_write_ids=filter_ids,
                flush_length_path=af.flush_length_path if _honours_flush_length(d) else None,
                synthetic_write_id=(d.write_id if d.is_base else d.min_write_id) if d.is_raw else 0,
                synthetic_statement_id=max(d.statement_id, 0) if d.is_raw and not d.is_base else 0,
                size=af.size,
            )
            data[af.bucket_id].append((order, ref))
            sizes[af.bucket_id] += af.size
    splits = []
    for bucket in sorted(set(data) | set(deletes)):
        if bucket not in data:
            continue  # delete events for a bucket with no rows delete nothing
        files = tuple(ref for _, ref in sorted(data[bucket], key=lambda x: x[0]))
        splits.append(
            ReadSplit(bucket, files, tuple(deletes.get(bucket, ())), partition, sizes[bucket])
        )
    return splits


_PLAIN_KINDS = {ORC: ORIGINAL_KIND, PARQUET: PARQUET_KIND, TEXTFILE: TEXT_KIND}


def plan_plain_splits(
    state: AcidState, plain_format: str, partition: str | None = None
) -> list[ReadSplit]:
    """An insert-only table's directory as splits, one per data file: the original files (no
    base), the base, then the insert deltas, in ``acid_state``'s order. A directory's whole
    write-id range is valid or it was not selected, so no row is checked."""
    if plain_format not in _PLAIN_KINDS:
        raise AcidFormatError(f"unknown file format {plain_format!r} of an insert-only table")
    kind = _PLAIN_KINDS[plain_format]
    dirs = ([state.base] if state.base is not None else []) + list(state.insert_deltas)
    files = [(f.path, f.size, max(f.bucket_id, 0)) for f in state.original_files]
    files += [(f.path, f.size, f.bucket_id) for d in dirs for f in d.files]
    return [
        ReadSplit(bucket, (DataFileRef(path, kind, size=size),), (), partition, size)
        for path, size, bucket in files
    ]


def pin_flush_lengths(splits: Sequence[ReadSplit], filesystem: pafs.FileSystem) -> list[ReadSplit]:
    """``splits`` with each streaming file's committed length read from its side file now, once.

    The read's later steps (the check for wide timestamps, the read itself) then use the same
    bytes of the file and read no side file again, however many commits land meanwhile (the
    snapshot sees none of them: it was taken before the side file was read). A file whose side
    file is not pinned is measured when it is read."""

    def pinned(ref: DataFileRef) -> DataFileRef:
        if ref.flush_length_path is None:
            return ref
        length = read_flush_length(filesystem, ref.flush_length_path)
        return replace(ref, flush_length_path=None, logical_length=length)

    return [
        replace(s, data_files=tuple(pinned(f) for f in s.data_files))
        if any(f.flush_length_path for f in s.data_files)
        else s
        for s in splits
    ]


def _committed_length(ref: DataFileRef, filesystem: pafs.FileSystem) -> int | None:
    """The bytes of ``ref`` a read may use: its pinned or side-file length (``0``: nothing
    committed yet), or ``None`` for the whole file."""
    if ref.flush_length_path is None:
        return ref.logical_length
    return read_flush_length(filesystem, ref.flush_length_path)


def wide_columns_of_splits(
    splits: Sequence[ReadSplit], filesystem: pafs.FileSystem, row_schema: pa.Schema
) -> frozenset[str]:
    """The ``timestamp`` columns of ``row_schema`` that a data file of ``splits`` holds beyond
    the nanosecond range (its footer statistics): read them at microseconds, as
    ``widen_schema(row_schema, …)`` (:mod:`.wide_timestamps`)."""
    acid: list[tuple[str, int | None]] = []
    plain: list[tuple[str, int | None]] = []
    parquet: list[str] = []
    for ref in (f for s in splits for f in s.data_files):
        length = _committed_length(ref, filesystem)
        if length == 0:
            continue  # a streaming file with nothing committed yet
        if ref.kind == ACID_KIND:
            acid.append((ref.path, length))
        elif ref.kind == ORIGINAL_KIND:
            plain.append((ref.path, length))
        elif ref.kind == PARQUET_KIND:
            parquet.append(ref.path)
    return (
        wide_columns(filesystem, acid, row_schema)
        | wide_columns(filesystem, plain, row_schema, acid=False)
        | wide_parquet_columns(filesystem, parquet, row_schema)
    )


def row_schema_of(schema: pa.Schema, columns: Sequence[str]) -> pa.Schema:
    """The fields of ``schema`` named in ``columns`` (others ignored)."""
    return pa.schema([schema.field(c) for c in columns if schema.get_field_index(c) >= 0])


def read_split(
    split: ReadSplit,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    *,
    columns: Sequence[str] | None = None,
    with_row_id: bool = False,
    filters: Filters | None = None,
    schema: pa.Schema | None = None,
    stats: ReadStats | None = None,
    row_ids: DeleteSet | None = None,
    delete_events_cap: int | None = None,
    deleted: DeleteLookup | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the visible rows of one split, one stripe at a time (only those named by
    ``row_ids`` when it is given). Above ``delete_events_cap`` delete events (Hive's
    ``hive.transactional.events.mem``; default :func:`~.delete_merge.delete_events_cap`) the
    split's delete events are merged in key order instead of held (:mod:`.delete_merge`).
    ``deleted``: the split's delete events when the caller already loaded them
    (:func:`read_balanced`)."""
    stats = stats if stats is not None else ReadStats()
    if deleted is None:
        deleted = split_deletes(filesystem, split.delete_files, write_ids, stats, delete_events_cap)
    original_offsets: dict[tuple[int, int], int] = defaultdict(
        int
    )  # (write id, stmt) -> next rowid
    wanted = list(columns) if columns is not None else None
    filter_expr = pq.filters_to_expression(filters) if filters else None
    filter_cols = _filter_columns(filters) if filters else []

    def file_read(row_cols: list[str]) -> FileRead:
        read_cols = list(dict.fromkeys(row_cols + [c for c in filter_cols if c not in row_cols]))
        return FileRead(
            read_cols, row_cols, deleted, with_row_id, filters, filter_expr, schema, stats, row_ids
        )

    for ref in split.data_files:
        length = _committed_length(ref, filesystem)
        if length == 0:
            continue  # a streaming file with nothing committed yet
        if ref.kind in (PARQUET_KIND, TEXT_KIND):
            assert schema is not None, "an insert-only table's files are read with its schema"
            read = file_read(_resolve_columns(wanted, schema, []))
            stats.files.append(ref.path)
            batches = read_plain_batches(filesystem, ref.path, ref.kind, read.read_cols, schema)
            yield from read_plain(batches, read, ref.path)
            continue
        with OrcDataFile(
            filesystem, ref.path, logical_length=length, expect_acid=ref.kind == ACID_KIND
        ) as f:
            stats.files.append(ref.path)
            file_cols = f.row_schema.names
            read = file_read(_resolve_columns(wanted, schema, file_cols))
            if ref.kind == ORIGINAL_KIND:
                key = (ref.synthetic_write_id, ref.synthetic_statement_id)
                first = original_offsets[key]
                original_offsets[key] += f.num_rows
                yield from read_original(f, ref, split.bucket_id, first, read)
            else:
                yield from read_events(f, ref, write_ids, read)


def output_schema(
    row_schema: pa.Schema, columns: Sequence[str] | None, with_row_id: bool
) -> pa.Schema:
    """The schema :func:`read_acid` returns for a table schema and a projection."""
    fields = list(row_schema) if columns is None else [_field(row_schema, c) for c in columns]
    if with_row_id:
        fields = [pa.field(t.ROW_ID_COLUMN, t.ROW_ID_TYPE), *fields]
    return pa.schema(fields)


def out_schema_row(schema: pa.Schema) -> pa.Schema:
    """The row part of an output schema (without ``row__id``)."""
    return pa.schema([f for f in schema if f.name != t.ROW_ID_COLUMN])


# --------------------------------------------------------------------------- helpers


def _range_needs_filter(write_ids: ValidWriteIdList, d: Any) -> bool:
    return bool(
        write_ids.is_write_id_range_valid(d.min_write_id, d.max_write_id) != RangeResponse.ALL
    )


def _honours_flush_length(d: Any) -> bool:
    # Only open streaming deltas (min != max, no visibility suffix) have meaningful side files.
    return not d.is_base and d.min_write_id != d.max_write_id and d.visibility_txn_id == 0


def _table_schema(
    filesystem: pafs.FileSystem, state: AcidState, schema: pa.Schema | None
) -> pa.Schema:
    if schema is not None:
        return schema
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    for d in dirs:
        for af in d.files:
            side = af.flush_length_path if _honours_flush_length(d) else None
            length = read_flush_length(filesystem, side) if side else None
            if length == 0:
                continue
            with OrcDataFile(filesystem, af.path, logical_length=length, expect_acid=None) as f:
                return f.row_schema
    for of in state.original_files:
        with OrcDataFile(filesystem, of.path, expect_acid=False) as f:
            return f.row_schema
    return pa.schema([])


def _field(schema: pa.Schema, name: str) -> pa.Field:
    idx = schema.get_field_index(name)
    if idx < 0:
        raise AcidSchemaError(f"no column {name!r}; the table has {schema.names}")
    return schema.field(idx)


def _resolve_columns(
    wanted: list[str] | None, schema: pa.Schema | None, file_cols: list[str]
) -> list[str]:
    if wanted is not None:
        return wanted
    return list(schema.names) if schema is not None else list(file_cols)


def _filter_columns(filters: Filters) -> list[str]:
    out: list[str] = []
    for conj in to_dnf(filters):
        for col, _, _ in conj:
            if col not in out:
                out.append(col)
    return out
