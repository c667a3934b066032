"""DELETE, UPDATE and MERGE INTO in Spark SQL on the warehouse's tables: Spark plans, Hive writes.

>>> # spark.sql("DELETE FROM db.t WHERE id IN (SELECT id FROM gone)")
>>> # spark.sql("UPDATE db.t SET v = 'x' WHERE ds = '2024-01-01' AND id > 3")
>>> # spark.sql("MERGE INTO db.t USING src s ON t.id = s.id "
>>> #           "WHEN MATCHED AND s.gone THEN DELETE WHEN MATCHED THEN UPDATE SET * "
>>> #           "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE")

Why this design. Two ways were open: a session extension that catches these statements before
Spark analyses them and runs the project's own Spark DML (:mod:`.dml`), or Spark's DataSource V2
row-level API. Hive ACID *is* the delta-based design that API models — a row id (ROW__ID), an
update as a delete plus an insert (Hive's split update), deletes as events naming row ids — so
the table (:file:`jvm/AcidCatalog.java`'s ``AcidTable``) implements
``SupportsRowLevelOperations`` and its operation ``SupportsDelta`` (:file:`jvm/AcidRowLevel.java`):
``rowId()`` is ROW__ID's three fields as metadata columns, ``representUpdateAsDeleteAndInsert()``
is true, and the partition values of a row are metadata columns too (Spark nulls a deleted
row's data columns; its delete event goes to its partition). Spark's own analyser and rules then
accept every statement Spark SQL accepts — IN / EXISTS / scalar subqueries, joins, temp views,
other catalogs' tables and DataFrames as sources, every MERGE clause including NOT MATCHED BY
SOURCE — and rewrite it into one plan over one scan of the target (only the columns needed,
partitions pruned by the WHERE and the target-only ON conjuncts), with MERGE's cardinality
check as Spark SQL users know it: a target row matched twice fails the statement, unless the
only MATCHED action is an unconditional DELETE. Nothing is re-implemented: the session extension
path would have had to re-parse and re-analyse Spark SQL.

What Spark cannot do is write that plan: it hands a JVM ``DeltaWriter`` one row at a time, while
a Python data source's writer takes a task's rows as a stream of Arrow batches (Spark runs it as
a mapInArrow-like step). So a planner strategy (:file:`jvm/AcidRowLevel.java`, installed with the
session catalog) plans the rewritten statement as an append of its labelled rows — Spark's
``__row_operation``, the table's columns, ROW__ID, the deleted rows' partition values — through
this data source's writer in *row-level mode* (option ``_row_level``): this module. The rows are
shuffled so that each (partition, bucket) of deleted rows has one writer — and so has each
(partition, Hive bucket) of a bucketed table's new rows, the bucket computed in the JVM by the
hash Hive uses for the table's ``bucketing_version`` (``acid_bucket``,
:file:`jvm/AcidBuckets.java`, as a write by name is clustered) — and sorted by ROW__ID in each
task, as Hive's ``SORT BY ROW__ID`` does. Every warehouse operation stays in the Python data
source and the table layer: locks, write ids, event files (:class:`~.files.EventFiles`), type
conversion (:func:`~acid_platform.table.schema.conform`), commit.

Hive's semantics and layout: one transaction per statement (its lock — EXCL_WRITE, or
SHARED_WRITE with ``hive.txn.xlock.write=false`` — taken before the target is read: the scan
takes its snapshot when the job's first task starts, after the writer opened the transaction),
one write id; each deleted row's event in ``delete_delta_w_w_0000/bucket_N`` of its partition
and bucket, once however many source rows match it; new rows (inserts and the new versions of
updated rows) in ``delta_w_w_0000/bucket_<task>`` — a bucketed table's in Hive's
``delta_w_w_0000/bucket_N``, N the row's bucket, written by the one task its bucket's rows went
to (option ``grouped_by_bucket``; a table bucketed by a type the JVM does not hash — binary in
``bucketing_version`` 2 — keeps a statement id per writing task, ``delta_w_w_<task>``, as Spark
may then send rows of one bucket to several tasks). A failed task, a type that does not fit, a
NULL into a NOT NULL column or a MERGE cardinality violation abort the transaction: nothing is
visible.

The statement's :class:`~acid_platform.table.statement.StatementMetrics` are logged (INFO) by the
process that commits: Spark's row-level commands return no rows, and a Python data source's
writer reports no metrics of its own to Spark (4.3).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from acid_platform.engines.spark.files import EventFiles, TaskInfo, TaskReport, reports_files
from acid_platform.engines.spark.options import SourceOptions, table_location
from acid_platform.engines.spark.schema import ROW_LEVEL_PARTITION, ROW_LEVEL_ROW_ID
from acid_platform.engines.spark.writer import AcidCommitMessage, task_heartbeat
from acid_platform.format import ROW_ID_FIELDS
from acid_platform.format.storage import StorageBinding, binding_for
from acid_platform.metastore import Metastore
from acid_platform.metastore.model import OperationType, TableSpec
from acid_platform.table.dml import require_transactional
from acid_platform.table.schema import check_not_null, conform, not_null_columns, table_schema
from acid_platform.table.statement import StatementMetrics, WriteRequest
from acid_platform.table.transaction import abort_quietly, lock_wait_s
from acid_platform.table.writes import WriteMetrics, split_by_partition
from acid_platform.table.written_files import record_written

log = logging.getLogger(__name__)

#: Spark's operation column and codes (``RowDeltaUtils``): a delete, an insert, and the insert
#: half of a split update.
OPERATION = "__row_operation"
DELETE, INSERT, REINSERT = 1, 3, 4
#: Statement id of the delete events, and of the new rows (but a bucketed table's whose rows are
#: not grouped by bucket: a statement id per writing task).
STATEMENT = 0


@dataclass(frozen=True)
class RowLevelJob:
    """What every task of one statement needs (picklable)."""

    spec: TableSpec
    command: str
    txn_id: int
    write_id: int
    metastore_url: str | None
    txn_timeout_s: float
    opened_at: float
    #: each Hive bucket's new rows come to one task (``grouped_by_bucket``): statement id 0
    grouped_by_bucket: bool = False
    #: the object store's options, registered in each task's process as the job unpickles
    storage: StorageBinding | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "storage", binding_for(self.spec.location))


class RowLevelWriter(DataSourceArrowWriter):
    """The data source's writer of a Spark SQL DELETE / UPDATE / MERGE (see module docs)."""

    def __init__(self, options: SourceOptions, job: RowLevelJob) -> None:
        self._options = options
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AcidCommitMessage:
        """Write this task's events (runs on an executor)."""
        return AcidCommitMessage(write_events(self.job, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Record what the tasks wrote and commit (runs beside the driver)."""
        commit_row_level(self._options, self.job, _reports(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Record what finished tasks wrote (for the cleaner) and abort: none of it is visible."""
        abort_row_level(self._options, self.job, _reports(messages))


def begin_row_level(options: SourceOptions, spec: TableSpec, command: str) -> RowLevelJob:
    """Open the statement's transaction, take its lock and allocate its write id (Hive's
    messages for a target that is not a full ACID table)."""
    require_transactional(spec)
    request = WriteRequest.dml(spec, options.conf, 1, (STATEMENT,))
    metastore = options.metastore()
    txn_id = metastore.open_txn(agent_info=f"acid_platform spark {command} {spec.full_name}"[:128])
    try:
        metastore.lock(txn_id, list(request.locks), wait_s=lock_wait_s(options.conf))
        write_id = metastore.allocate_write_id(txn_id, spec.db, spec.name)
    except BaseException:
        abort_quietly(metastore, txn_id)
        raise
    return RowLevelJob(
        spec,
        command.upper(),
        txn_id,
        write_id,
        options.metastore_url,
        options.txn_timeout_s,
        time.time(),
        options.grouped_by_bucket,
    )


def write_events(job: RowLevelJob, batches: Iterator[pa.RecordBatch]) -> TaskReport:
    """One task: its rows (sorted by partition, bucket and ROW__ID) as delete and insert events."""
    task = TaskInfo.current()
    spec = job.spec
    location = table_location(spec.location)
    files = EventFiles(spec, location.path, location.filesystem, job.write_id, task.partition_id)
    per_task = spec.num_buckets and not job.grouped_by_bucket
    inserts_statement = task.partition_id if per_task else STATEMENT
    target = table_schema(spec)
    part_cols = list(spec.partition_column_names)
    data_cols = [c for c, _ in spec.columns]
    not_null = not_null_columns(spec)
    counts: Counter[int] = Counter()
    previous: dict[str, object] | None = None  # the last deleted row of the previous batch
    with task_heartbeat(job.metastore_url, job.txn_timeout_s, job.txn_id, job.opened_at):
        try:
            for batch in batches:
                rows = pa.Table.from_batches([batch])
                op = rows.column(OPERATION)
                deleted = _deleted_ids(spec, rows.filter(pc.equal(op, DELETE)))
                if deleted.num_rows:
                    distinct = _distinct(deleted, previous)
                    previous = deleted.slice(deleted.num_rows - 1).to_pylist()[0]
                    counts[DELETE] += distinct.num_rows
                    for name, ids in split_by_partition(distinct, part_cols, ROW_ID_FIELDS):
                        files.write_deletes(name, ids, STATEMENT)
                new = rows.filter(pc.not_equal(op, DELETE))
                if new.num_rows:
                    counts[REINSERT] += pc.sum(pc.equal(new.column(OPERATION), REINSERT)).as_py()
                    counts[INSERT] += pc.sum(pc.equal(new.column(OPERATION), INSERT)).as_py()
                    new = conform(
                        spec.full_name,
                        new.select([f.name for f in target]),
                        target,
                        what=f"{job.command} output ",
                    )
                    check_not_null(spec.full_name, new, not_null)
                    for name, part in split_by_partition(new, part_cols, data_cols):
                        files.write_inserts(name, part, inserts_statement)
            written = files.close()
        except BaseException as exc:
            files.abort(exc)
            raise
    return TaskReport(task, tuple(written), tuple(sorted(counts.items())))


def _deleted_ids(spec: TableSpec, rows: pa.Table) -> pa.Table:
    """ROW__ID fields and partition values of the deleted rows."""
    columns = {
        field: rows.column(name)
        for name, field in zip(ROW_LEVEL_ROW_ID, ROW_ID_FIELDS, strict=True)
    }
    for c in spec.partition_column_names:
        columns[c] = rows.column(ROW_LEVEL_PARTITION + c)
    return pa.table(columns).cast(
        pa.schema(
            [
                pa.field("writeid", pa.int64()),
                pa.field("bucketid", pa.int32()),
                pa.field("rowid", pa.int64()),
                *[pa.field(c, columns[c].type) for c in spec.partition_column_names],
            ]
        )
    )


def _distinct(ids: pa.Table, previous: dict[str, object] | None) -> pa.Table:
    """Each deleted row once: a target row several source rows match (an unconditional MATCHED
    DELETE) comes once per match, adjacent in the sorted stream — within a batch, or as the
    previous batch's last row."""
    if previous is not None:
        same = pc.and_kleene(*[pc.equal(ids.column(f), previous[f]) for f in ROW_ID_FIELDS[:2]])
        same = pc.and_kleene(same, pc.equal(ids.column(ROW_ID_FIELDS[2]), previous["rowid"]))
        for c in ids.column_names[3:]:
            same = pc.and_kleene(same, pc.equal(ids.column(c), previous[c]))
        ids = ids.filter(pc.invert(pc.fill_null(same, False)))
    if ids.num_rows < 2:
        return ids
    distinct = ids.group_by(ids.column_names, use_threads=False).aggregate([])
    return distinct.select(ids.column_names).sort_by([(f, "ascending") for f in ROW_ID_FIELDS])


# --------------------------------------------------------------------------- driver side


def commit_row_level(
    options: SourceOptions, job: RowLevelJob, reports: Sequence[TaskReport]
) -> StatementMetrics:
    """Record the partitions written (Hive's write components: the write set other writers are
    checked against), register new partitions, record the files, commit."""
    spec = job.spec
    metastore = options.metastore()
    files = reports_files(reports)
    written = WriteMetrics.from_files(files)
    try:
        _record_components(metastore, job, reports)
        new_partitions = sorted({f.partition for f in files if f.kind != "delete" and f.partition})
        if new_partitions:
            metastore.add_partitions(spec.db, spec.name, new_partitions)
        record_written(
            metastore, job.txn_id, spec, job.write_id, table_location(spec.location).path, [written]
        )
        metastore.commit_txn(job.txn_id)
    except BaseException:
        abort_quietly(metastore, job.txn_id)
        raise
    counts: Counter[int] = Counter()
    for r in reports:
        counts.update(dict(r.counts))
    metrics = StatementMetrics(
        table=spec.full_name,
        txn_id=job.txn_id,
        write_id=job.write_id,
        statement_ids=tuple(sorted({f.statement for f in files})) or (STATEMENT,),
        rows_inserted=counts[INSERT],
        rows_updated=counts[REINSERT],
        rows_deleted=counts[DELETE] - counts[REINSERT],
        dirs_written=tuple(sorted(set(written.dirs))),
        files_written=len(written.files),
        bytes_written=written.bytes_written,
        duration_s=time.time() - job.opened_at,
        tasks=tuple(r.task for r in reports if r.files),
    )
    log.info("Spark SQL %s: %s", job.command, metrics.as_dict())
    return metrics


def abort_row_level(
    options: SourceOptions, job: RowLevelJob, reports: Sequence[TaskReport]
) -> None:
    """Record what was written (so the cleaner finds it), then abort: it stays invisible."""
    metastore = options.metastore()
    try:
        _record_components(metastore, job, reports)
    except Exception as exc:  # noqa: BLE001 - aborting matters more than the record
        log.warning("txn %s: could not record written partitions: %s", job.txn_id, exc)
    abort_quietly(metastore, job.txn_id)


def _record_components(
    metastore: Metastore, job: RowLevelJob, reports: Sequence[TaskReport]
) -> None:
    spec = job.spec
    by_operation: dict[OperationType, set[str | None]] = {}
    for f in reports_files(reports):
        if job.command == "UPDATE":
            operation = OperationType.UPDATE
        else:
            operation = OperationType.DELETE if f.kind == "delete" else OperationType.INSERT
        by_operation.setdefault(operation, set()).add(f.partition or None)
    if not by_operation and not spec.partition_columns:  # nothing written: the table's
        by_operation[OperationType.UPDATE if job.command == "UPDATE" else OperationType.DELETE] = {
            None
        }
    for operation, partitions in by_operation.items():
        names = sorted(partitions, key=lambda p: p or "")
        if not spec.partition_columns:
            names = [None]
        metastore.add_write_components(job.txn_id, spec.db, spec.name, names, operation)


def _reports(messages: Sequence[WriterCommitMessage | None]) -> list[TaskReport]:
    return [m.report for m in messages if isinstance(m, AcidCommitMessage)]
