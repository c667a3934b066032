"""Spark Structured Streaming into an ACID table: each micro-batch ONE transaction, exactly once.

>>> # (df.writeStream.format("acid")
>>> #    .option("checkpointLocation", "/chk/orders")   # the query's identity across restarts
>>> #    .trigger(processingTime="10 seconds")
>>> #    .start("db.orders"))

Spark 4.3 runs a Python streaming sink in three kinds of process for every micro-batch:

1. **planning** (a Python worker beside the driver): ``DataSource.streamWriter`` builds an
   :class:`AcidStreamWriter`, which Spark pickles to ship it to the executors. Pickling it opens
   the batch's transaction (:func:`~.writer.begin_insert`: lock, write id — before any file),
   so the tasks know the write id. The transaction's agent info names the sink (the table and
   the checkpoint location, or the query name): a transaction of this sink still open then is a
   leftover of a batch that never ended (the driver died) and is aborted first;
2. **tasks** (executors): :meth:`AcidStreamWriter.write` writes the rows as a batch write's task
   does (:func:`~.writer.write_rows`: ``delta_w_w_s/bucket_N``, the transaction heartbeated) and
   reports the files with the streaming query's id and the batch id Spark sets in the task's
   local properties (``sql.streaming.queryId``, ``streaming.sql.batchId``);
3. **commit** (another Python worker): Spark builds a writer of its own (never pickled: it opens
   nothing) and calls ``commit(messages, batch_id)``: the batch is recorded as the
   transaction's source, ``spark-streaming:<query id>:<batch id>``, and the transaction
   commits (:func:`~acid_platform.table.statement.commit_detached` with ``sources``), the source
   published in the same metastore transaction that marks it committed. ``abort`` aborts it.

**Exactly once.** The query id is kept in the checkpoint, so it is the same after a restart;
Spark re-runs a batch whose offsets it logged but whose commit it did not (the driver died
after the table's commit, or the checkpoint's ``commits/<id>`` is gone). The replayed batch
writes its files in a new transaction, finds its source committed already
(:class:`~acid_platform.errors.DuplicateSourceError`), and is aborted: nothing it wrote becomes
visible, the batch is a no-op. A failed batch aborts its transaction (by id from the tasks'
messages, else by the sink's agent info); a transaction left behind by a driver that died is
aborted by the next batch of the same query, or by the housekeeper after ``hive.txn.timeout``.

Output modes: ``append`` inserts each batch; ``complete`` (Spark's ``overwrite``) replaces the
table's rows each batch (INSERT OVERWRITE; a bucketed table is refused, as for a batch write).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from acid_platform.engines.spark.files import TaskReport
from acid_platform.engines.spark.options import SourceOptions
from acid_platform.engines.spark.writer import (
    InsertJob,
    abort_insert,
    begin_insert,
    insert_outcome,
    write_rows,
)
from acid_platform.errors import DuplicateSourceError, EngineError
from acid_platform.metastore.model import Source, TableSpec
from acid_platform.table.statement import commit_detached
from acid_platform.table.transaction import abort_quietly

log = logging.getLogger(__name__)

#: The local properties Spark sets on a micro-batch's tasks.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: How a micro-batch is named as a source of its table.
SOURCE_PREFIX = "spark-streaming"


def batch_source_key(query_id: str, batch_id: int) -> str:
    """The source key of micro-batch ``batch_id`` of streaming query ``query_id``."""
    return f"{SOURCE_PREFIX}:{query_id}:{batch_id}"


@dataclass
class StreamCommitMessage(WriterCommitMessage):
    """One task's files, the batch's transaction, and which query and batch Spark ran."""

    report: TaskReport
    job: InsertJob
    query_id: str | None
    batch_id: int | None


class AcidStreamWriter(DataSourceStreamArrowWriter):
    """The ``acid`` data source's streaming sink (see module docs)."""

    def __init__(
        self, options: SourceOptions, spec: TableSpec, columns: Sequence[str], overwrite: bool
    ) -> None:
        self._options = options
        self._spec = spec
        self._columns = list(columns)
        self._overwrite = overwrite
        #: The batch's transaction: opened when Spark pickles the writer for the executors.
        self.job: InsertJob | None = None

    def __getstate__(self) -> dict[str, Any]:
        if self.job is None:
            self.job = begin_batch(self._options, self._spec, self._columns, self._overwrite)
        return dict(self.__dict__)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StreamCommitMessage:
        """Write this task's rows of the micro-batch (runs on an executor)."""
        if self.job is None:
            raise EngineError("the acid streaming sink's writer reached a task without its txn")
        query_id, batch_id = task_batch()
        return StreamCommitMessage(write_rows(self.job, iterator), self.job, query_id, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        """Commit the micro-batch's transaction with the batch as its source (a no-op when the
        batch was committed already)."""
        commit_batch(self._options, self._spec, messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        """Abort the micro-batch's transaction: nothing it wrote becomes visible."""
        abort_batch(self._options, self._spec, messages, batchId)


def sink_agent(options: SourceOptions, spec: TableSpec) -> str | None:
    """The agent info of this sink's transactions: the table and a digest of the checkpoint
    location (or the query name); ``None`` when the options name neither (then transactions
    left behind are only reaped by the housekeeper)."""
    identity = options.checkpoint_location or options.query_name
    if not identity:
        return None
    digest = hashlib.sha256(f"{spec.full_name}\n{identity}".encode()).hexdigest()[:16]
    return f"acid_platform spark stream {spec.full_name} {digest}"[:128]


def abort_leftovers(options: SourceOptions, spec: TableSpec) -> list[int]:
    """Abort the transactions of this sink still open (a batch that never ended); their ids."""
    agent = sink_agent(options, spec)
    if agent is None:
        return []
    ms = options.metastore()
    left = ms.open_txns_by_agent(agent)
    for txn_id in left:
        log.warning("%s: aborting txnid:%s left open by an earlier micro-batch", agent, txn_id)
        abort_quietly(ms, txn_id)
    return left


def begin_batch(
    options: SourceOptions, spec: TableSpec, columns: Sequence[str], overwrite: bool
) -> InsertJob:
    """Open a micro-batch's transaction (after aborting this sink's leftovers)."""
    abort_leftovers(options, spec)
    agent = sink_agent(options, spec) or f"acid_platform spark stream {spec.full_name}"
    return begin_insert(options, spec, columns, overwrite, agent=agent)


def task_batch() -> tuple[str | None, int | None]:
    """The streaming query id and batch id of the running task (``None`` outside one)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return None, None
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    return ctx.getLocalProperty(QUERY_ID_PROPERTY), None if batch is None else int(batch)


def commit_batch(
    options: SourceOptions,
    spec: TableSpec,
    messages: Sequence[WriterCommitMessage | None],
    batch_id: int,
) -> None:
    """Commit micro-batch ``batch_id``: its source recorded in its transaction (see module
    docs); a batch committed already aborts the transaction and returns."""
    done = [m for m in messages if isinstance(m, StreamCommitMessage)]
    if not done:  # Spark runs at least one task per batch; nothing to commit
        log.warning("micro-batch %s into %s: no task reported", batch_id, spec.full_name)
        abort_leftovers(options, spec)
        return
    job = done[0].job
    ms = options.metastore()
    try:
        source = batch_source(options, done, batch_id)
    except BaseException:
        abort_insert(options, job, [m.report for m in done])
        raise
    outcome = insert_outcome(job, [m.report for m in done])
    try:
        metrics = commit_detached(ms, job.detached(), outcome, sources=[source])
    except DuplicateSourceError as exc:  # a replay: the batch is in the table already
        log.info("micro-batch %s is a no-op (txnid:%s aborted): %s", batch_id, job.txn_id, exc)
        return
    log.info(
        "micro-batch %s into %s: txnid:%s write id %s, %d row(s)",
        batch_id,
        spec.full_name,
        metrics.txn_id,
        metrics.write_id,
        metrics.rows_inserted,
    )


def batch_source(
    options: SourceOptions, done: Sequence[StreamCommitMessage], batch_id: int
) -> Source:
    """The source naming the micro-batch; checks every task ran it in one transaction."""
    txns = {m.job.txn_id for m in done}
    queries = {m.query_id for m in done}
    batches = {m.batch_id for m in done}
    if len(txns) != 1 or len(queries) != 1 or None in queries or batches != {batch_id}:
        raise EngineError(
            f"micro-batch {batch_id}: the tasks report txns {sorted(txns)}, queries "
            f"{sorted(map(str, queries))} and batches {sorted(map(str, batches))}: not one batch "
            "of one streaming query in one transaction"
        )
    query_id = str(next(iter(queries)))
    rows = sum(n for m in done for _, n in m.report.counts)
    info = {"query_id": query_id, "batch_id": batch_id, "rows": rows}
    if options.checkpoint_location:
        info["checkpoint"] = options.checkpoint_location
    return Source(batch_source_key(query_id, batch_id), info)


def abort_batch(
    options: SourceOptions,
    spec: TableSpec,
    messages: Sequence[WriterCommitMessage | None],
    batch_id: int,
) -> None:
    """Abort micro-batch ``batch_id``'s transaction (from the tasks' messages, else this
    sink's open transactions)."""
    done = [m for m in messages if isinstance(m, StreamCommitMessage)]
    jobs = {m.job.txn_id: m.job for m in done}
    for txn_id, job in jobs.items():
        log.warning(
            "micro-batch %s into %s failed: txnid:%s aborted", batch_id, spec.full_name, txn_id
        )
        abort_insert(options, job, [m.report for m in done if m.job.txn_id == txn_id])
    if not jobs:
        abort_leftovers(options, spec)


__all__ = [
    "BATCH_ID_PROPERTY",
    "QUERY_ID_PROPERTY",
    "SOURCE_PREFIX",
    "AcidStreamWriter",
    "StreamCommitMessage",
    "abort_batch",
    "abort_leftovers",
    "batch_source",
    "batch_source_key",
    "begin_batch",
    "commit_batch",
    "sink_agent",
    "task_batch",
]
