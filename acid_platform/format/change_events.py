"""The change events of one table or partition directory between two write ids.

Hive's split-update files already say what each write id did: an insert event carries its
write id in its ROW__ID (``originalTransaction == currentTransaction``), and a delete event
carries the deleting write id (``currentTransaction``) beside the ROW__ID of the row it deletes.
:func:`read_change_events` reads, for a window of write ids ``(after, upto]`` under one snapshot:

* **inserts**: the rows inserted by a write id of the window, from the insert deltas whose
  write-id range meets the window (stripes of other write ids are read but dropped);
* **deletes**: the delete events of a write id of the window, from the delete deltas whose
  range meets it, each with the values of the row it deleted (its *preimage*), looked up by
  ROW__ID in the base, deltas or original files that can hold that row's write id — only the
  stripes whose key range holds one of them are read. A delete whose row cannot be found (a
  dangling delete, see ``table.verify``) keeps NULL values.

A row inserted and deleted by the same write id was never visible to any snapshot: neither
event is reported. A row inserted by one write id of the window and deleted by a later one is
reported twice (full history, one entry per write id).

Minor compaction merges deltas but keeps every event's ROW__ID and currentTransaction, so the
answer does not change. A base (major compaction, or INSERT OVERWRITE) keeps no history below
its write id: :func:`history_start` is the lowest ``after`` a window may start at.

Only write ids valid in the snapshot count (committed; aborted and open ones never do).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import NotEnoughHistoryError
from acid_platform.format import types as t
from acid_platform.format.acid_state import AcidState
from acid_platform.format.delete_set import DeleteSet
from acid_platform.format.file_reader import valid_write_id_mask
from acid_platform.format.merge_on_read import ReadSplit, plan_splits, read_split
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.write_id_list import ValidWriteIdList

#: The write id of a change: the inserting write id, or the deleting one.
CHANGE_WRITE_ID = "_write_id"
#: True for a delete event (the row values are the deleted row's), False for an insert.
CHANGE_DELETED = "_deleted"


@dataclass(frozen=True)
class WriteIdWindow:
    """The write ids ``after < w <= upto`` (``after`` excluded, as a snapshot at ``after``
    already holds its changes)."""

    after: int
    upto: int

    def __post_init__(self) -> None:
        if self.after < 0 or self.upto < self.after:
            raise ValueError(f"write id window ({self.after}, {self.upto}] is empty or negative")

    def mask(self, write_ids: np.ndarray) -> np.ndarray:
        """Which of ``write_ids`` fall in the window."""
        return (write_ids > self.after) & (write_ids <= self.upto)

    def meets(self, low: int, high: int) -> bool:
        """Whether the range ``[low, high]`` holds a write id of the window."""
        return high > self.after and low <= self.upto


def history_start(state: AcidState, *, insert_only: bool = False) -> int:
    """The lowest ``after`` a window may start at in a directory: the write id of its base (a
    base keeps no history below it), else 0. In an insert-only table a minor-compacted delta
    ``delta_<lo>_<hi>_v<T>`` keeps none either (its plain rows carry no write id): its ``hi``."""
    start = max(state.base.write_id, 0) if state.base is not None else 0
    if insert_only:
        merged = [d.max_write_id for d in state.insert_deltas if d.min_write_id != d.max_write_id]
        start = max([start, *merged])
    return start


def read_plain_change_events(
    state: AcidState,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    window: WriteIdWindow,
    row_schema: pa.Schema,
    file_format: str,
) -> Iterator[pa.Table]:
    """The changes of ``window`` in an insert-only table's directory: inserts only, one table
    per delta of one write id in the window (``row__id`` NULL: plain files have none)."""
    start = history_start(state, insert_only=True)
    if window.after < start:
        raise NotEnoughHistoryError(
            f"no history below write id {start}; changes after write id {window.after} "
            "cannot be read here"
        )
    schema = change_schema(row_schema)
    for d in state.insert_deltas:
        if not window.meets(d.min_write_id, d.max_write_id):
            continue
        only = dataclasses.replace(state, base=None, original_files=(), deltas=(d,))
        for split in plan_splits(only, write_ids, plain_format=file_format):
            for batch in read_split(split, filesystem, write_ids, schema=row_schema):
                n = batch.num_rows
                yield pa.Table.from_arrays(
                    [
                        pa.nulls(n, t.ROW_ID_TYPE),
                        pa.array(np.full(n, d.max_write_id, np.int64)),
                        pa.array(np.zeros(n, bool)),
                        *batch.columns,
                    ],
                    schema=schema,
                )


def change_schema(row_schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of :func:`read_change_events`' tables: ``row__id``, ``_write_id``,
    ``_deleted``, then ``columns`` of ``row_schema`` (default all)."""
    names = list(row_schema.names) if columns is None else list(columns)
    return pa.schema(
        [
            pa.field(t.ROW_ID_COLUMN, t.ROW_ID_TYPE),
            pa.field(CHANGE_WRITE_ID, pa.int64()),
            pa.field(CHANGE_DELETED, pa.bool_()),
            *(row_schema.field(n) for n in names),
        ]
    )


def read_change_events(
    state: AcidState,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    window: WriteIdWindow,
    row_schema: pa.Schema,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.Table]:
    """The changes of ``window`` in one directory (its ``state`` for the snapshot
    ``write_ids``), one table per bucket in bucket order: inserts, then deletes with their
    preimages (see module docs). ``row_schema`` is the table's data columns; ``columns`` picks
    some of them (default all).

    Raises :class:`~acid_platform.errors.NotEnoughHistoryError` when the window starts below
    :func:`history_start`.
    """
    start = history_start(state)
    if window.after < start:
        raise NotEnoughHistoryError(
            f"{state.base.path if state.base else ''}: no history below write id {start}; "
            f"changes after write id {window.after} cannot be read here"
        )
    schema = change_schema(row_schema, columns)
    in_window = [d for d in state.deltas if window.meets(d.min_write_id, d.max_write_id)]
    inserts = dataclasses.replace(
        state, base=None, original_files=(), deltas=tuple(d for d in in_window if not d.is_delete)
    )
    insert_splits = {s.bucket_id: s for s in plan_splits(inserts, write_ids)}
    delete_paths: dict[int, list[str]] = defaultdict(list)
    for d in in_window:
        if d.is_delete:
            for f in d.files:
                delete_paths[f.bucket_id].append(f.path)
    deletes = {
        b: delete_events(filesystem, paths, write_ids, window) for b, paths in delete_paths.items()
    }
    targets = [e[0][e[3] != e[0]] for e in deletes.values()]
    preimage_splits = _preimage_splits(
        state, write_ids, np.concatenate([np.empty(0, np.int64), *targets])
    )
    for bucket in sorted(set(insert_splits) | set(deletes)):
        events = deletes.get(bucket, _NO_EVENTS)
        parts = []
        if bucket in insert_splits:
            parts.append(
                _inserted(
                    insert_splits[bucket], filesystem, write_ids, window, events, schema, row_schema
                )
            )
        if len(events[0]):
            parts.append(
                _deleted(
                    preimage_splits.get(bucket), filesystem, write_ids, events, schema, row_schema
                )
            )
        table = pa.concat_tables(parts) if parts else schema.empty_table()
        if table.num_rows:
            yield table


def delete_events(
    filesystem: pafs.FileSystem,
    paths: Sequence[str],
    write_ids: ValidWriteIdList,
    window: WriteIdWindow,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(originalWriteId, bucket, rowId, deleting write id) of the delete events of ``paths``
    whose deleting write id is valid in the snapshot and in ``window``, sorted by ROW__ID, each
    row once."""
    exceptions = np.asarray(write_ids.exceptions, np.int64)
    chunks: list[list[np.ndarray]] = []
    for p in paths:
        with OrcDataFile(filesystem, p, expect_acid=True) as f:
            for _, b in f.iter_stripes(t.ROW_VERSION_FIELDS):
                cols = [b.column(i).to_numpy(zero_copy_only=False) for i in range(4)]
                keep = window.mask(cols[3]) & valid_write_id_mask(
                    cols[3], write_ids.high_watermark, exceptions
                )
                chunks.append([c[keep] for c in cols])
    if not chunks:
        return _NO_EVENTS
    owid, bucket, rowid, current = (
        np.concatenate([c[i] for c in chunks]).astype(dtype)
        for i, dtype in enumerate((np.int64, np.int32, np.int64, np.int64))
    )
    order = np.lexsort((current, rowid, bucket, owid))
    owid, bucket, rowid, current = owid[order], bucket[order], rowid[order], current[order]
    if len(owid) > 1:  # a row is deleted once; a repeated event (two statements) counts once
        first = np.ones(len(owid), bool)
        first[1:] = (
            (owid[1:] != owid[:-1]) | (bucket[1:] != bucket[:-1]) | (rowid[1:] != rowid[:-1])
        )
        owid, bucket, rowid, current = owid[first], bucket[first], rowid[first], current[first]
    return owid, bucket, rowid, current


# --------------------------------------------------------------------------- helpers

_NO_EVENTS: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = (
    np.empty(0, np.int64),
    np.empty(0, np.int32),
    np.empty(0, np.int64),
    np.empty(0, np.int64),
)


def _preimage_splits(
    state: AcidState, write_ids: ValidWriteIdList, target_write_ids: np.ndarray
) -> dict[int, ReadSplit]:
    """Per bucket, the files that can hold a row inserted by one of ``target_write_ids``: the
    base, the insert deltas whose range holds one, original files for write id 0."""
    if not len(target_write_ids):
        return {}
    ids = np.unique(target_write_ids)

    def holds(low: int, high: int) -> bool:
        return bool(np.any((ids >= low) & (ids <= high)))

    base = state.base if state.base is not None and holds(0, state.base.write_id) else None
    holding = dataclasses.replace(
        state,
        base=base,
        deltas=tuple(
            d for d in state.deltas if not d.is_delete and holds(d.min_write_id, d.max_write_id)
        ),
        original_files=state.original_files if holds(0, 0) else (),
    )
    return {s.bucket_id: s for s in plan_splits(holding, write_ids)}


def _inserted(
    split: ReadSplit,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    window: WriteIdWindow,
    events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    schema: pa.Schema,
    row_schema: pa.Schema,
) -> pa.Table:
    """The rows of ``split`` inserted by a write id of the window, minus those the same write
    id deleted again."""
    owid, bucket, rowid, current = events
    same = current == owid
    undone = DeleteSet.from_arrays(owid[same], bucket[same], rowid[same])
    batches = []
    for batch in _rows(split, filesystem, write_ids, schema, row_schema):
        keys = [a.to_numpy(zero_copy_only=False) for a in batch.column(0).flatten()]
        keep = window.mask(keys[0]) & ~undone.contains(*keys)
        if keep.any():
            kept = batch.filter(pa.array(keep))
            written = kept.column(0).field(0)
            batches.append(
                pa.RecordBatch.from_arrays(
                    [kept.column(0), written, pa.repeat(pa.scalar(False), kept.num_rows)]
                    + kept.columns[1:],
                    schema=schema,
                )
            )
    return pa.Table.from_batches(batches, schema=schema)


def _deleted(
    split: ReadSplit | None,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    events: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    schema: pa.Schema,
    row_schema: pa.Schema,
) -> pa.Table:
    """The delete events of one bucket (rows deleted by a write id after the one that inserted
    them), with the deleted rows' values read by ROW__ID."""
    owid, bucket, rowid, current = (a[events[3] != events[0]] for a in events)
    found_schema = pa.schema([schema.field(0), *_row_part(schema)])
    batches: list[pa.RecordBatch] = []
    if split is not None and len(owid):
        wanted = DeleteSet.from_arrays(owid, bucket, rowid)
        batches = list(_rows(split, filesystem, write_ids, schema, row_schema, wanted))
    found = pa.Table.from_batches(batches, schema=found_schema)
    at = _positions(found.column(0), (owid, bucket, rowid))
    values = found.drop_columns([t.ROW_ID_COLUMN]).take(pa.array(at, pa.int64()))
    row_id = pa.StructArray.from_arrays(
        [pa.array(owid), pa.array(bucket), pa.array(rowid)], fields=list(t.ROW_ID_TYPE)
    )
    return pa.Table.from_arrays(
        [row_id, pa.array(current), pa.repeat(pa.scalar(True), len(owid)), *values.columns],
        schema=schema,
    )


def _rows(
    split: ReadSplit,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    schema: pa.Schema,
    row_schema: pa.Schema,
    row_ids: DeleteSet | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``split``'s data files with their ``row__id`` — deleted ones too (its delete
    files are not applied) — only those named by ``row_ids`` when given."""
    return read_split(
        dataclasses.replace(split, delete_files=()),
        filesystem,
        write_ids,
        columns=_row_part(schema).names,
        with_row_id=True,
        schema=row_schema,
        row_ids=row_ids,
    )


def _positions(
    row_ids: pa.ChunkedArray, keys: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> list[int | None]:
    """For each key (originalWriteId, bucket, rowId), its position in ``row_ids`` (``None``
    when absent)."""
    found = [a.to_numpy(zero_copy_only=False).tolist() for a in row_ids.combine_chunks().flatten()]
    where = {k: i for i, k in enumerate(zip(*found, strict=True))}
    return [where.get(k) for k in zip(*(a.tolist() for a in keys), strict=True)]


def _row_part(schema: pa.Schema) -> pa.Schema:
    return pa.schema(list(schema)[3:])


__all__ = [
    "CHANGE_DELETED",
    "CHANGE_WRITE_ID",
    "WriteIdWindow",
    "change_schema",
    "delete_events",
    "history_start",
    "read_plain_change_events",
    "read_change_events",
]
