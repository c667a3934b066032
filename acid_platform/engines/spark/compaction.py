"""Compaction of large partitions on Spark: the worker's plan, written by Spark executors.

The worker decides everything on the driver — which files, which output names, under which
snapshot — and keeps the compactor's txn open (heartbeated) there. :class:`SparkCompactionExecutor`
only runs the plan:

1. on the driver, :func:`~acid_platform.compaction.rewrite.create_output_dirs`;
2. one Spark task per :class:`~acid_platform.compaction.BucketTask`: the executor's Python
   worker reads the task's input files and writes its output bucket file with
   :func:`~acid_platform.compaction.run_task` (the embedded code, so the files are the same
   bytes); only a small :class:`BucketOutcome` comes back — rows never reach the driver;
3. on the driver, :func:`~acid_platform.compaction.rewrite.finish` gathers the result.

Failures. A task that fails on its data (a corrupt ORC file, a schema that does not fit: any
error other than an I/O error) returns that error instead of raising, and the driver raises the
very error — same type, same message — that the embedded executor would have raised; the worker
then records it on the queue entry, aborts the compactor's txn and removes the invisible output.
I/O errors and lost executors are left to Spark, which retries the task (``spark.task.maxFailures``);
if it still fails, a :class:`~acid_platform.errors.CompactionError` names the partition and the
task's last error.

Retries are idempotent: an attempt first removes whatever an earlier attempt left at its output
path, then writes the file anew; no two tasks share an output. Speculative execution would let
two attempts write the same file at once, so it is refused (``spark.speculation=false``).

>>> # router = compaction_router(spark, wh.conf)   # embedded below the threshold, Spark above
>>> # run_worker(wh, executor=router)
>>> # compact_table(wh, "db.sales", kind="major", executor=SparkCompactionExecutor(spark))
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import pyarrow as pa

from acid_platform.compaction.config import CompactorConf
from acid_platform.compaction.executors import (
    CompactionExecutor,
    EmbeddedExecutor,
    ExecutorRouter,
    LazyExecutor,
)
from acid_platform.compaction.rewrite import (
    RewritePlan,
    RewriteResult,
    create_output_dirs,
    finish,
    run_task,
)
from acid_platform.engines.spark.files import TaskInfo
from acid_platform.engines.spark.python_workers import use_driver_python, worker_error
from acid_platform.errors import AcidError, CompactionError
from acid_platform.format import WrittenFile

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The executor's name, as :attr:`CompactionOutcome.executor
#: <acid_platform.compaction.CompactionOutcome.executor>` reports it.
SPARK = "spark"
_OUTCOME = "outcome"


@dataclass(frozen=True)
class SparkRewriteResult(RewriteResult):
    """A :class:`~acid_platform.compaction.RewriteResult` plus the Spark tasks that wrote
    it (host, pid, stage, partition, attempt), in the plan's task order."""

    tasks: tuple[TaskInfo, ...] = ()


@dataclass(frozen=True)
class TaskFailure:
    """An error a task hit on its data, carried to the driver.

    ``pickled`` is the exception itself when it survives pickling, so the driver raises the same
    type with the same message; otherwise ``kind`` and ``message`` describe it.
    """

    kind: str
    message: str
    pickled: bytes | None = None

    def error(self) -> Exception:
        """The exception to raise on the driver."""
        if self.pickled is not None:
            with contextlib.suppress(Exception):
                exc = pickle.loads(self.pickled)
                if isinstance(exc, Exception):
                    return exc
        return CompactionError(f"{self.kind}: {self.message}")


@dataclass(frozen=True)
class BucketOutcome:
    """What one Spark task sends back: its file (``None``: no event survived), who wrote it, or
    the error it hit."""

    index: int
    task: TaskInfo
    written: WrittenFile | None = None
    failure: TaskFailure | None = None


class SparkCompactionExecutor:
    """Writes the bucket files of a rewrite plan in Spark tasks, one task per output file.

    ``spark`` is the driver's session (local or a cluster). The worker uses it through
    :class:`~acid_platform.compaction.ExecutorRouter` — see :func:`compaction_router` —
    or for every partition when given as the worker's only executor.
    """

    name = SPARK

    def __init__(self, spark: SparkSession) -> None:
        use_driver_python(spark)  # the tasks' Python can import the project, or fail now
        self.spark = spark

    def execute(self, plan: RewritePlan) -> SparkRewriteResult:
        """Create the output directories here, write the bucket files on the executors."""
        _refuse_speculation(self.spark, plan)
        create_output_dirs(plan)
        outcomes = self._run(plan) if plan.tasks else []
        failed = [o for o in outcomes if o.failure is not None]
        if failed:
            first = failed[0]
            assert first.failure is not None
            exc = first.failure.error()
            exc.add_note(
                f"raised by Spark task {first.task.partition_id} (pid {first.task.pid} on "
                f"{first.task.host}) writing {plan.tasks[first.index].output}"
            )
            raise exc
        written = [o.written for o in outcomes if o.written is not None]
        result = finish(plan, written)
        values = {f.name: getattr(result, f.name) for f in fields(RewriteResult)}
        return SparkRewriteResult(**values, tasks=tuple(o.task for o in outcomes))

    def _run(self, plan: RewritePlan) -> list[BucketOutcome]:
        n = len(plan.tasks)
        indexes = self.spark.range(0, n, 1, numPartitions=n)
        frame = indexes.mapInArrow(
            lambda batches: _bucket_tasks(plan, batches), f"{_OUTCOME} binary"
        )
        try:
            rows = frame.collect()
        except Exception as exc:  # noqa: BLE001 - py4j and Spark Connect raise different types
            raise CompactionError(
                f"Spark job compacting {plan.request.path} ({n} bucket task(s)) failed: "
                f"{worker_error(exc).summary}"
            ) from exc
        outcomes = [pickle.loads(r[_OUTCOME]) for r in rows]
        return sorted(outcomes, key=lambda o: o.index)

    def __repr__(self) -> str:
        return f"SparkCompactionExecutor({self.spark!r})"


def compaction_router(
    spark: SparkSession | Callable[[], SparkSession],
    conf: CompactorConf | Mapping[str, str] | None = None,
    *,
    threshold_bytes: int | None = None,
) -> ExecutorRouter:
    """The worker's executors with Spark for large partitions: partitions whose selected files
    exceed ``acid.compactor.large.partition.bytes`` (from ``conf``: a
    :class:`~acid_platform.compaction.CompactorConf` or settings such as ``wh.conf``;
    ``threshold_bytes`` overrides it) are rewritten on Spark, the others in this process.
    ``spark`` may be a function returning the session: it is called (Spark started) only when a
    partition above the threshold comes (:class:`~acid_platform.compaction.executors.LazyExecutor`).

    >>> # run_worker(wh, executor=compaction_router(spark, {"acid.compactor.large.partition.bytes": "0"}))
    """
    if not isinstance(conf, CompactorConf):
        conf = CompactorConf.from_conf(conf)
    threshold = conf.large_partition_bytes if threshold_bytes is None else threshold_bytes
    large: CompactionExecutor
    if callable(spark):
        factory = spark
        large = LazyExecutor(SPARK, lambda: SparkCompactionExecutor(factory()))
    else:
        large = SparkCompactionExecutor(spark)
    return ExecutorRouter(threshold, EmbeddedExecutor(), large)


def run_bucket_task(plan: RewritePlan, index: int) -> BucketOutcome:
    """Write the plan's ``index``-th bucket file (on an executor): idempotent, so Spark may
    re-run it; an error on the data comes back in the outcome, an I/O error is raised (Spark
    retries)."""
    who = TaskInfo.current()
    task = plan.tasks[index]
    try:
        with contextlib.suppress(FileNotFoundError):  # what an earlier attempt left behind
            plan.filesystem.delete_file(task.output)
        written = run_task(plan, task)
    except Exception as exc:
        if retryable(exc):
            raise
        return BucketOutcome(index, who, failure=_failure(exc))
    return BucketOutcome(index, who, written)


# --------------------------------------------------------------------------- helpers


def _bucket_tasks(plan: RewritePlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The body of one Spark task: task indexes in, pickled outcomes out."""
    for batch in batches:
        for index in batch.column(0).to_pylist():
            outcome = run_bucket_task(plan, int(index))
            yield pa.RecordBatch.from_pydict({_OUTCOME: pa.array([pickle.dumps(outcome)])})


def retryable(exc: BaseException) -> bool:
    """I/O errors may pass (a storage hiccup); missing files and errors on the data do not."""
    permanent = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
    return isinstance(exc, OSError) and not isinstance(exc, (AcidError, *permanent))


def _failure(exc: Exception) -> TaskFailure:
    pickled: bytes | None = None
    with contextlib.suppress(Exception):
        candidate = pickle.dumps(exc)
        pickle.loads(candidate)  # some exceptions pickle but cannot be rebuilt
        pickled = candidate
    return TaskFailure(type(exc).__name__, str(exc), pickled)


def _refuse_speculation(spark: SparkSession, plan: RewritePlan) -> None:
    value = spark.conf.get("spark.speculation", "false") or "false"
    if value.strip().lower() == "true":
        raise CompactionError(
            f"cannot compact {plan.request.path} on Spark with spark.speculation=true: two "
            "attempts of a task would write the same bucket file at once; use a session "
            "without speculation for the compactor"
        )


__all__ = [
    "SPARK",
    "BucketOutcome",
    "SparkCompactionExecutor",
    "SparkRewriteResult",
    "TaskFailure",
    "compaction_router",
    "run_bucket_task",
]
