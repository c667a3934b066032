"""The one scan planner: the rows of a table as one snapshot sees them, planned once, read lazily.

:func:`plan_scan` (what ``Table.scan()`` calls) returns a :class:`TableScan`; nothing is listed
or read until asked:

* :meth:`TableScan.plan_files` lists the partition directories, prunes them with the filter's
  partition part, and selects each remaining directory's files for the snapshot (Hive's
  ``getAcidState``) — once per partition, whatever is read afterwards;
* :meth:`TableScan.split_tasks` cuts the files into one :class:`ScanTask` per (partition,
  bucket): picklable, what an engine (Spark) hands to its workers, each read by
  :func:`read_task`;
* :meth:`TableScan.to_batches` (or :meth:`~TableScan.to_arrow_batch_reader`, pyiceberg's name)
  streams the rows split by split, stripe by stripe, as a ``pyarrow.RecordBatchReader``: memory
  is one stripe plus its bucket's delete set, whatever the size of the table;
  :meth:`TableScan.to_arrow` reads every split (in parallel) into one table,
  :meth:`TableScan.to_pandas` into a DataFrame. ``to_arrow`` reads a split that needs no merge
  (no delete events in its bucket, every file one the snapshot sees whole: :func:`whole_tasks`)
  with ``format.file_reader.WholeFileRead``, one decoding call per file and many files to a
  thread's task (a table of thousands of small partitions is thousands of such splits); the
  rows are those :func:`read_task` gives, in the same order.

Partition columns are added to the rows as typed constants and come after the data columns, as
Hive shows them; ``row__id`` comes first when asked for. A scan that holds a reader lease (a
snapshot taken outside a transaction) releases it when it has been read (``to_arrow``
returned, the reader exhausted or closed) or closed — or, forgotten unread, when it is garbage
collected (a forgotten scan does not hold the cleaner back); it can then not be read again.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import (
    MissingFileError,
    ScanClosedError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.format import (
    ROW_ID_COLUMN,
    ROW_ID_TYPE,
    AcidState,
    DeleteLookup,
    DeleteSet,
    ReadSplit,
    ReadStats,
    Snapshot,
    ValidWriteIdList,
    acid_state,
    list_partition_dirs,
    pin_flush_lengths,
    plan_splits,
    read_balanced,
    read_split,
    row_schema_of,
    wide_columns_of_splits,
)
from acid_platform.format.file_reader import WholeFileRead, reads_whole
from acid_platform.format.fs import Location, join
from acid_platform.format.parallel import read_threads, run_parallel
from acid_platform.format.wide_timestamps import widen_schema
from acid_platform.metastore.model import TableSpec
from acid_platform.table.partitions import partition_values_table
from acid_platform.table.scan_where import Filters, ScanFilter
from acid_platform.table.schema import data_schema, partition_schema, table_schema

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionFiles:
    """One partition directory a scan reads: its name (``""`` when unpartitioned), path, typed
    partition values (in partition column order), the files the snapshot selects there and,
    for an insert-only table, the format of its plain data files."""

    name: str
    path: str
    values: tuple[Any, ...]
    state: AcidState
    #: an insert-only table's file format: its directories hold plain data files
    plain_format: str | None = None

    @property
    def size(self) -> int:
        """Bytes of the files the snapshot reads here (rows and delete events)."""
        dirs = ([self.state.base] if self.state.base is not None else []) + list(self.state.deltas)
        return sum(f.size for f in self.state.original_files) + sum(
            f.size for d in dirs for f in d.files
        )


@dataclass(frozen=True)
class ScanTask:
    """One bucket of one partition: a unit of work a worker can read on its own (picklable).

    ``partition`` is the index of the partition in :meth:`TableScan.plan_files`."""

    split: ReadSplit
    partition: int
    partition_values: tuple[Any, ...]


class LeaseRelease:
    """Releases a lazy scan's reader lease once: when called (the scan was read or closed), or
    else when the scan (``owner``) is garbage collected unread, or the interpreter exits — a
    forgotten scan does not hold the cleaner back. ``release`` must not refer to ``owner``."""

    def __init__(self, owner: object, release: Callable[[], None]) -> None:
        self._release = release
        self._finalizer = weakref.finalize(owner, release_quietly, release)

    def __call__(self) -> None:
        if self._finalizer.detach() is not None:
            self._release()


def release_quietly(release: Callable[[], None]) -> None:
    """``release()`` of a collected scan's lease: a failure is logged (the lease then expires,
    unheartbeated, after the metastore's transaction time-out)."""
    try:
        release()
    except Exception as exc:  # noqa: BLE001 - a finalizer must not raise
        log.warning("could not release the reader lease of a scan never read: %s", exc)


class TableScan:
    """A planned, lazily read scan of one table under one snapshot (see module docs)."""

    def __init__(
        self,
        spec: TableSpec,
        location: Location,
        snapshot: Snapshot,
        columns: Sequence[str],
        *,
        with_row_id: bool = False,
        where: ScanFilter | None = None,
        release: Callable[[], None] | None = None,
        delete_events_cap: int | None = None,
        force_wide: bool = False,
    ) -> None:
        if with_row_id and spec.is_insert_only:
            raise UnsupportedOperationError(
                f"{spec.full_name} is an insert-only table: its rows have no ROW__ID"
            )
        self.spec = spec
        #: read every timestamp column at microseconds (a filter compares one with a constant
        #: beyond the nanosecond range: ``schema.has_wide_constant``)
        self.force_wide = force_wide
        #: Hive's ``hive.transactional.events.mem`` for this scan (None: the process default)
        self.delete_events_cap = delete_events_cap
        self.location = location
        self.snapshot = snapshot
        self.columns = tuple(columns)
        self.with_row_id = with_row_id
        self.where = where if where is not None else ScanFilter()
        self._schema: pa.Schema | None = None
        self._wide: frozenset[str] | None = None
        self._release = LeaseRelease(self, release) if release is not None else None
        self._files: list[PartitionFiles] | None = None
        self._tasks: list[ScanTask] | None = None
        self._closed = False

    @property
    def schema(self) -> pa.Schema:
        """The rows' schema: a ``timestamp`` column is ``timestamp[us]`` when the files hold a
        value beyond the nanosecond range (:meth:`wide_columns`), else ``timestamp[ns]``."""
        if self._schema is None:
            self._schema = output_schema(
                self.spec, self.columns, self.with_row_id, self.wide_columns()
            )
        return self._schema

    def wide_columns(self) -> frozenset[str]:
        """The timestamp columns read at microseconds: those whose footer statistics, in a file
        the scan reads, lie beyond the nanosecond range (``format.wide_timestamps``)."""
        if self._wide is None:
            tasks = self.split_tasks()
            self._wide = wide_columns_of(
                self.spec, self.location, tasks, self._read_columns(), force=self.force_wide
            )
        return self._wide

    # ------------------------------------------------------------------ planning
    def plan_files(self) -> list[PartitionFiles]:
        """The partitions the scan reads and their files (listed once, then remembered)."""
        if self._files is None:
            self._files = plan_files(self.spec, self.location, self.snapshot, self.where)
        return self._files

    def split_tasks(self) -> list[ScanTask]:
        """One task per (partition, bucket), in partition then bucket order (planned once, then
        remembered: the check for wide timestamps and the read see the same files and lengths)."""
        if self._tasks is None:
            self._tasks = split_tasks(
                self.plan_files(), self.snapshot.write_ids, self.location.filesystem
            )
        return self._tasks

    # ------------------------------------------------------------------ reading
    def to_batches(self) -> pa.RecordBatchReader:
        """The rows, split by split and stripe by stripe (planned now, read as consumed).

        The scan is released when the reader is exhausted or closed."""
        self._check_open()
        tasks = self.split_tasks()
        return pa.RecordBatchReader.from_batches(self.schema, self._stream(tasks))

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """:meth:`to_batches` (pyiceberg's name for it)."""
        return self.to_batches()

    def to_pandas(self, **kwargs: Any) -> pd.DataFrame:
        """All the rows as a pandas DataFrame (``kwargs`` go to ``pyarrow.Table.to_pandas``);
        releases the scan."""
        return self.to_arrow().to_pandas(**kwargs)

    def to_arrow(self) -> pa.Table:
        """All the rows in one table (splits read in parallel); releases the scan."""
        self._check_open()
        try:
            table = read_files(
                self.spec,
                self.location,
                self.snapshot,
                self.plan_files(),
                self._read_columns(),
                with_row_id=self.with_row_id,
                filters=self.where.pushed,
                delete_events_cap=self.delete_events_cap,
                wide=self.wide_columns(),
                tasks=self.split_tasks(),
            )
            return self._keep(table).select(self.schema.names)
        finally:
            self.close()

    def close(self) -> None:
        """Release the scan's reader lease, if it holds one (idempotent)."""
        self._closed = True
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> TableScan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TableScan({self.spec.full_name!r}, columns={list(self.columns)})"

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self._closed:
            raise ScanClosedError(
                f"the scan of {self.spec.full_name} was already read or closed (its snapshot's "
                "reader lease is released); plan a new scan to read the table again"
            )

    def _stream(self, tasks: list[ScanTask]) -> Iterator[pa.RecordBatch]:
        try:
            for task in tasks:
                for batch in read_task(
                    task,
                    self.spec,
                    self.location.filesystem,
                    self.snapshot.write_ids,
                    self._read_columns(),
                    with_row_id=self.with_row_id,
                    filters=self.where.pushed,
                    delete_events_cap=self.delete_events_cap,
                    wide=self.wide_columns(),
                ):
                    kept = self._keep(pa.Table.from_batches([batch]))
                    for out in kept.select(self.schema.names).to_batches():
                        if out.num_rows:
                            yield out
        finally:
            self.close()

    def _read_columns(self) -> list[str]:
        extra = [c for c in self.where.row_columns if c not in self.columns]
        return [*self.columns, *extra] if self.where.rows is not None else list(self.columns)

    def _keep(self, table: pa.Table) -> pa.Table:
        if self.where.rows is None or table.num_rows == 0:
            return table
        keep = self.where.rows(table)
        if len(keep) == table.num_rows:
            return table
        return table.take(pa.array(keep, pa.int64()))


def plan_scan(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    *,
    columns: Sequence[str] | None = None,
    with_row_id: bool = False,
    include_partition_columns: bool = True,
    where: ScanFilter | None = None,
    release: Callable[[], None] | None = None,
    delete_events_cap: int | None = None,
    force_wide: bool = False,
) -> TableScan:
    """A lazy scan of ``spec`` under ``snapshot`` (see module docs).

    ``columns`` are data and partition columns in the order wanted (default: all, partition
    columns only with ``include_partition_columns``); ``where`` prunes and filters; ``release``
    is called once when the scan is done (it releases the snapshot's reader lease).
    """
    return TableScan(
        spec,
        location,
        snapshot,
        wanted_columns(spec, columns, include_partition_columns),
        with_row_id=with_row_id,
        where=where,
        release=release,
        delete_events_cap=delete_events_cap,
        force_wide=force_wide,
    )


def plan_files(
    spec: TableSpec, location: Location, snapshot: Snapshot, where: ScanFilter | None = None
) -> list[PartitionFiles]:
    """The table's partitions that ``where`` leaves, each with its files for ``snapshot``."""
    fs = location.filesystem
    record = snapshot.files
    if record is not None and fs.get_file_info(location.path).type == pafs.FileType.NotFound:
        raise MissingFileError(
            f"{location.path}: the directory of table {spec.full_name} is missing", location.path
        )
    listed = list_partition_dirs(location.path, list(spec.partition_column_names), fs)
    if record is not None and spec.partition_columns:
        # a recorded partition whose directory is gone is read (and found missing), not skipped
        names = {n for n, _ in listed}
        listed = sorted(
            listed
            + [(n, join(location.path, n)) for n in record.partitions if n and n not in names]
        )
    values: list[tuple[Any, ...]] = [() for _ in listed]
    if spec.partition_columns and listed:
        columns = [(f.name, f.type) for f in partition_schema(spec)]
        table = partition_values_table([n for n, _ in listed], columns, spec.full_name)
        keep = list(range(len(listed)))
        if where is not None and where.partitions is not None:
            keep = [int(i) for i in where.partitions(table)]
        rows = table.take(pa.array(keep, pa.int64())).to_pylist()
        listed = [listed[i] for i in keep]
        values = [tuple(row[c] for c, _ in columns) for row in rows]
    if record is not None:
        record.load(name for name, _ in listed)  # the record of the partitions read, at once
    partition_record = None if record is None else record.partition
    insert_only = spec.is_insert_only
    plain_format = spec.file_format if insert_only else None

    def select(name: str, path: str) -> AcidState:
        return acid_state(
            path,
            snapshot.write_ids,
            snapshot.valid_txns,
            filesystem=fs,
            record=None if partition_record is None else partition_record(name),
            insert_only=insert_only,
        )

    # one listing per partition, on the decoding threads (a listing waits without the GIL)
    states = run_parallel([functools.partial(select, name, path) for name, path in listed])
    return [
        PartitionFiles(name, path, vals, state, plain_format)
        for (name, path), vals, state in zip(listed, values, states, strict=True)
    ]


def split_tasks(
    partitions: Sequence[PartitionFiles], write_ids: ValidWriteIdList, filesystem: pafs.FileSystem
) -> list[ScanTask]:
    """One :class:`ScanTask` per (partition, bucket) of planned ``partitions``, in order; each
    streaming file's committed length is read now, once (``format.pin_flush_lengths``)."""
    return [
        ScanTask(split, i, part.values)
        for i, part in enumerate(partitions)
        for split in pin_flush_lengths(
            plan_splits(part.state, write_ids, part.name or None, plain_format=part.plain_format),
            filesystem,
        )
    ]


def read_task(
    task: ScanTask,
    spec: TableSpec,
    filesystem: pafs.FileSystem,
    write_ids: ValidWriteIdList,
    columns: Sequence[str],
    *,
    with_row_id: bool = False,
    filters: Filters | None = None,
    row_ids: DeleteSet | None = None,
    delete_events_cap: int | None = None,
    wide: frozenset[str] = frozenset(),
    deleted: DeleteLookup | None = None,
    stats: ReadStats | None = None,
) -> Iterator[pa.RecordBatch]:
    """The visible rows of one task, one stripe at a time: ``row__id`` (when asked for), then
    ``columns`` (data and partition columns, in the order given); only the rows named by
    ``row_ids`` when it is given. ``wide``: timestamp columns read at microseconds
    (:func:`wide_columns_of`); ``deleted``: the split's delete events, when loaded already
    (``format.read_balanced``)."""
    schema = output_schema(spec, columns, with_row_id, wide)
    parts = dict(zip(spec.partition_column_names, task.partition_values, strict=False))
    data_cols = [c for c in columns if c not in parts]
    for batch in read_split(
        task.split,
        filesystem,
        write_ids,
        columns=data_cols,
        with_row_id=with_row_id,
        filters=filters,
        schema=widen_schema(data_schema(spec), wide),
        row_ids=row_ids,
        delete_events_cap=delete_events_cap,
        deleted=deleted,
        stats=stats,
    ):
        if not schema.names:
            yield batch.select([])  # no columns (a count): the rows still count
            continue
        n = batch.num_rows
        arrays = [
            batch.column(f.name)
            if f.name not in parts
            else pa.repeat(pa.scalar(parts[f.name], f.type), n)
            for f in schema
        ]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_files(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    partitions: Sequence[PartitionFiles],
    columns: Sequence[str],
    *,
    with_row_id: bool = False,
    filters: Filters | None = None,
    row_ids: Sequence[DeleteSet | None] | None = None,
    partition_index: str | None = None,
    delete_events_cap: int | None = None,
    force_wide: bool = False,
    wide: frozenset[str] | None = None,
    tasks: Sequence[ScanTask] | None = None,
) -> pa.Table:
    """The visible rows of planned ``partitions`` (their splits read in parallel): ``row__id``
    first when asked for, then ``columns``.

    ``row_ids`` (one entry per partition) keeps only those ROW__IDs; ``partition_index`` names
    an int32 column appended with the index (into ``partitions``) of each row's partition.
    ``tasks``: the partitions' :func:`split_tasks`, when ``wide`` was found from them already.
    """
    if tasks is None:
        tasks = split_tasks(partitions, snapshot.write_ids, location.filesystem)
    if wide is None:  # timestamp columns at microseconds (``force_wide``: all of them)
        wide = wide_columns_of(spec, location, tasks, columns, force=force_wide)
    schema = output_schema(spec, columns, with_row_id, wide)
    if partition_index is not None:
        schema = schema.append(pa.field(partition_index, pa.int32()))

    def read(
        i: int, split: ReadSplit, deleted: DeleteLookup, stats: ReadStats
    ) -> list[pa.RecordBatch]:
        task = tasks[i]
        return list(
            read_task(
                replace(task, split=split),
                spec,
                location.filesystem,
                snapshot.write_ids,
                columns,
                with_row_id=with_row_id,
                filters=filters,
                row_ids=row_ids[task.partition] if row_ids is not None else None,
                wide=wide,
                deleted=deleted,
                stats=stats,
            )
        )

    parts: list[list[pa.RecordBatch]] = [[] for _ in tasks]
    # splits of files read whole, many files to a thread's task (see ``whole_tasks``)
    # not for timestamps: a value at the edge of the nanosecond range can pass the footer's
    # (millisecond) statistics that decide ``wide`` and still be out of pyarrow's range, which
    # the per-split read handles (sql/test_wide_timestamps.py)
    timestamps = any("timestamp" in t.lower() for c, t in spec.columns if c in columns)
    plain = not (with_row_id or row_ids is not None or filters or wide or timestamps)
    whole = whole_tasks(tasks) if plain else []
    if whole:
        reader = WholeFileRead(
            location.filesystem,
            [c for c in columns if c not in spec.partition_column_names],
            data_schema(spec),
        )
        chunks = _chunks(whole)
        done = run_parallel(
            [
                functools.partial(
                    _read_whole,
                    [tasks[i] for i in chunk],
                    reader,
                    schema,
                    spec.partition_column_names,
                )
                for chunk in chunks
            ]
        )
        for chunk, out in zip(chunks, done, strict=True):
            for i, batches_of_task in zip(chunk, out, strict=True):
                parts[i] = batches_of_task
    taken = set(whole)
    rest = [i for i in range(len(tasks)) if i not in taken]
    merged = read_balanced(
        [tasks[i].split for i in rest],
        lambda k, split, deleted, stats: read(rest[k], split, deleted, stats),
        location.filesystem,
        snapshot.write_ids,
        delete_events_cap=delete_events_cap,
    )
    for i, part in zip(rest, merged, strict=True):
        parts[i] = part
    batches = []
    for task, part in zip(tasks, parts, strict=True):
        for b in part:
            if partition_index is not None:
                index = pa.array(np.full(b.num_rows, task.partition, dtype=np.int32))
                b = b.append_column(partition_index, index)
            batches.append(b)
    return pa.Table.from_batches(batches, schema=schema)


def whole_tasks(tasks: Sequence[ScanTask]) -> list[int]:
    """The indices of ``tasks`` whose rows need no merge: no delete events in their bucket, and
    every file an event file the snapshot sees whole (``format.reads_whole``). Such a task's
    rows are its files' rows, read in one decoding call per file."""
    return [
        i
        for i, task in enumerate(tasks)
        if not task.split.delete_files and all(reads_whole(r) for r in task.split.data_files)
    ]


#: files of whole tasks per thread's task: few enough that the threads share the work evenly,
#: many enough that handing a task over costs little beside decoding its files
_WHOLE_TASKS_PER_CHUNK = 32


def _chunks(indices: list[int]) -> list[list[int]]:
    size = max(1, min(_WHOLE_TASKS_PER_CHUNK, len(indices) // (4 * read_threads())))
    return [indices[k : k + size] for k in range(0, len(indices), size)]


def _read_whole(
    tasks: Sequence[ScanTask],
    reader: WholeFileRead,
    schema: pa.Schema,
    partition_names: Sequence[str],
) -> list[list[pa.RecordBatch]]:
    """The rows of each of ``tasks`` (``whole_tasks``) as :func:`read_task` gives them:
    ``schema``'s columns, partition columns as constants."""
    out = []
    names = schema.names
    wanted = [c for c in partition_names if c in names]
    for task in tasks:
        values = dict(zip(partition_names, task.partition_values, strict=False))
        constants = {c: pa.scalar(values[c], schema.field(c).type) for c in wanted}
        batches: list[pa.RecordBatch] = []
        for ref in task.split.data_files:
            rows, data = reader.read(ref.path)
            if not names:
                if rows:
                    batches.append(pa.RecordBatch.from_struct_array(pa.nulls(rows, pa.struct([]))))
                continue
            for batch in data or ([None] if rows else []):
                n = rows if batch is None else batch.num_rows
                arrays = [
                    pa.repeat(constants[f], n) if f in constants else batch.column(f) for f in names
                ]
                batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
        out.append(batches)
    return out


def output_schema(
    spec: TableSpec,
    columns: Sequence[str],
    with_row_id: bool,
    wide: frozenset[str] = frozenset(),
) -> pa.Schema:
    """The schema of a scan's rows: ``row__id`` first when asked for, then ``columns``; the
    ``wide`` timestamp columns at microseconds."""
    schema = widen_schema(table_schema(spec), wide)
    fields = [schema.field(c) for c in columns]
    if with_row_id:
        fields.insert(0, pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
    return pa.schema(fields)


def wanted_columns(
    spec: TableSpec, columns: Sequence[str] | None, include_partition_columns: bool = True
) -> list[str]:
    """The scan's column names (lower case), checked against the table."""
    schema = table_schema(spec)
    if columns is None:
        names = list(schema.names)
        return names if include_partition_columns else [c for c, _ in spec.columns]
    out = []
    for c in columns:
        name = c.lower()
        if schema.get_field_index(name) < 0:
            raise UnknownColumnError(
                f"table {spec.full_name} has no column {c!r}; its columns are {schema.names}"
            )
        out.append(name)
    return out


def wide_columns_of(
    spec: TableSpec,
    location: Location,
    tasks: Sequence[ScanTask],
    columns: Sequence[str],
    *,
    force: bool = False,
) -> frozenset[str]:
    """The ``timestamp`` ``columns`` that a file of ``tasks`` holds beyond the nanosecond range
    (footer statistics, ``format.wide_columns_of_splits``): a scan reads them as
    ``timestamp[us]``. Only a scan of a timestamp column opens footers for it."""
    wanted = row_schema_of(data_schema(spec), columns)
    if not any(pa.types.is_timestamp(f.type) for f in wanted):
        return frozenset()
    if force:  # ``force``: every timestamp column (see ``TableScan.force_wide``)
        return frozenset(f.name for f in wanted if pa.types.is_timestamp(f.type))
    return wide_columns_of_splits([t.split for t in tasks], location.filesystem, wanted)


__all__ = [
    "LeaseRelease",
    "PartitionFiles",
    "ScanTask",
    "TableScan",
    "output_schema",
    "plan_files",
    "plan_scan",
    "read_files",
    "read_task",
    "split_tasks",
    "wanted_columns",
    "wide_columns_of",
]
