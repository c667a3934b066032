"""DELETE, UPDATE and MERGE INTO in Spark SQL on the warehouse's tables: Spark plans, Hive writes.

>>> # spark.sql("DELETE FROM db.t WHERE id IN (SELECT id FROM gone)").show()  # num_affected_rows
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

Hive's semantics and layout: one transaction per statement, or the enclosing one (its lock —
EXCL_WRITE, or
SHARED_WRITE with ``hive.txn.xlock.write=false``, taken when Spark asks for the writer — which
adaptive execution does only after the stages before the write, the scan of the target among
them, have run; so the commit's write-set check (Hive's first committer wins) starts from the
snapshot that scan read at (:func:`scanned_at`: the query's reader lease, which each writing
task looks up), and an update or delete of the same partition committed by another writer
between that scan and the commit fails the statement with a write conflict, nothing written —
:file:`test_sql_dml_concurrency.py` races one deterministically),
one write id; each deleted row's event in ``delete_delta_w_w_0000/bucket_N`` of its partition
and bucket, once however many source rows match it; the new versions of updated rows in
``delta_w_w_0000/bucket_<task>`` and a MERGE's inserted rows (WHEN NOT MATCHED) under a statement
id of their own, ``delta_w_w_0001`` — a bucketed table's in Hive's ``bucket_N``, N the row's
bucket, written by the one task its bucket's rows went to (option ``grouped_by_bucket``; a table
bucketed by a type the JVM does not hash — binary in ``bucketing_version`` 2 — has each writing
task's own statement ids instead, ``delta_w_w_<task>`` and ``<task> + 2048`` for inserted rows, as
Spark may then send rows of one bucket to several tasks). A failed task, a type that does not fit, a
NULL into a NOT NULL column or a MERGE cardinality violation abort the transaction: nothing is
visible.

Statement ids per MERGE branch go as far as Spark's labels (``RowDeltaUtils``: DELETE, UPDATE,
INSERT, REINSERT; an update arrives split, as a DELETE and a REINSERT) tell branches apart: the
new versions of updated rows (REINSERT) and inserted rows (INSERT) get distinct ones. The rest
Spark labels alike, so they share one: several WHEN MATCHED … UPDATE branches and WHEN NOT
MATCHED BY SOURCE … UPDATE (all REINSERT), several WHEN NOT MATCHED … INSERT branches (all
INSERT), and a WHEN MATCHED … DELETE and the delete halves of updates (all DELETE, statement 0,
as a delete of the row an update replaces must sit with the other deletes of its bucket).

The statement is the table layer's detached statement
(:class:`~acid_platform.table.statement.DetachedWrite` with its ``command``), as the data
source's inserts are: :func:`~acid_platform.table.statement.begin_detached` opens it (the lock
above, the write id) when Spark asks for the writer, and the driver-side commit hands what the
tasks reported to :func:`~acid_platform.table.statement.commit_detached` (the write components —
DELETE and INSERT by file, UPDATE for an UPDATE's — as Hive's write set, new partitions, the
files, the commit) or :func:`~acid_platform.table.statement.abort_detached`; this module keeps
no lifecycle of its own. Its :class:`~acid_platform.table.statement.StatementMetrics` come from
there too: rows inserted, updated (Spark's REINSERT rows) and deleted (the other deleted rows).

What ``spark.sql`` returns: one row of the committed statement's counts, in Delta Lake's columns
— ``num_affected_rows``, and for MERGE also ``num_updated_rows``, ``num_deleted_rows``,
``num_inserted_rows`` (``AcidTable``'s calls return the same DataFrame). Spark gives a command's
DataFrame the output of its analysed plan, an empty one for Spark's rewritten statement, and a
session's analyser rules are fixed when its analyser is built (``spark.sql.extensions``, before
``wh.register_spark`` sees the session); so :file:`jvm/AcidRowLevelMetrics.java` appends one
post-hoc rule to the built analyser, which puts a command with the metrics columns in place of
the rewritten statement, and the planner strategy runs the append and then returns the metrics
that this module's commit wrote as JSON to the path of the option ``metrics_path``, fresh for
each statement (the JVM reads it and removes it). On a Spark whose analyser has no such rule
list the statements run as before and return no rows. The metrics are also logged (INFO).

Inside ``with wh.transaction():`` the statement joins that transaction (see
:class:`~acid_platform.table.transaction.SharedTransaction`): the warehouse shares it with the
session (the setting ``spark.acid.transaction``, passed by the session catalog as the option
``transaction``), the scan reads its snapshot with its own earlier writes, the writer takes the
lock, the transaction's write id and statement ids from the metastore's counter of the shared
transaction (``begin_detached(shared=…)``), the commit records the files without committing,
and a failed statement — in its write, or before it (:file:`jvm/AcidRowLevelMetrics.java`)
— aborts the transaction, as Hive does. A table bucketed by a type the JVM does not hash
(per-task statement ids) is refused there.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from acid_platform.engines.spark.files import EventFiles, TaskInfo, TaskReport, reports_files
from acid_platform.engines.spark.options import SourceOptions, table_location
from acid_platform.engines.spark.query_snapshot import scanned_snapshot
from acid_platform.engines.spark.schema import ROW_LEVEL_PARTITION, ROW_LEVEL_ROW_ID
from acid_platform.engines.spark.writer import AcidCommitMessage, task_heartbeat, write_metrics
from acid_platform.errors import UnsupportedOperationError
from acid_platform.format import ROW_ID_FIELDS, ValidTxnList
from acid_platform.format.storage import StorageBinding, binding_for
from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml import require_transactional
from acid_platform.table.event_layout import DELETE as DELETE_KIND
from acid_platform.table.schema import check_not_null, conform, not_null_columns, table_schema
from acid_platform.table.statement import (
    DetachedWrite,
    StatementMetrics,
    WriteOutcome,
    abort_detached,
    begin_detached,
    commit_detached,
)
from acid_platform.table.transaction import OutdatedSnapshot
from acid_platform.table.writes import WriteMetrics, split_by_partition

log = logging.getLogger(__name__)

#: Spark's operation column and codes (``RowDeltaUtils``): a delete, an insert, and the insert
#: half of a split update.
OPERATION = "__row_operation"
DELETE, INSERT, REINSERT = 1, 3, 4
#: Statement id of the delete events, and of the new versions of updated rows (a MERGE's
#: inserted rows: the next one; but a bucketed table's whose rows are not grouped by bucket: a
#: statement id per writing task).
STATEMENT = 0
#: A bucketed table's MERGE writes its inserted rows under the writing task's partition id plus
#: this (half of the 4096 statement ids Hive's bucket codec holds): at most 2048 writing tasks.
BUCKETED_INSERTS = 2048


@dataclass(frozen=True)
class RowLevelJob:
    """What every task of one statement needs (picklable)."""

    write: DetachedWrite
    metastore_url: str | None
    txn_timeout_s: float
    #: each Hive bucket's new rows come to one task (``grouped_by_bucket``): the statement ids
    #: of an unbucketed table
    grouped_by_bucket: bool = False
    #: names the snapshot its query's scans read at (the option ``query_scope``)
    query_scope: str | None = None
    #: the object store's options, registered in each task's process as the job unpickles
    storage: StorageBinding | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "storage", binding_for(self.write.spec.location))

    @property
    def spec(self) -> TableSpec:
        """The target table."""
        return self.write.spec

    @property
    def command(self) -> str:
        """``UPDATE``, ``DELETE`` or ``MERGE``."""
        return self.write.command or ""


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
    """Open the statement's transaction, take its lock and allocate its write id: the table
    layer's detached statement (Hive's messages for a target that is not a full ACID table)."""
    require_transactional(spec)
    per_task = bool(spec.num_buckets) and not options.grouped_by_bucket
    if per_task and options.transaction is not None:
        raise UnsupportedOperationError(
            f"Spark SQL {command} of {spec.full_name} inside wh.transaction(): the table's "
            "bucketing (binary columns, bucketing_version 2) needs a statement id per Spark "
            "task, which a shared transaction cannot give; run it outside the transaction"
        )
    write = begin_detached(
        options.metastore(),
        spec,
        options.conf,
        agent=f"acid_platform spark {command} {spec.full_name}",
        command=command,
        shared=options.transaction,
        statements=2 if command.upper() == "MERGE" else 1,
    )
    return RowLevelJob(
        write,
        options.metastore_url,
        options.txn_timeout_s,
        options.grouped_by_bucket,
        options.query_scope,
    )


def write_events(job: RowLevelJob, batches: Iterator[pa.RecordBatch]) -> TaskReport:
    """One task: its rows (sorted by partition, bucket and ROW__ID) as delete and insert events."""
    task = TaskInfo.current()
    spec = job.spec
    location = table_location(spec.location)
    write = job.write
    files = EventFiles(spec, location.path, location.filesystem, write.write_id, task.partition_id)
    per_task = bool(spec.num_buckets) and not job.grouped_by_bucket
    statements = new_rows_statements(task.partition_id, per_task, write.first_statement)
    target = table_schema(spec)
    part_cols = list(spec.partition_column_names)
    data_cols = [c for c, _ in spec.columns]
    not_null = not_null_columns(spec)
    counts: Counter[int] = Counter()
    previous: dict[str, object] | None = None  # the last deleted row of the previous batch
    scanned = None  # the snapshot the scan read the target at (not in a shared transaction)
    if not write.joined and job.metastore_url and job.query_scope:
        scanned = scanned_snapshot(job.metastore_url, job.txn_timeout_s, job.query_scope)
    with task_heartbeat(job.metastore_url, job.txn_timeout_s, write.txn_id, write.opened_at):
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
                        files.write_deletes(name, ids, write.first_statement)
                for code, statement in statements.items():
                    new = rows.filter(pc.equal(op, code))
                    if not new.num_rows:
                        continue
                    counts[code] += new.num_rows
                    new = conform(
                        spec.full_name,
                        new.select([f.name for f in target]),
                        target,
                        what=f"{job.command} output ",
                    )
                    check_not_null(spec.full_name, new, not_null)
                    for name, part in split_by_partition(new, part_cols, data_cols):
                        files.write_inserts(name, part, statement)
            written = files.close()
        except BaseException as exc:
            files.abort(exc)
            raise
    return TaskReport(task, tuple(written), tuple(sorted(counts.items())), snapshot=scanned)


def new_rows_statements(task: int, per_task: bool, first: int = STATEMENT) -> dict[int, int]:
    """The statement ids of a task's new rows, by Spark's operation: the new versions of
    updated rows (REINSERT) under the delete events' statement id ``first`` (the statement's
    first: 0, or the next of a shared transaction's), a MERGE's inserted rows (INSERT) under
    the next one. ``per_task``: a bucketed table's rows of one bucket may come from several
    tasks (not grouped by bucket), so each task has its own statement ids: its partition id,
    and that plus :data:`BUCKETED_INSERTS` (never in a shared transaction)."""
    if per_task:
        return {REINSERT: task, INSERT: task + BUCKETED_INSERTS}
    return {REINSERT: first, INSERT: first + 1}


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
    """Commit the statement (:func:`~acid_platform.table.statement.commit_detached`: its write
    components as Hive's write set, new partitions, the files, the commit); its metrics are
    logged, and written to the option ``metrics_path`` (what the Spark SQL statement returns)."""
    outcome = row_level_outcome(reports)
    metrics = commit_detached(
        options.metastore(), job.write, outcome, snapshot=scanned_at(job, reports)
    )
    log.info("Spark SQL %s: %s", job.command, metrics.as_dict())
    if options.metrics_path:
        write_metrics(options.metrics_path, metrics, reports, committed=True, command=job.command)
    return metrics


def scanned_at(job: RowLevelJob, reports: Sequence[TaskReport]) -> ValidTxnList | None:
    """The snapshot the statement's scan read the target at, for its commit's write-set check
    (see module docs); ``None`` in a shared transaction (checked from its own snapshot) or when
    no task wrote a delete event (only inserts: nothing to conflict). A task that wrote delete
    events without knowing it fails the commit: the check cannot be made."""
    if job.write.joined:
        return None
    deleting = [r for r in reports if any(f.kind == DELETE_KIND for f in r.files)]
    if not deleting:
        return None
    if any(r.snapshot is None for r in deleting):
        raise OutdatedSnapshot(
            f"Spark SQL {job.command} of {job.spec.full_name}: the snapshot its scan read could "
            "not be found (its reader lease expired, or the rows did not come from a scan of "
            "this query), so a concurrent update could not be ruled out; nothing was "
            "committed. Retrying the statement may succeed."
        )
    snapshots = [ValidTxnList.parse(str(r.snapshot)) for r in deleting]
    return min(snapshots, key=lambda s: s.high_watermark)


def abort_row_level(
    options: SourceOptions, job: RowLevelJob, reports: Sequence[TaskReport]
) -> None:
    """Record what was written (so the cleaner finds it), then abort: it stays invisible."""
    abort_detached(options.metastore(), job.write, row_level_outcome(reports))


def row_level_outcome(reports: Sequence[TaskReport]) -> WriteOutcome:
    """What the tasks wrote: rows inserted, updated (Spark's REINSERT rows: the new versions)
    and deleted (deleted rows that are not the old versions of updated ones), the files, the
    partitions that received new rows, the tasks that wrote files."""
    counts: Counter[int] = Counter()
    for r in reports:
        counts.update(dict(r.counts))
    files = reports_files(reports)
    return WriteOutcome(
        rows_inserted=counts[INSERT],
        rows_updated=counts[REINSERT],
        rows_deleted=counts[DELETE] - counts[REINSERT],
        written=WriteMetrics.from_files(files),
        partitions=sorted({f.partition for f in files if f.kind != "delete" and f.partition}),
        tasks=tuple(r.task for r in reports if r.files),
    )


def _reports(messages: Sequence[WriterCommitMessage | None]) -> list[TaskReport]:
    return [m.report for m in messages if isinstance(m, AcidCommitMessage)]
