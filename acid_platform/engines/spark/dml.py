"""UPDATE, DELETE and MERGE on Spark: the table layer's one plan, run and written distributed.

For a statement planned by :mod:`acid_platform.table.dml`, inside the statement's transaction:

1. ``target`` is the table read through the ``acid`` data source under the transaction's
   snapshot: ROW__ID, partition columns and only the columns the plan uses
   (``plan.read_columns``; the plan itself makes the others NULL after the join);
2. UPDATE / DELETE narrow it first with the plan's ``probe`` (the WHERE, which Spark pushes
   into the source for partition and stripe pruning). A MERGE probes (a semi-join of the target
   with the broadcast source, filtering the target where it is read) only when the source is
   small enough to broadcast; otherwise the target meets the source once, in the plan's join
   (a shuffled hash join building the source side);
3. the plan runs as Spark SQL over ``target`` and the source DataFrame (:mod:`.plans`). Spark
   plans MERGE with the window form of the cardinality check
   (:attr:`~acid_platform.table.dml.MatchCount.WINDOW`), so the target is read once and the
   matched, not-matched and violation rows all come out of that one join;
4. the labelled rows are shuffled so that every file has exactly one writer — rows deleting or
   updating a target row by (statement, partition, bucket of that row), inserted rows by
   (statement, Hive bucket) for bucketed tables or a hash of their values otherwise — and sorted
   by ROW__ID, then ``mapInArrow`` tasks turn them into delete/insert events with the table
   layer's :func:`~acid_platform.table.dml_output.assemble` and the one event writer: every
   branch's statement id, one write id, in the one job;
5. the driver gets only each task's :class:`~.files.TaskReport` and records the write
   components; the table layer's statement lifecycle registers new partitions and commits or
   aborts.

A MERGE cardinality violation (``hive.merge.cardinality.check``) is sorted first into its task,
which then writes nothing; the driver removes what the other tasks wrote and the statement fails
with :class:`~acid_platform.errors.CardinalityViolationError` — its transaction aborts.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention
from pyspark.sql.types import IntegerType, StructField, StructType
from sqlglot import exp

from acid_platform import errors
from acid_platform.engines.spark.files import EventFiles, TaskInfo, TaskReport, reports_files
from acid_platform.engines.spark.options import table_location
from acid_platform.engines.spark.plans import PlanViews, broadcast_threshold, estimated_bytes
from acid_platform.engines.spark.python_workers import worker_error
from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_FIELDS, row_id_text
from acid_platform.format.bucket_codec import decode_bucket_ids
from acid_platform.format.storage import StorageBinding, binding_for
from acid_platform.metastore.model import OperationType, TableSpec
from acid_platform.table import dml
from acid_platform.table.dml_output import assemble
from acid_platform.table.dml_write import OPERATIONS, SourceRows, count
from acid_platform.table.event_layout import hive_buckets
from acid_platform.table.schema import (
    check_not_null,
    convert_column,
    not_null_columns,
    table_schema,
)
from acid_platform.table.statement import WriteContext, WriteOutcome
from acid_platform.table.writes import WriteMetrics, split_by_partition

_WBUCKET = "__acid_wbucket"
_CODEC_V1 = 1 << 29

#: A MERGE source: a DataFrame, or (from SQL / Arrow) rows produced in the transaction.
Source = DataFrame | SourceRows


@dataclass(frozen=True)
class DmlJob:
    """What the writing tasks of one statement need (picklable; the plan's AST is dropped)."""

    spec: TableSpec
    plan: dml.DmlPlan
    write_id: int
    first_statement: int
    #: the object store's options, registered in each task's process as the job unpickles
    storage: StorageBinding | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "storage", binding_for(self.spec.location))


def run_dml(
    spark: SparkSession,
    reader: DataFrameReader,
    ctx: WriteContext,
    plan: dml.DmlPlan,
    source: Source | None,
    write_partitions: int,
) -> WriteOutcome:
    """Run one planned statement on Spark inside ``ctx`` (locks already held); ``reader`` is
    the ``acid`` source bound to the warehouse, ``write_partitions`` the writing tasks. Returns
    the outcome, with the tasks that wrote files."""
    spec, txn = ctx.spec, ctx.txn
    relations = {dml.TARGET_RELATION: _target_frame(reader, ctx, plan)}
    if source is not None:
        if isinstance(source, DataFrame):
            relations[dml.SOURCE_RELATION] = source
        else:
            relations[dml.SOURCE_RELATION] = spark.createDataFrame(source(txn))
    write_id = ctx.record([])  # the write id, before any file is written
    job = DmlJob(
        spec,
        dataclasses.replace(plan, query=exp.select("1"), probe=None),
        write_id,
        ctx.first_statement,
    )
    source_frame = relations.get(dml.SOURCE_RELATION)
    with PlanViews(spark, relations) as views:
        if plan.probe is not None and worth_probing(spark, source_frame):
            # only the target rows the statement can touch (a broadcast semi-join for MERGE)
            if source_frame is not None:
                views.replace(dml.SOURCE_RELATION, F.broadcast(source_frame))
            views.replace(dml.TARGET_RELATION, views.frame(plan.probe))
            if source_frame is not None:
                views.replace(dml.SOURCE_RELATION, source_frame)
        elif source_frame is not None:
            views.replace(dml.SOURCE_RELATION, source_frame.hint("shuffle_hash"))
        reports = _write(job, views.frame(plan.query), write_partitions)
    violation = next((r.violation for r in reports if r.violation), None)
    components = _components(job, reports)
    if violation is not None:
        if components:
            ctx.record(components)  # so the cleaner finds what may be left
        _remove_written(spec, reports)
        raise errors.CardinalityViolationError(_violation_message(spec, violation))
    outcome = WriteOutcome(
        written=WriteMetrics.from_files(reports_files(reports)),
        tasks=tuple(r.task for r in reports if r.files),
    )
    for report in reports:
        for offset, n in report.counts:
            count(outcome, _branch_action(plan, offset), n)
    if components:
        ctx.record(components)
        outcome.partitions = [f.partition for r in reports for f in r.files if f.kind == "insert"]
    return outcome


# --------------------------------------------------------------------------- target


def worth_probing(spark: SparkSession, source: DataFrame | None) -> bool:
    """Whether to narrow the target with the plan's ``probe`` first.

    UPDATE / DELETE (no source): the probe is the WHERE, pushed into the scan — always. MERGE:
    the probe is a semi-join of the target with the source; it pays when the source is small
    enough to broadcast (Spark's ``spark.sql.autoBroadcastJoinThreshold`` against its size
    estimate), as the target is then filtered where it is read and never shuffled. A larger
    source joins the target once, in the plan itself: probing first would read both twice.
    """
    if source is None:
        return True
    limit = broadcast_threshold(spark)
    size = estimated_bytes(source)
    return limit >= 0 and size is not None and size <= limit


def _target_frame(reader: DataFrameReader, ctx: WriteContext, plan: dml.DmlPlan) -> DataFrame:
    """The ``target`` relation: the table under the statement's snapshot, ROW__ID flattened,
    with only the columns the plan reads (its other columns are NULL in the plan itself)."""
    spec, snapshot = ctx.spec, ctx.snapshot
    wanted = set(plan.read_columns if plan.read_columns is not None else table_schema(spec).names)
    wanted |= {*spec.partition_column_names, *plan.probe_columns}
    schema = table_arrow_schema(spec, with_row_id=True)
    read = pa.schema([f for f in schema if f.name == ROW_ID_COLUMN or f.name in wanted])
    frame = (
        reader.options(
            table=spec.full_name,
            valid_txns=str(snapshot.valid_txns),
            valid_write_ids=str(snapshot.write_ids),
            # scanned once, by this statement's one query: pushed filters are its own
            pushdown="true",
        )
        .schema(spark_schema(read))
        .load()
    )
    columns: list[Column] = [
        F.col(f"{ROW_ID_COLUMN}.{name}").alias(col)
        for name, col in zip(ROW_ID_FIELDS, dml.ROW_ID_COLUMNS, strict=True)
    ]
    columns += [F.col(f"`{f.name}`") for f in table_schema(spec) if f.name in wanted]
    return frame.select(*columns)


# --------------------------------------------------------------------------- writing


def _write(job: DmlJob, labelled: DataFrame, n: int) -> list[TaskReport]:
    spec, plan = job.spec, job.plan
    parts = [F.col(f"`__t_{plan.target_columns.index(c)}`") for c in spec.partition_column_names]
    if spec.num_buckets and any(b.action is dml.Action.INSERT for b in plan.branches):
        out_schema = StructType([*labelled.schema.fields, StructField(_WBUCKET, IntegerType())])
        keyed = labelled.mapInArrow(lambda it: _bucket_keys(job, it), out_schema)
    else:
        keyed = labelled.withColumn(_WBUCKET, _bucket_key(plan, n))
    stmt, wbucket = F.col(dml.STATEMENT), F.col(_WBUCKET)
    # a task meets its cardinality violations first, so it writes nothing when it has one
    first: list[Column] = []
    if dml.VIOLATION in labelled.columns:
        first.append(F.coalesce(F.col(dml.VIOLATION), F.lit(False)).desc())
    ordered = by_writer(keyed, n, stmt, wbucket, *parts).sortWithinPartitions(
        *first, stmt, *parts, wbucket, *[F.col(c) for c in dml.ROW_ID_COLUMNS]
    )
    reports = ordered.mapInArrow(lambda it: _write_task(job, it), "report STRING")
    try:
        rows = reports.collect()
    except Exception as exc:
        raise task_error(exc, spec) from exc
    return [TaskReport.from_json(r["report"]) for r in rows]


def by_writer(frame: DataFrame, n: int, *keys: Column) -> DataFrame:
    """``frame`` shuffled so that all rows of one key meet in one task.

    With adaptive execution on (Spark's default), a repartition by columns alone, which AQE
    coalesces to the data's size (a two-row MERGE runs one writing task, not
    ``spark.sql.shuffle.partitions``); coalescing only merges whole shuffle partitions, so a key
    still has one writer. Otherwise (or above ``n``'s cap of 4096 Hive writer ids), ``n`` tasks.
    """
    conf = frame.sparkSession.conf
    initial = conf.get("spark.sql.adaptive.coalescePartitions.initialPartitionNum", None)
    partitions = int(initial or conf.get("spark.sql.shuffle.partitions") or 200)
    if (
        _on(conf.get("spark.sql.adaptive.enabled", "true"))
        and _on(conf.get("spark.sql.adaptive.coalescePartitions.enabled", "true"))
        and partitions <= n
    ):
        return frame.repartition(*keys)
    return frame.repartition(n, *keys)


def _on(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _bucket_key(plan: dml.DmlPlan, n: int) -> Column:
    """Unbucketed tables: the target row's bucket for deletes/updates; inserts spread by a
    hash of their values (any task may write them: its file is ``bucket_<task>``)."""
    bucket = F.col(dml.BUCKET_ID)
    decoded = F.when(bucket >= _CODEC_V1, F.shiftright(bucket, 16).bitwiseAND(4095)).otherwise(
        bucket
    )
    values = [F.col(f"`{c}`") for b in plan.branches for c in b.assigned.values()]
    spread = F.pmod(F.hash(*values), F.lit(n)) if values else F.lit(0)
    return F.when(F.col(dml.ROW_ID).isNotNull(), decoded).otherwise(-1 - spread).cast("int")


def _bucket_keys(job: DmlJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Bucketed tables: the target row's bucket, or Hive's bucket of an inserted row."""
    spec, plan = job.spec, job.plan
    types = table_schema(spec)
    for batch in batches:
        table = pa.Table.from_batches([batch])
        keys = np.full(table.num_rows, -1, np.int32)
        has_row = table.column(dml.ROW_ID).is_valid().to_numpy(zero_copy_only=False)
        props = table.column(dml.BUCKET_ID).fill_null(0).to_numpy()
        keys[has_row] = decode_bucket_ids(props[has_row])
        stmt = table.column(dml.STATEMENT).fill_null(-1).to_numpy()
        for branch in plan.branches:
            if branch.action is not dml.Action.INSERT:
                continue
            pick = (stmt == branch.statement) & ~has_row
            if not pick.any():
                continue
            rows = table.filter(pa.array(pick))
            cols = {}
            for c in spec.bucket_columns:
                values = (
                    rows.column(branch.assigned[c])
                    if c in branch.assigned
                    else pa.chunked_array([pa.nulls(rows.num_rows, types.field(c).type)])
                )
                cols[c] = convert_column(spec.full_name, c, values, types.field(c).type)
            keys[pick] = hive_buckets(spec, pa.table(cols))
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(keys, pa.int32())], names=[*batch.schema.names, _WBUCKET]
        )


def _write_task(job: DmlJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One writing task: labelled rows in, event files out, a report back."""
    task = TaskInfo.current()
    spec, plan = job.spec, job.plan
    location = table_location(spec.location)
    files = EventFiles(spec, location.path, location.filesystem, job.write_id, task.partition_id)
    part_cols = list(spec.partition_column_names)
    data_cols = [c for c, _ in spec.columns]
    not_null = not_null_columns(spec)
    counts: dict[int, int] = defaultdict(int)
    violation = None
    try:
        for batch in batches:
            rows = pa.Table.from_batches([batch]).drop_columns([_WBUCKET])
            violation = _first_violation(plan, rows)
            if violation is not None:  # the statement fails: this task writes nothing
                files.abort()
                break
            for st in assemble(plan, spec, rows):
                check_not_null(spec.full_name, st.inserts, not_null)
                statement = job.first_statement + st.statement
                for name, ids in split_by_partition(st.deletes, part_cols, ROW_ID_FIELDS):
                    files.write_deletes(name, ids, statement)
                for name, new in split_by_partition(st.inserts, part_cols, data_cols):
                    files.write_inserts(name, new, statement)
                done = st.inserts if st.action is dml.Action.INSERT else st.deletes
                counts[st.statement] += done.num_rows
        written = files.close()
    except BaseException as exc:
        files.abort(exc)
        raise
    report = TaskReport(task, tuple(written), tuple(sorted(counts.items())), violation)
    yield pa.RecordBatch.from_pydict({"report": [report.to_json()]})


# --------------------------------------------------------------------------- results


def _first_violation(plan: dml.DmlPlan, rows: pa.Table) -> dict[str, Any] | None:
    if dml.VIOLATION not in rows.column_names:
        return None
    flagged = rows.filter(pc.fill_null(rows.column(dml.VIOLATION), False))
    if not flagged.num_rows:
        return None
    row = flagged.slice(0, 1).to_pylist()[0]
    out = {k: row[k] for k in dml.ROW_ID_COLUMNS}
    # the plan's output carries the target values it uses, the partition's among them
    out["partition"] = {
        c: str(row[f"__t_{i}"]) for i, c in enumerate(plan.target_columns) if f"__t_{i}" in row
    }
    return out


def _remove_written(spec: TableSpec, reports: Sequence[TaskReport]) -> None:
    """Delete the directories a failed statement's tasks wrote: only its own write id's files
    are in them, and a MERGE that fails its cardinality check leaves nothing behind."""
    location = table_location(spec.location)
    for directory in sorted({f.path.rsplit("/", 1)[0] for r in reports for f in r.files}):
        with contextlib.suppress(FileNotFoundError):
            location.filesystem.delete_dir(directory)


def _violation_message(spec: TableSpec, v: dict[str, Any]) -> str:
    parts = [f"{c}={v['partition'][c]}" for c in spec.partition_column_names]
    where = f" in partition {'/'.join(parts)}" if parts else ""
    return (
        f"MERGE INTO {spec.full_name}: target row ROW__ID "
        f"{row_id_text(v[dml.WRITE_ID], v[dml.BUCKET_ID], v[dml.ROW_ID])}"
        f"{where} matches more than one source row; nothing was committed (make the source "
        "unique on the ON keys, or SET hive.merge.cardinality.check=false to allow it)"
    )


def _branch_action(plan: dml.DmlPlan, offset: int) -> dml.Action:
    return next(b.action for b in plan.branches if b.statement == offset)


def _components(
    job: DmlJob, reports: Sequence[TaskReport]
) -> list[tuple[str | None, OperationType]]:
    seen: dict[tuple[str | None, OperationType], None] = {}
    for r in reports:
        for f in r.files:
            action = _branch_action(job.plan, f.statement - job.first_statement)
            seen[(f.partition or None, OPERATIONS[action])] = None
    return list(seen)


def task_error(exc: BaseException, spec: TableSpec) -> BaseException:
    """A failed Spark job as a typed error: the project's error a task raised, if any (same
    type, same message); otherwise an :class:`~acid_platform.errors.EngineError` carrying the
    task's Python cause — type, message and the notes naming table, partition and file."""
    cause = worker_error(exc)
    cls = getattr(errors, cause.kind, None)
    if isinstance(cls, type) and issubclass(cls, errors.AcidError):
        error = cls(cause.message)
        for note in cause.notes:
            error.add_note(note)
        return error
    return errors.EngineError(f"Spark job writing {spec.full_name} failed: {cause.summary}")
