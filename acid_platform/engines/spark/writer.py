"""Writing a DataFrame into an ACID table: executors write event files, the driver commits.

``df.write.format("acid").mode("append" | "overwrite").save("db.t")`` is INSERT INTO / INSERT
OVERWRITE as one transaction:

1. planning (beside the driver, :func:`begin_insert`): open a transaction, take Hive's lock
   (SHARED_READ for INSERT, EXCLUSIVE for INSERT OVERWRITE by default), allocate the write id;
2. each task (:func:`write_rows`) converts its rows to the table's types with the table layer's
   rules, routes them to (partition, bucket) and streams them into ``delta_w_w_0/bucket_N``
   (``base_w/bucket_N`` for overwrite), then returns a :class:`~.files.TaskReport`; a failing
   task removes what it wrote;
3. the driver (:func:`commit_insert`) records the partitions written as write components,
   registers new partitions and commits — or (:func:`abort_insert`) records them and aborts,
   leaving only invisible files for the cleaner.

Steps 1 and 3 run in different processes, so they use the table layer's detached form of the
statement lifecycle (:class:`~acid_platform.table.statement.DetachedWrite`), which names the
transaction by id; this module keeps no lifecycle of its own.

Tasks heartbeat the transaction while they run (the planning process does not live on), so a
long job keeps it open. Unbucketed tables get one file per task (``bucket_<task partition id>``);
a bucketed table routes rows with Hive's hash. As Spark may put rows of one bucket in several
tasks, an append to a bucketed table gives each task its own statement id (``delta_w_w_<task>``)
unless the rows are grouped by bucket (option ``grouped_by_bucket``, which
:meth:`SparkEngine.write <acid_platform.engines.spark.engine.SparkEngine.write>` arranges); an
overwrite of a bucketed table needs that grouping.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from acid_platform.engines.spark.files import EventFiles, TaskInfo, TaskReport, reports_files
from acid_platform.engines.spark.options import SourceOptions, open_metastore, table_location
from acid_platform.errors import TxnAbortedError, UnknownColumnError, UnsupportedOperationError
from acid_platform.format.fs import resolve
from acid_platform.format.storage import StorageBinding, binding_for
from acid_platform.metastore.model import TableSpec
from acid_platform.table.schema import check_not_null, conform, not_null_columns, table_schema
from acid_platform.table.statement import (
    DetachedWrite,
    StatementMetrics,
    WriteOutcome,
    abort_detached,
    begin_detached,
    commit_detached,
)
from acid_platform.table.transaction import Heartbeat
from acid_platform.table.writes import WriteMetrics, split_by_partition

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InsertJob:
    """What every task of one insert needs (picklable)."""

    spec: TableSpec
    txn_id: int
    write_id: int
    statement: int = 0
    overwrite: bool = False
    #: bucketed rows not grouped by bucket: each task writes its own statement id
    statement_per_task: bool = False
    #: set when tasks must heartbeat the transaction themselves
    metastore_url: str | None = None
    txn_timeout_s: float = 300.0
    opened_at: float = 0.0
    #: a statement of a shared ``wh.transaction()`` (:attr:`DetachedWrite.joined`)
    joined: bool = False
    #: the object store's options, registered in each task's process as the job unpickles
    storage: StorageBinding | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "storage", binding_for(self.spec.location))

    def detached(self) -> DetachedWrite:
        """The table layer's handle on this insert's transaction."""
        return DetachedWrite(
            self.spec,
            self.txn_id,
            self.write_id,
            self.overwrite,
            self.opened_at,
            self.statement,
            joined=self.joined,
        )


@dataclass
class AcidCommitMessage(WriterCommitMessage):
    """A task's :class:`~.files.TaskReport`, carried to the driver's ``commit``/``abort``."""

    report: TaskReport


class AcidWriter(DataSourceArrowWriter):
    """The ``acid`` data source's batch writer (see module docs)."""

    def __init__(self, options: SourceOptions, job: InsertJob) -> None:
        self._options = options
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AcidCommitMessage:
        """Write this task's rows (runs on an executor)."""
        return AcidCommitMessage(write_rows(self.job, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Record what the tasks wrote and commit the transaction (runs beside the driver)."""
        commit_insert(self._options, self.job, _reports(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Record what the finished tasks wrote and abort: all of it stays invisible."""
        abort_insert(self._options, self.job, _reports(messages))


def begin_insert(
    options: SourceOptions,
    spec: TableSpec,
    columns: Sequence[str],
    overwrite: bool,
    agent: str | None = None,
) -> InsertJob:
    """Open the transaction of an insert, lock, allocate the write id (before any file);
    ``agent`` names the transaction's writer (its agent info)."""
    known = set(table_schema(spec).names)
    unknown = [c for c in columns if c.lower() not in known]
    if unknown:
        raise UnknownColumnError(
            f"table {spec.full_name} has no column(s) {unknown}; its columns are {sorted(known)}"
        )
    if overwrite and spec.num_buckets and not options.grouped_by_bucket:
        raise UnsupportedOperationError(
            f"INSERT OVERWRITE of bucketed table {spec.full_name} from a DataFrame needs the rows "
            "grouped by bucket: use SparkEngine(spark).write(df, table, mode='overwrite')"
        )
    per_task = bool(spec.num_buckets) and not options.grouped_by_bucket
    if per_task and options.transaction is not None:
        raise UnsupportedOperationError(
            f"an append to bucketed table {spec.full_name} inside wh.transaction() needs its "
            "rows grouped by bucket (INSERT INTO the table by name, or Table.insert(df)): a "
            "shared transaction cannot give each Spark task a statement id of its own"
        )
    write = begin_detached(
        options.metastore(),
        spec,
        options.conf,
        overwrite=overwrite,
        agent=agent or f"acid_platform spark write {spec.full_name}",
        shared=options.transaction,
    )
    return InsertJob(
        spec,
        write.txn_id,
        write.write_id,
        statement=write.first_statement,
        overwrite=overwrite,
        statement_per_task=per_task,
        metastore_url=options.metastore_url,
        txn_timeout_s=options.txn_timeout_s,
        opened_at=write.opened_at,
        joined=write.joined,
    )


def write_rows(job: InsertJob, batches: Iterator[pa.RecordBatch]) -> TaskReport:
    """One task of an insert: convert, route and write its rows (runs on an executor)."""
    task = TaskInfo.current()
    spec = job.spec
    location = table_location(spec.location)
    statement = task.partition_id if job.statement_per_task else job.statement
    files = EventFiles(
        spec,
        location.path,
        location.filesystem,
        job.write_id,
        writer_id=task.partition_id,
        overwrite=job.overwrite,
    )
    target = table_schema(spec)
    part_cols = list(spec.partition_column_names)
    data_cols = [c for c, _ in spec.columns]
    not_null = not_null_columns(spec)
    rows_written = 0
    with task_heartbeat(job.metastore_url, job.txn_timeout_s, job.txn_id, job.opened_at):
        try:
            for batch in batches:
                rows = conform(
                    spec.full_name,
                    pa.Table.from_batches([batch]),
                    target,
                    what=f"Spark task {task.partition_id}'s ",  # rows counted within the task
                    first_row=rows_written,
                )
                check_not_null(spec.full_name, rows, not_null)
                for name, part in split_by_partition(rows, part_cols, data_cols):
                    files.write_inserts(name, part, statement)
                rows_written += rows.num_rows
            written = files.close()
        except BaseException as exc:
            files.abort(exc)
            raise
    return TaskReport(task, tuple(written), ((statement, rows_written),))


def commit_insert(options: SourceOptions, job: InsertJob, reports: Sequence[TaskReport]) -> None:
    """Record and register the partitions written, commit (the table layer's detached write:
    :func:`~acid_platform.table.statement.commit_detached`)."""
    metrics = commit_detached(options.metastore(), job.detached(), insert_outcome(job, reports))
    if options.metrics_path:
        write_metrics(
            options.metrics_path, metrics, reports, committed=True, overwrite=job.overwrite
        )


def insert_outcome(job: InsertJob, reports: Sequence[TaskReport]) -> WriteOutcome:
    """What the tasks of an insert wrote: rows, files, the partitions that received rows, the
    tasks that wrote files."""
    return WriteOutcome(
        rows_inserted=sum(n for r in reports for _, n in r.counts),
        written=WriteMetrics.from_files(reports_files(reports)),
        partitions=_partitions(job, reports),
        tasks=tuple(r.task for r in reports if r.files),
    )


def abort_insert(options: SourceOptions, job: InsertJob, reports: Sequence[TaskReport]) -> None:
    """Record what finished tasks wrote (so the cleaner finds it), then abort."""
    abort_detached(options.metastore(), job.detached(), insert_outcome(job, reports))
    if options.metrics_path:
        metrics = StatementMetrics(
            table=job.spec.full_name,
            txn_id=job.txn_id,
            write_id=job.write_id,
            statement_ids=(job.statement,),
        )
        write_metrics(
            options.metrics_path, metrics, reports, committed=False, overwrite=job.overwrite
        )


@contextmanager
def task_heartbeat(
    url: str | None, timeout_s: float, txn_id: int, opened_at: float
) -> Iterator[None]:
    """Heartbeat ``txn_id`` from a task while it runs (nothing when ``url`` is ``None``)."""
    if url is None:
        yield
        return

    def beat() -> None:
        open_metastore(url, timeout_s).heartbeat(txn_id=txn_id)

    if time.time() - opened_at > timeout_s / 4:  # a long job: tell the metastore we live
        try:
            beat()
        except TxnAbortedError:
            raise
        except Exception as exc:  # noqa: BLE001 - a missed beat is not yet a failure
            log.warning("txn %s: heartbeat failed: %s", txn_id, exc)
    heartbeat = Heartbeat(beat, timeout_s / 2)
    heartbeat.start()
    try:
        yield
    finally:
        heartbeat.stop()


# --------------------------------------------------------------------------- helpers


def _reports(messages: Sequence[WriterCommitMessage | None]) -> list[TaskReport]:
    return [m.report for m in messages if isinstance(m, AcidCommitMessage)]


def _partitions(job: InsertJob, reports: Sequence[TaskReport]) -> list[str]:
    if not job.spec.partition_columns:
        return []
    return sorted({f.partition for f in reports_files(reports)})


def write_metrics(
    path: str,
    metrics: StatementMetrics,
    reports: Sequence[TaskReport],
    committed: bool,
    **extra: Any,
) -> None:
    """A statement's metrics as JSON at ``path`` (option ``metrics_path``), with the files and
    the tasks that wrote them, who committed, and ``extra`` fields."""
    document: Mapping[str, Any] = {
        **metrics.as_dict(),
        "committed": committed,
        **extra,
        "files": [asdict(f) for f in reports_files(reports)],
        "tasks": [asdict(r.task) for r in reports],
        "committed_by": {"host": socket.gethostname(), "pid": os.getpid()},
    }
    loc = resolve(path)  # not table_location's cache: a statement's path is used once
    with loc.filesystem.open_output_stream(loc.path) as out:
        out.write(json.dumps(document, indent=2).encode())
