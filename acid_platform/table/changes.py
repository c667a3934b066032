"""The change feed: a table's committed inserts, deletes and updates between two write ids.

``Table.changes(from_write_id, to_write_id)`` returns what the write ids
``from_write_id < w <= to_write_id`` did — the difference between the snapshot at
``from_write_id`` and the one at ``to_write_id``, one entry per change and per write id (full
history: a row inserted by one write id of the range and deleted by a later one appears
twice). Columns: the table's columns (data, then partition), then

* ``_change_type``: ``insert``, ``delete``, ``update_preimage`` or ``update_postimage``, as
  in Delta Lake's change data feed;
* ``_write_id``: the write id that made the change (Delta's ``_commit_version``);
* ``row__id``: the ROW__ID of the row version concerned — the inserted row's, or the deleted
  row's (struct ``writeid``, ``bucketid``, ``rowid``, as ``SELECT row__id`` shows it).

A delete carries the deleted row's values (its preimage), read by ROW__ID from wherever that
row sits (an older delta, the base). **Updates**: Hive's split-update writes an UPDATE as a
delete event plus an insert event of the same write id, with no link between the two. With
``key`` (columns that identify a row, like Iceberg's identifier columns) a delete and an insert
of the same write id, in the same partition, with equal non-NULL key values are reported as
``update_preimage`` / ``update_postimage`` when they are the only delete and the only insert of
that (write id, key); everything else stays ``delete`` / ``insert``. Without ``key`` nothing is
paired. A row inserted and deleted by the same write id was never visible and is not reported.

Only write ids committed in the one snapshot read count: aborted ones never, and ``to`` may
not pass the newest *final* write id (:func:`final_write_id`: below every open write id), so a
range once answered never changes. Minor compaction keeps every event's write ids: the answer
is the same before and after it. A base — a major compaction, or an INSERT OVERWRITE — keeps no
history below its write id: a range starting below it raises
:class:`~acid_platform.errors.ChangeHistoryUnavailableError` naming the partition and the
earliest write id it can answer from.

An **insert-only** table's feed holds inserts only (its rows are never updated or deleted),
``row__id`` NULL (its plain files carry none), one write id per ``delta_w_w_s``; a
minor-compacted ``delta_<lo>_<hi>_v<T>`` mixes write ids, so like a base it keeps no history
below ``hi``.

Order: by ``_write_id``; within a write id, by partition, then deletes and update pairs (the
postimage right after its preimage) by the deleted row's ROW__ID, then inserts by ROW__ID.
``Table.changes`` returns a lazy :class:`ChangeScan`: :meth:`ChangeScan.to_batches` (or
``to_arrow_batch_reader``) streams partition by partition (memory: one partition's changes),
each partition in that order; :meth:`ChangeScan.to_arrow` (or ``to_pandas``) sorts the whole by
write id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import (
    ChangeHistoryUnavailableError,
    InvalidChangeRangeError,
    ScanClosedError,
    UnsupportedOperationError,
)
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_TYPE, Snapshot, ValidWriteIdList
from acid_platform.format.change_events import (
    CHANGE_DELETED,
    CHANGE_WRITE_ID,
    WriteIdWindow,
    history_start,
    read_change_events,
    read_plain_change_events,
)
from acid_platform.format.fs import Location
from acid_platform.format.parallel import run_parallel
from acid_platform.metastore import Metastore
from acid_platform.metastore.model import TableSpec
from acid_platform.table.scan import LeaseRelease, PartitionFiles, plan_files, wanted_columns
from acid_platform.table.scan_where import ScanFilter
from acid_platform.table.schema import data_schema, table_schema

if TYPE_CHECKING:
    import pandas as pd

CHANGE_TYPE = "_change_type"
WRITE_ID = CHANGE_WRITE_ID
INSERT, DELETE = "insert", "delete"
UPDATE_PREIMAGE, UPDATE_POSTIMAGE = "update_preimage", "update_postimage"
#: The change types by their code in the feed (0 … 3). A tuple, not an Arrow array: building one
#: when the module loads would load pandas (pyarrow looks for it), and the `acid` command does
#: not want that for its SELECTs.
CHANGE_TYPES = (INSERT, DELETE, UPDATE_PREIMAGE, UPDATE_POSTIMAGE)


def change_feed_schema(spec: TableSpec) -> pa.Schema:
    """The feed's columns: the table's, ``_change_type``, ``_write_id``, ``row__id``."""
    return pa.schema(
        [
            *table_schema(spec),
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(WRITE_ID, pa.int64()),
            pa.field(ROW_ID_COLUMN, ROW_ID_TYPE),
        ]
    )


def final_write_id(write_ids: ValidWriteIdList, own_write_id: int | None = None) -> int:
    """The newest write id whose changes are final in a snapshot: below every open write id
    (and below ``own_write_id``, the reading transaction's uncommitted one)."""
    top = write_ids.high_watermark
    if write_ids.min_open_write_id is not None:
        top = min(top, write_ids.min_open_write_id - 1)
    if own_write_id is not None:
        top = min(top, own_write_id - 1)
    return max(top, 0)


def newest_final_write_id(metastore: Metastore, spec: TableSpec) -> int:
    """The table's newest final write id now (:func:`final_write_id` of a fresh snapshot; one
    metastore read, no reader lease): how far a change-feed consumer can read."""
    return final_write_id(metastore.valid_write_ids(None, spec.db, spec.name))


def change_window(
    spec: TableSpec,
    write_ids: ValidWriteIdList,
    from_write_id: int,
    to_write_id: int | None,
    own_write_id: int | None = None,
) -> WriteIdWindow:
    """The window ``(from_write_id, to_write_id]`` checked against the snapshot.

    ``to`` defaults to :func:`final_write_id`; then a ``from_write_id`` past it gives an empty
    window (nothing final after it yet: a consumer polling from the last write id it read may
    be ahead once the cleaner forgot trailing aborted write ids)."""
    final = final_write_id(write_ids, own_write_id)
    upto = max(final, from_write_id) if to_write_id is None else to_write_id
    name = spec.full_name
    if from_write_id < 0:
        raise InvalidChangeRangeError(f"changes of {name}: from_write_id {from_write_id} < 0")
    if to_write_id is None and upto > final:
        return WriteIdWindow(from_write_id, from_write_id)
    if upto > final:
        raise InvalidChangeRangeError(
            f"changes of {name} up to write id {upto} are not final: the newest write id whose "
            f"changes are final is {final} (a later one is still open or not yet allocated)"
        )
    if upto < from_write_id:
        raise InvalidChangeRangeError(
            f"changes of {name}: from_write_id {from_write_id} is after to_write_id {upto}"
        )
    return WriteIdWindow(from_write_id, upto)


class ChangeScan:
    """A planned, lazily read change feed of one table under one snapshot (module docs).

    Like a :class:`~acid_platform.table.scan.TableScan` it releases its reader lease (if it
    holds one) once read or closed (or garbage collected unread), and can then not be read
    again."""

    def __init__(
        self,
        spec: TableSpec,
        location: Location,
        snapshot: Snapshot,
        window: WriteIdWindow,
        *,
        key: Sequence[str] = (),
        where: ScanFilter | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        self.spec = spec
        self.location = location
        self.snapshot = snapshot
        self.window = window
        self.key = tuple(wanted_columns(spec, key)) if key else ()
        self.where = where if where is not None else ScanFilter()
        self.schema = change_feed_schema(spec)
        self._release = LeaseRelease(self, release) if release is not None else None
        self._files: list[PartitionFiles] | None = None
        self._closed = False

    def plan_files(self) -> list[PartitionFiles]:
        """The partitions read and their files; raises
        :class:`~acid_platform.errors.ChangeHistoryUnavailableError` when one holds a base
        newer than the window's start."""
        if self._files is None:
            files = plan_files(self.spec, self.location, self.snapshot, self.where)
            check_history(self.spec, files, self.window)
            self._files = files
        return self._files

    def to_batches(self) -> pa.RecordBatchReader:
        """The changes, partition by partition (each in feed order), read as consumed;
        releases the scan when exhausted or closed."""
        self._check_open()
        try:
            files = self.plan_files()
        except BaseException:
            self.close()
            raise
        return pa.RecordBatchReader.from_batches(self.schema, self._stream(files))

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """:meth:`to_batches` (pyiceberg's name for it)."""
        return self.to_batches()

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """Every change as a pandas DataFrame (``kwargs`` go to ``pyarrow.Table.to_pandas``);
        releases the scan."""
        return self.to_arrow().to_pandas(**kwargs)

    def to_arrow(self) -> pa.Table:
        """Every change in one table, ordered by write id (partitions read in parallel);
        releases the scan."""
        self._check_open()
        try:
            files = self.plan_files()
            parts = run_parallel([functools.partial(self.partition_changes, p) for p in files])
            table = pa.concat_tables([self.schema.empty_table(), *parts])
            write_ids = table.column(WRITE_ID).to_numpy()
            if bool(np.all(write_ids[1:] >= write_ids[:-1])):
                return table  # one partition, or partitions of disjoint write ids
            return table.take(pc.sort_indices(table, [(WRITE_ID, "ascending")]))  # stable
        finally:
            self.close()

    def partition_changes(self, part: PartitionFiles) -> pa.Table:
        """The changes of one planned partition, labelled, filtered and in feed order."""
        read = read_change_events
        if part.plain_format is not None:  # insert-only: inserts only, no ROW__IDs
            read = functools.partial(read_plain_change_events, file_format=part.plain_format)
        events = list(
            read(
                part.state,
                self.location.filesystem,
                self.snapshot.write_ids,
                self.window,
                data_schema(self.spec),
            )
        )
        if not events:
            return self.schema.empty_table()
        table = label_changes(pa.concat_tables(events), self.key, self.spec, part.values)
        if self.where.rows is not None:
            table = table.take(pa.array(self.where.rows(table), pa.int64()))
        return table

    def close(self) -> None:
        """Release the snapshot's reader lease, if the scan holds one (idempotent)."""
        self._closed = True
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> ChangeScan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        w = self.window
        return f"ChangeScan({self.spec.full_name!r}, from={w.after}, to={w.upto})"

    def _check_open(self) -> None:
        if self._closed:
            raise ScanClosedError(
                f"the change feed of {self.spec.full_name} was already read or closed (its "
                "reader lease is released); plan it again"
            )

    def _stream(self, files: list[PartitionFiles]) -> Iterator[pa.RecordBatch]:
        try:
            for part in files:
                for batch in self.partition_changes(part).to_batches():
                    if batch.num_rows:
                        yield batch
        finally:
            self.close()


def check_history(
    spec: TableSpec, partitions: Sequence[PartitionFiles], window: WriteIdWindow
) -> None:
    """Raise :class:`~acid_platform.errors.ChangeHistoryUnavailableError` when a partition's
    base is newer than the window's start (its history below the base is gone)."""
    starts = [(p, history_start(p.state, insert_only=spec.is_insert_only)) for p in partitions]
    late = [(p, start) for p, start in starts if start > window.after]
    if not late:
        return
    part, earliest = max(late, key=lambda x: x[1])
    where = f"partition {part.name}" if part.name else "the table"
    base = part.state.base.name if part.state.base is not None else "a compacted delta"
    others = f" ({len(late)} partitions in all)" if len(late) > 1 else ""
    raise ChangeHistoryUnavailableError(
        f"the changes of {spec.full_name} after write id {window.after} are no longer "
        f"available in {where}{others}: {base} (a major compaction or INSERT OVERWRITE up to "
        f"write id {earliest}) keeps no history below it; the earliest from_write_id these "
        f"partitions answer is {earliest}",
        table=spec.full_name,
        partition=part.name or None,
        earliest_write_id=earliest,
    )


def label_changes(
    events: pa.Table, key: Sequence[str], spec: TableSpec, partition_values: Sequence[object]
) -> pa.Table:
    """One partition's change events (:func:`~acid_platform.format.change_events.read_change_events`)
    as feed rows: partition columns added, change types set (updates paired on ``key``), in
    feed order."""
    n = events.num_rows
    schema = change_feed_schema(spec)
    parts = dict(zip(spec.partition_column_names, partition_values, strict=True))
    columns = [
        events.column(f.name)
        if f.name not in parts
        else pa.repeat(pa.scalar(parts[f.name], f.type), n)
        for f in table_schema(spec)
    ]
    deleted = events.column(CHANGE_DELETED).to_numpy(zero_copy_only=False).astype(bool)
    write_id = events.column(CHANGE_WRITE_ID).to_numpy(zero_copy_only=False)
    kinds = np.where(deleted, 1, 0).astype(np.int8)  # indices into CHANGE_TYPES
    anchor = np.arange(n)
    post = np.zeros(n, bool)
    if key:
        table = pa.Table.from_arrays(columns, schema=table_schema(spec))
        pre_rows, post_rows = pair_updates(table, write_id, deleted, key)
        kinds[pre_rows], kinds[post_rows] = 2, 3
        anchor[post_rows] = pre_rows
        post[post_rows] = True
    row_id = events.column(ROW_ID_COLUMN).combine_chunks()
    owid, bucket, rowid = (a.to_numpy(zero_copy_only=False) for a in row_id.flatten())
    later = ~(deleted | post)  # unpaired inserts come after the deletes and pairs
    order = np.lexsort((post, rowid[anchor], bucket[anchor], owid[anchor], later, write_id))
    out = pa.Table.from_arrays(
        [
            *columns,
            pa.array(CHANGE_TYPES, pa.string()).take(pa.array(kinds)),
            pa.array(write_id),
            row_id,
        ],
        schema=schema,
    )
    if bool(np.all(order[1:] > order[:-1])):
        return out  # already in order (e.g. one bucket's new rows)
    return out.take(pa.array(order, pa.int64()))


def pair_updates(
    rows: pa.Table, write_id: np.ndarray, deleted: np.ndarray, key: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the (preimage, postimage) pairs: per (write id, key values), exactly one
    delete and one insert, no key value NULL. Only write ids with both deletes and inserts are
    grouped (a load of new rows costs nothing here)."""
    n = rows.num_rows
    names = [f"k{i}" for i in range(len(key))]
    grouped = pa.table(
        {
            "w": write_id,
            **{name: rows.column(k) for name, k in zip(names, key, strict=True)},
            "i": np.arange(n, dtype=np.int64),
            "d": deleted.astype(np.int64),
        }
    )
    both = np.intersect1d(write_id[deleted], write_id[~deleted])
    valid = np.isin(write_id, both)
    for name in names:
        valid &= grouped.column(name).is_valid().to_numpy(zero_copy_only=False)
    try:
        groups = (
            grouped.filter(pa.array(valid))
            .group_by(["w", *names], use_threads=False)
            .aggregate([("d", "sum"), ("i", "count"), ("i", "min"), ("i", "max")])
        )
    except pa.ArrowNotImplementedError as exc:
        raise UnsupportedOperationError(
            f"the change feed cannot pair updates on key {list(key)}: {exc}"
        ) from None
    pairs = pc.and_(pc.equal(groups.column("i_count"), 2), pc.equal(groups.column("d_sum"), 1))
    pairs_np = pairs.to_numpy(zero_copy_only=False)
    low = groups.column("i_min").to_numpy(zero_copy_only=False)[pairs_np]
    high = groups.column("i_max").to_numpy(zero_copy_only=False)[pairs_np]
    low_deleted = deleted[low]
    return np.where(low_deleted, low, high), np.where(low_deleted, high, low)


__all__ = [
    "CHANGE_TYPE",
    "CHANGE_TYPES",
    "DELETE",
    "INSERT",
    "UPDATE_POSTIMAGE",
    "UPDATE_PREIMAGE",
    "WRITE_ID",
    "ChangeScan",
    "change_feed_schema",
    "change_window",
    "check_history",
    "final_write_id",
    "label_changes",
    "newest_final_write_id",
    "pair_updates",
]
