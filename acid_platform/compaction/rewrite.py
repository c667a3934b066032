"""The rewrite of one partition directory: Hive's minor and major compaction, at the format level.

* **Minor**: the current insert deltas become ``delta_<min>_<max>_v<T>`` and the current delete
  deltas ``delete_delta_<min>_<max>_v<T>`` (Hive 4 names: no statement id, ``T`` = the compactor's
  txn). Events keep their ROW__IDs; events of aborted write ids are dropped; delete events are
  kept (nothing is applied).
* **Major**: base + deltas + original files become ``base_<N>_v<T>`` with the deletes applied.
  Surviving rows keep their ROW__IDs, write-id-0 rows of original files included.

What is read is what ``acid_state`` selects with the compactor's write id list
(:class:`~acid_platform.format.ValidCompactorWriteIdList`): it stops below the lowest open write
id, so a streaming delta holding an open txn is left for a later compaction. ``N``, ``min`` and
``max`` are the write ids the inputs actually cover (as Hive's CompactorMR names them), never more:
a name claiming a write id whose rows live elsewhere would hide them from readers.

Output follows the table's event layout (:class:`~acid_platform.table.event_layout.EventLayout`:
names, ``_orc_acid_version`` in every directory, the ``orc.compress`` codec): one ORC event file
per bucket id, rows sorted by (originalWriteId, bucket, rowId). Nothing
here touches the metastore: the directories are invisible until the compactor's txn commits.

An **insert-only** table's partition (``insert_only``) is copied into plain files of its
format instead, in the same directory names (:mod:`.insert_only`, Hive 4's MM compaction).

Work is split into :class:`BucketTask` values (one per output file), so an executor may run them
anywhere (see :mod:`.executors`); :func:`rewrite_partition` runs them all in this process.

>>> # plan = plan_rewrite(RewriteRequest("major", "/wh/t", compactor_ids, txns, 19, schema))
>>> # result = execute_plan(plan)
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.compaction.hooks import checkpoint
from acid_platform.compaction.insert_only import plain_bucket_splits, write_plain_bucket
from acid_platform.compaction.staging import (
    final_dir,
    needs_one_base,
    output_dir,
    unless_named,
    write_compacted_marker,
)
from acid_platform.errors import CompactionError
from acid_platform.format import (
    AcidState,
    EventWriter,
    OrcDataFile,
    ReadSplit,
    ValidCompactorWriteIdList,
    ValidTxnList,
    ValidWriteIdList,
    WrittenFile,
    acid_state,
    pin_flush_lengths,
    plan_splits,
    read_split,
    resolve,
    sort_events,
    wide_columns_of_splits,
)
from acid_platform.format import types as t
from acid_platform.format.file_record import PartitionRecord
from acid_platform.format.parallel import run_parallel
from acid_platform.format.wide_timestamps import widen_schema
from acid_platform.format.writer import DEFAULT_COMPRESSION, DEFAULT_STRIPE_SIZE
from acid_platform.table.event_layout import DELETE, INSERT, EventLayout

MAJOR, MINOR = "major", "minor"
_WRITE_ROWS = 1 << 17  # rows gathered before a write to the ORC writer


@dataclass(frozen=True)
class RewriteRequest:
    """What to compact: one partition directory, under the compactor's snapshot.

    ``write_ids`` is the compactor's list; ``valid_txns`` its txn snapshot (it judges ``_v``
    suffixes); ``compactor_txn_id`` is the ``T`` of the output names. ``row_schema`` is the table's
    data columns (files written before a column was added get NULLs). ``compression`` is Hive's
    ``orc.compress`` value.
    """

    kind: str
    path: str
    write_ids: ValidCompactorWriteIdList
    valid_txns: ValidTxnList
    compactor_txn_id: int
    row_schema: pa.Schema
    compression: str = DEFAULT_COMPRESSION
    stripe_size: int = DEFAULT_STRIPE_SIZE
    filesystem: pafs.FileSystem | None = None
    #: What committed writes recorded in the partition: the compactor refuses to run over a
    #: missing, stray or resized file (a ``FileRecordError``), instead of making a loss final.
    record: PartitionRecord | None = None
    #: an insert-only table's partition: plain data files of ``file_format`` in and out
    insert_only: bool = False
    file_format: str = "orc"
    #: the table's properties (a plain file's codec: ``parquet.compression``)
    properties: tuple[tuple[str, str], ...] = ()
    #: Hive 3 names (no ``_v<T>``), written under hidden staging names (see :mod:`.staging`).
    hive3_names: bool = False
    #: A ``'rebalance'`` compaction (planned as a major one, run by :mod:`.rebalance`): a
    #: partition holding anything is rewritten, one base included.
    rebalance: bool = False

    def __post_init__(self) -> None:
        if self.kind not in (MAJOR, MINOR):
            raise ValueError(f"compaction kind must be 'major' or 'minor', not {self.kind!r}")
        if self.compactor_txn_id <= 0:
            raise ValueError(f"compactor txn id must be positive, not {self.compactor_txn_id}")

    @property
    def layout(self) -> EventLayout:
        """How the output is named, created and encoded (the table's event layout)."""
        fs = resolve(self.path, self.filesystem).filesystem
        return EventLayout(
            self.row_schema,
            fs,
            self.compression,
            self.stripe_size,
            insert_only=self.insert_only,
            file_format=self.file_format,
            properties=self.properties,
        )

    @property
    def plain_format(self) -> str | None:
        """The format of an insert-only table's files (``None``: ACID event files)."""
        return self.file_format if self.insert_only else None


@dataclass(frozen=True)
class BucketTask:
    """One output bucket file and the files it is made from.

    ``kind``: ``insert`` (rows of ``split.data_files``, minus ``split.delete_files``' deletes
    when there are any) or ``delete`` (the delete events of ``split.delete_files``, merged).
    """

    output: str
    kind: str
    split: ReadSplit


@dataclass(frozen=True)
class RewritePlan:
    """Everything a compaction of one directory will write, decided before writing anything.

    ``enough`` is Hive's ``isEnoughToCompact``; when False there are no tasks. ``inputs`` are
    the directories (and original files) being compacted; they become obsolete once the
    compactor's txn commits.
    """

    request: RewriteRequest
    state: AcidState
    enough: bool
    output_dirs: tuple[str, ...] = ()
    tasks: tuple[BucketTask, ...] = ()
    min_write_id: int = 0
    max_write_id: int = 0
    inputs: tuple[str, ...] = ()
    input_bytes: int = 0

    @property
    def filesystem(self) -> pafs.FileSystem:
        return resolve(self.request.path, self.request.filesystem).filesystem

    @property
    def layout(self) -> EventLayout:
        """The request's :attr:`RewriteRequest.layout`."""
        return self.request.layout


@dataclass(frozen=True)
class RewriteResult:
    """What a rewrite wrote."""

    output_dirs: tuple[str, ...]
    files: tuple[WrittenFile, ...] = ()
    min_write_id: int = 0
    max_write_id: int = 0
    input_bytes: int = 0
    output_bytes: int = field(default=0)

    @property
    def rows_written(self) -> int:
        """Insert events written (rows of the new base or delta)."""
        return sum(f.inserts for f in self.files)

    @property
    def deletes_written(self) -> int:
        """Delete events written (minor compaction)."""
        return sum(f.deletes for f in self.files)


def plan_rewrite(request: RewriteRequest) -> RewritePlan:
    """Select the partition's files with the compactor's snapshot and plan the output files."""
    loc = resolve(request.path, request.filesystem)
    state = acid_state(
        loc.path,
        request.write_ids,
        request.valid_txns,
        filesystem=loc.filesystem,
        record=request.record,
        insert_only=request.insert_only,
    )
    has_input = state.base is not None or bool(state.deltas) or bool(state.original_files)
    if not (request.rebalance and has_input) and not is_enough_to_compact(request.kind, state):
        return RewritePlan(request, state, enough=False)
    read_ids = reader_write_ids(request.write_ids)
    if request.kind == MAJOR or (request.hive3_names and needs_one_base(state)):
        return _plan_major(request, loc.path, state, read_ids)
    return _plan_minor(request, loc.path, state, read_ids)


def is_enough_to_compact(kind: str, state: AcidState) -> bool:
    """Hive's ``Worker.isEnoughToCompact``.

    Major: original files, or base + deltas counting more than one directory. Minor: more than
    one delta, and two deltas only if they are of the same kind (a delta and a delete delta
    alone are left as they are).
    """
    deltas = state.deltas
    if kind == MAJOR:
        return bool(state.original_files) or len(deltas) + (state.base is not None) > 1
    if len(deltas) == 2:
        return deltas[0].is_delete == deltas[1].is_delete
    return len(deltas) > 1


def reader_write_ids(compactor: ValidCompactorWriteIdList) -> ValidWriteIdList:
    """The compactor's list as a reader list, for filtering events.

    The compactor list answers ``ALL`` for any range below its high watermark, so a reader would
    skip the per-row check and keep events of aborted write ids inside a streaming delta. As a
    reader list the aborted ids make such a range ``SOME`` and every event is checked.
    """
    return ValidWriteIdList(
        compactor.table_name, compactor.high_watermark, (), tuple(compactor.exceptions)
    )


def execute_plan(
    plan: RewritePlan, run: Callable[[RewritePlan, BucketTask], WrittenFile | None] | None = None
) -> RewriteResult:
    """Create the output directories, then run every task and gather results (in task order).

    Tasks (one output bucket file each) run on this process's read threads, several at a time:
    pyarrow decodes and encodes without the GIL, so a partition of several buckets compacts on
    every core. The first failure is raised once every started task has ended.
    """
    create_output_dirs(plan)
    runner = run or run_task
    done = run_parallel([functools.partial(runner, plan, task) for task in plan.tasks])
    return finish(plan, [f for f in done if f is not None])


def create_output_dirs(plan: RewritePlan) -> None:
    """Make the output directories, each with its ``_orc_acid_version``."""
    layout = plan.layout
    for d in plan.output_dirs:
        layout.create_dir(d)
        if plan.request.hive3_names:
            write_compacted_marker(layout.filesystem, d)
    checkpoint("worker.dirs_created")


def finish(plan: RewritePlan, files: Sequence[WrittenFile]) -> RewriteResult:
    """The :class:`RewriteResult` of a plan whose tasks wrote ``files``."""
    return RewriteResult(
        output_dirs=plan.output_dirs,
        files=tuple(files),
        min_write_id=plan.min_write_id,
        max_write_id=plan.max_write_id,
        input_bytes=plan.input_bytes,
        output_bytes=sum(f.size for f in files),
    )


def rewrite_partition(request: RewriteRequest) -> RewriteResult | None:
    """Plan and run a compaction of one directory in this process; ``None`` if not enough to do."""
    plan = plan_rewrite(request)
    return execute_plan(plan) if plan.enough else None


def run_task(plan: RewritePlan, task: BucketTask) -> WrittenFile | None:
    """Write one output bucket file; ``None`` when no event survives (no file is written)."""
    fs = plan.filesystem
    if task.kind == DELETE:
        return _write_deletes(plan, task, fs)
    if plan.request.insert_only:
        return _write_plain(plan, task, fs)
    try:
        return _write_rows(plan, task, _row_events(plan, task, fs))
    except _OutOfOrder:
        # Inputs that are not in ROW__ID order one after the other (unusual layouts): sort in
        # memory instead of streaming.
        events = pa.concat_tables(list(_row_events(plan, task, fs)))
        return _write_rows(plan, task, iter([sort_events(events)]))


# --------------------------------------------------------------------------- planning


def _plan_major(
    request: RewriteRequest, path: str, state: AcidState, read_ids: ValidWriteIdList
) -> RewritePlan:
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    write_id = max([0, *(d.max_write_id for d in dirs)])
    layout = request.layout
    out_dir = _output_dir(request, path, INSERT, 0, write_id, major=True)
    if request.hive3_names and state.base is not None and final_dir(out_dir) == state.base.path:
        raise CompactionError(
            f"{state.base.path}: a major compaction with Hive 3 names would write a directory of "
            "this very name (no delta above it adds rows); compact it with Hive 4's names"
        )
    tasks = tuple(
        BucketTask(layout.bucket_path(out_dir, s.bucket_id), INSERT, s)
        for s in _splits(request, state, read_ids)
    )
    inputs = tuple(d.path for d in dirs) + tuple(f.path for f in state.original_files)
    size = sum(af.size for d in dirs for af in d.files) + sum(f.size for f in state.original_files)
    return RewritePlan(request, state, True, (out_dir,), tasks, 0, write_id, inputs, size)


def _plan_minor(
    request: RewriteRequest, path: str, state: AcidState, read_ids: ValidWriteIdList
) -> RewritePlan:
    low = min(d.min_write_id for d in state.deltas)
    high = max(d.max_write_id for d in state.deltas)
    layout = request.layout
    out_dirs: list[str] = []
    tasks: list[BucketTask] = []
    inserts, deletes = state.insert_deltas, state.delete_deltas
    if request.hive3_names:
        # a lone delta already spanning the range under the Hive 3 name (a streaming batch, or
        # output of an earlier compaction) stays as it is: the output would take its very name
        inserts = unless_named(inserts, final_dir(_output_dir(request, path, INSERT, low, high)))
        deletes = unless_named(deletes, final_dir(_output_dir(request, path, DELETE, low, high)))
    if inserts:
        out = _output_dir(request, path, INSERT, low, high)
        out_dirs.append(out)
        only_inserts = AcidState(base=None, deltas=inserts, original_files=())
        for s in _splits(request, only_inserts, read_ids):
            tasks.append(BucketTask(layout.bucket_path(out, s.bucket_id), INSERT, s))
    if deletes:
        out = _output_dir(request, path, DELETE, low, high)
        out_dirs.append(out)
        by_bucket: dict[int, list[str]] = defaultdict(list)
        for d in deletes:
            for af in d.files:
                by_bucket[af.bucket_id].append(af.path)
        for bucket, files in sorted(by_bucket.items()):
            split = ReadSplit(bucket, (), tuple(files))
            tasks.append(BucketTask(layout.bucket_path(out, bucket), DELETE, split))
    used = (*inserts, *deletes)
    size = sum(af.size for d in used for af in d.files)
    inputs = tuple(d.path for d in used)
    return RewritePlan(request, state, True, tuple(out_dirs), tuple(tasks), low, high, inputs, size)


def _splits(
    request: RewriteRequest, state: AcidState, read_ids: ValidWriteIdList
) -> list[ReadSplit]:
    """The input splits, one per output bucket file."""
    if request.plain_format is None:
        return plan_splits(state, read_ids)
    return plain_bucket_splits(state, read_ids, request.plain_format)


def _output_dir(
    request: RewriteRequest, path: str, kind: str, low: int, high: int, *, major: bool = False
) -> str:
    return output_dir(
        request.layout, path, kind, low, high, request.compactor_txn_id, request.hive3_names, major
    )


# --------------------------------------------------------------------------- writing rows


def _write_plain(plan: RewritePlan, task: BucketTask, fs: pafs.FileSystem) -> WrittenFile | None:
    request = plan.request
    read_ids = reader_write_ids(request.write_ids)
    return write_plain_bucket(plan.layout, task.output, task.split, fs, read_ids)


class _OutOfOrder(Exception):
    """A batch starts below the last key written: the inputs need a sort."""


def _row_events(plan: RewritePlan, task: BucketTask, fs: pafs.FileSystem) -> Iterator[pa.Table]:
    """Insert events of the rows that survive (with their ROW__IDs), one stripe at a time."""
    request = plan.request
    read_ids = reader_write_ids(request.write_ids)
    # the check and the read see the same committed bytes of a streaming file
    (split,) = pin_flush_lengths([task.split], fs)
    # timestamps beyond the nanosecond range stay at microseconds (format.wide_timestamps)
    schema = widen_schema(
        request.row_schema, wide_columns_of_splits([split], fs, request.row_schema)
    )
    for batch in read_split(split, fs, read_ids, with_row_id=True, schema=schema):
        yield _insert_events(batch, schema)


def _write_rows(
    plan: RewritePlan, task: BucketTask, events: Iterator[pa.Table]
) -> WrittenFile | None:
    writer: EventWriter | None = None
    last: tuple[int, int, int] | None = None
    pending: list[pa.Table] = []
    pending_rows = 0
    try:
        for table in events:
            if table.num_rows == 0:
                continue
            first = _key_at(table, 0)
            if last is not None and first < last:
                raise _OutOfOrder
            last = _key_at(table, table.num_rows - 1)
            pending.append(table)
            pending_rows += table.num_rows
            if pending_rows >= _WRITE_ROWS:  # few large writes: less per-call overhead
                writer = _flush(plan, task, writer, pending)
                pending, pending_rows = [], 0
        if pending:
            writer = _flush(plan, task, writer, pending)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if writer is None:
        return None
    written = writer.close()
    checkpoint("worker.bucket_written")
    return written


def _flush(
    plan: RewritePlan,
    task: BucketTask,
    writer: EventWriter | None,
    tables: list[pa.Table],
) -> EventWriter:
    if writer is None:
        writer = plan.layout.open_file(task.output)
    writer.write(tables[0] if len(tables) == 1 else pa.concat_tables(tables))
    checkpoint("worker.batch_written")
    return writer


def _insert_events(batch: pa.RecordBatch, row_schema: pa.Schema) -> pa.Table:
    """Rows with a ``row__id`` column -> insert events with the same ROW__IDs.

    Split-update insert events always have currentTransaction == originalTransaction, so the
    ROW__ID says everything the event held.
    """
    owid, bucket, rowid = batch.column(t.ROW_ID_COLUMN).flatten()
    columns = [batch.column(f.name) for f in row_schema]
    rows = (
        pa.StructArray.from_arrays(columns, fields=list(row_schema))
        if columns
        else pa.array([{}] * batch.num_rows, pa.struct([]))
    )
    ops = pa.array(np.full(batch.num_rows, t.INSERT_OPERATION, np.int32))
    return pa.Table.from_arrays(
        [ops, owid, bucket, rowid, owid, rows],
        names=[*t.EVENT_KEY_COLUMNS, t.ROW],
    )


def _key_at(table: pa.Table, i: int) -> tuple[int, int, int]:
    return (
        int(table.column(1)[i].as_py()),
        int(table.column(2)[i].as_py()),
        int(table.column(3)[i].as_py()),
    )


# --------------------------------------------------------------------------- writing deletes


def _write_deletes(plan: RewritePlan, task: BucketTask, fs: pafs.FileSystem) -> WrittenFile | None:
    """Merge the delete events of several delete deltas (valid ones only) into one sorted file."""
    read_ids = reader_write_ids(plan.request.write_ids)
    exceptions = np.asarray(read_ids.exceptions, np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    for path in task.split.delete_files:
        with OrcDataFile(fs, path, expect_acid=True) as f:
            for _, b in f.iter_stripes(t.ROW_VERSION_FIELDS):
                cols = [b.column(i).to_numpy(zero_copy_only=False) for i in range(4)]
                keep = cols[3] <= read_ids.high_watermark
                if len(exceptions):
                    keep &= ~np.isin(cols[3], exceptions)
                parts.append(tuple(c[keep] for c in cols))
    if not parts or not sum(len(p[0]) for p in parts):
        return None
    owid, bucket, rowid, current = (np.concatenate([p[i] for p in parts]) for i in range(4))
    # ReaderKey order: (owid, bucket, rowId) ascending, then the newest event first.
    order = np.lexsort((-current, rowid, bucket.astype(np.int64), owid))
    n = len(order)
    schema = plan.request.row_schema
    events = pa.table(
        {
            t.OPERATION: pa.array(np.full(n, t.DELETE_OPERATION, np.int32)),
            t.ORIGINAL_TRANSACTION: pa.array(owid[order].astype(np.int64)),
            t.BUCKET: pa.array(bucket[order].astype(np.int32)),
            t.ROW_ID: pa.array(rowid[order].astype(np.int64)),
            t.CURRENT_TRANSACTION: pa.array(current[order].astype(np.int64)),
            t.ROW: pa.nulls(n, pa.struct(list(schema))),
        }
    )
    with plan.layout.open_file(task.output) as writer:
        writer.write(events)
        checkpoint("worker.batch_written")
    checkpoint("worker.bucket_written")
    return writer.result


def remove_output(plan: RewritePlan) -> list[str]:
    """Delete what a failed rewrite wrote (its directories are invisible; best effort)."""
    fs = plan.filesystem
    removed = []
    for d in plan.output_dirs:
        try:
            fs.delete_dir(d)
            removed.append(d)
        except FileNotFoundError:
            continue
        except OSError:  # the cleaner removes it later: its txn is aborted
            continue
    return removed


def describe(plan: RewritePlan) -> str:
    """One line for logs and SHOW COMPACTIONS: what was compacted into what."""
    outs = ", ".join(os.path.basename(d) for d in plan.output_dirs) or "nothing"
    return f"{len(plan.inputs)} input(s), {plan.input_bytes} bytes -> {outs}"


__all__ = [
    "MAJOR",
    "MINOR",
    "BucketTask",
    "RewritePlan",
    "RewriteRequest",
    "RewriteResult",
    "create_output_dirs",
    "describe",
    "execute_plan",
    "finish",
    "is_enough_to_compact",
    "plan_rewrite",
    "reader_write_ids",
    "remove_output",
    "rewrite_partition",
    "run_task",
]
