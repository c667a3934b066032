"""Where a rewrite runs: in this process, or on an engine for large partitions.

A :class:`CompactionExecutor` turns a :class:`~.rewrite.RewritePlan` into files. The plan is
decided by the worker (which files, which names, which snapshot); an executor only runs its
:class:`~.rewrite.BucketTask` values — one output bucket file each, independent of each other —
and returns a :class:`~.rewrite.RewriteResult`. A distributed executor does, on the driver,
``create_output_dirs(plan)``; on the workers, ``run_task(plan, task)`` for each task (plans and
tasks are picklable frozen dataclasses); on the driver again, ``finish(plan, written_files)``.

The worker picks the executor by the size of the partition (:class:`ExecutorRouter`): the
embedded one for small partitions, the large-partition one (Spark:
``acid_platform.engines.spark.compaction_router(spark, conf)`` builds the router) above
``acid.compactor.large.partition.bytes``.

>>> router = ExecutorRouter(threshold_bytes=1 << 30)
>>> router.choose(input_bytes=10).name
'embedded'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from acid_platform.compaction.rewrite import RewritePlan, RewriteResult, execute_plan


@runtime_checkable
class CompactionExecutor(Protocol):
    """Runs the tasks of a rewrite plan and reports what was written."""

    name: str

    def execute(self, plan: RewritePlan) -> RewriteResult:
        """Write every output file of ``plan`` (directories included)."""
        ...


class EmbeddedExecutor:
    """Runs the rewrite in this process, one bucket file after the other."""

    name = "embedded"

    def execute(self, plan: RewritePlan) -> RewriteResult:
        return execute_plan(plan)


class CallableExecutor:
    """Adapts a plain function ``plan -> RewriteResult`` to the executor interface."""

    def __init__(self, fn: Callable[[RewritePlan], RewriteResult], name: str = "callable") -> None:
        self._fn = fn
        self.name = name

    def execute(self, plan: RewritePlan) -> RewriteResult:
        return self._fn(plan)


class LazyExecutor:
    """An executor built on first use (by ``factory``): a worker that never meets a large
    partition never starts the engine behind it (e.g. a SparkSession)."""

    def __init__(self, name: str, factory: Callable[[], CompactionExecutor]) -> None:
        self.name = name
        self._factory = factory
        self._executor: CompactionExecutor | None = None

    @property
    def started(self) -> bool:
        """Whether the executor has been built."""
        return self._executor is not None

    def execute(self, plan: RewritePlan) -> RewriteResult:
        if self._executor is None:
            self._executor = self._factory()
        return self._executor.execute(plan)


ExecutorLike = CompactionExecutor | Callable[[RewritePlan], RewriteResult]


def as_executor(value: ExecutorLike) -> CompactionExecutor:
    """An executor object from an executor or a function."""
    if isinstance(value, CompactionExecutor):
        return value
    if callable(value):
        return CallableExecutor(value, getattr(value, "__name__", "callable"))
    raise TypeError(f"not a compaction executor: {value!r}")


@dataclass
class ExecutorRouter:
    """Chooses the executor for a partition by the bytes the compaction reads.

    ``large`` runs partitions of more than ``threshold_bytes``; without one, everything runs
    embedded.
    """

    threshold_bytes: int = 1 << 30
    small: CompactionExecutor = field(default_factory=EmbeddedExecutor)
    large: CompactionExecutor | None = None

    def choose(self, input_bytes: int) -> CompactionExecutor:
        if self.large is not None and input_bytes > self.threshold_bytes:
            return self.large
        return self.small
