"""Splits of small files combined into tasks of a sensible size (issue 34 item 3): a scan of
many small partitions is a few tasks, each split in exactly one, as Spark's
maxPartitionBytes / openCostInBytes rule packs files."""

from __future__ import annotations

import pyarrow as pa

from acid_platform import Warehouse
from acid_platform.table.scan import read_task
from acid_platform.table.scan_combine import combine_tasks


def _day_table(wh: Warehouse, days: int) -> None:
    wh.create_table("t", [("id", "bigint")], partition_columns=[("d", "int")])
    ids = list(range(days * 10))
    wh.table("t").insert(pa.table({"id": pa.array(ids, pa.int64()), "d": [i // 10 for i in ids]}))


def test_small_splits_are_combined_and_each_is_read_once(wh: Warehouse) -> None:
    _day_table(wh, 200)
    with wh.table("t").scan() as scan:
        tasks = scan.split_tasks()
        assert len(tasks) == 200
        groups = combine_tasks(tasks, parallelism=4)
        # 200 splits of a few hundred bytes, each counted with its 4 MiB open cost: a task
        # takes at most 128 MiB of that (below the 200 MiB a slot would get), 32 splits
        assert len(groups) == 7, [len(g) for g in groups]
        assert sorted(len(g) for g in groups) == [8, 32, 32, 32, 32, 32, 32]
        assert sorted(t.partition for g in groups for t in g) == list(range(200))
        spec, fs = scan.spec, scan.location.filesystem
        ids = [
            i
            for g in groups
            for task in g
            for b in read_task(task, spec, fs, scan.snapshot.write_ids, ["id", "d"])
            for i in b.column("id").to_pylist()
        ]
    assert sorted(ids) == list(range(2000))


def test_a_split_larger_than_a_task_stays_whole_and_alone(wh: Warehouse) -> None:
    _day_table(wh, 3)
    with wh.table("t").scan() as scan:
        tasks = scan.split_tasks()
    sizes = [t.split.size for t in tasks]
    assert all(s > 100 for s in sizes)
    groups = combine_tasks(tasks, max_bytes=100, open_cost=1, parallelism=1)
    assert sorted(len(g) for g in groups) == [1, 1, 1]
    together = combine_tasks(tasks, max_bytes=sum(sizes) + 3, open_cost=1, parallelism=1)
    assert [len(g) for g in together] == [3]
    assert combine_tasks([]) == []
