"""Splits of small files combined into tasks of a sensible size, as Spark's
``FilePartition.getFilePartitions`` (``spark.sql.files.maxPartitionBytes``,
``spark.sql.files.openCostInBytes``) and Hive's ``CombineHiveInputFormat`` do: a scan of 1,800
one-day partitions of a few hundred kilobytes each is a handful of tasks, not 1,800.

Each :class:`~acid_platform.table.scan.ScanTask` (one bucket of one partition) costs its bytes
plus an *open cost*, what opening its files costs as if it were that many more bytes. Tasks are
packed largest first into groups of at most the *split size*: ``max_bytes``, lowered to the
table's bytes per ``parallelism`` slot (not below the open cost) so that a small scan still
keeps every slot busy. A task larger than the split size is a group of its own (a split is
never cut: its delete events are merged per bucket).

>>> from acid_platform.format import ReadSplit
>>> from acid_platform.table.scan import ScanTask
>>> tasks = [ScanTask(ReadSplit(0, (), size=n), i, ()) for i, n in enumerate([50, 10, 60, 5])]
>>> [[t.partition for t in g] for g in combine_tasks(tasks, max_bytes=80, open_cost=4)]
[[2], [0, 1, 3]]
"""

from __future__ import annotations

from collections.abc import Sequence

from acid_platform.table.scan import ScanTask

#: ``spark.sql.files.maxPartitionBytes``' default: the most bytes one combined task reads.
MAX_TASK_BYTES = 128 << 20
#: ``spark.sql.files.openCostInBytes``' default: opening a task's files, counted as bytes.
OPEN_COST_BYTES = 4 << 20


def combine_tasks(
    tasks: Sequence[ScanTask],
    *,
    max_bytes: int = MAX_TASK_BYTES,
    open_cost: int = OPEN_COST_BYTES,
    parallelism: int = 1,
) -> list[tuple[ScanTask, ...]]:
    """``tasks`` packed into groups (see module docs), each group in planning order; groups
    largest task first."""
    if not tasks:
        return []
    total = sum(t.split.size + open_cost for t in tasks)
    split_bytes = min(max_bytes, max(open_cost, total // max(parallelism, 1)))
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].split.size)
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in order:
        task_bytes = tasks[i].split.size
        if current and size + task_bytes > split_bytes:
            groups.append(current)
            current, size = [], 0
        current.append(i)
        size += task_bytes + open_cost
    groups.append(current)
    return [tuple(tasks[i] for i in sorted(group)) for group in groups]


__all__ = ["MAX_TASK_BYTES", "OPEN_COST_BYTES", "combine_tasks"]
