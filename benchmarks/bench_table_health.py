"""The Dagster output's table metadata after a one-partition write into a table of many
partitions (issue 34): ``orchestration.health.table_health`` now (the statistics the commits
keep, ``metastore.partition_stats``, in one query) against the recount it replaced (the sums of
``compaction.health.partition_layouts``: a snapshot, one listing per partition directory and
every visible file's footer), on the same table, round by round.

The table: ``(id BIGINT, v INT) PARTITIONED BY (d INT)``, ``--partitions`` partitions of 3 rows
written by one INSERT, then one more single-row INSERT into one partition (the write whose
metadata is timed). Medians of ``--runs``.

    python -m benchmarks.bench_table_health [--partitions 1000] [--runs 5] [--url URL]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from acid_platform import Warehouse
from acid_platform.compaction.health import partition_layouts
from acid_platform.orchestration.health import table_health


def _rows(partitions: int) -> pa.Table:
    ids = list(range(partitions * 3))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([i % 3 for i in ids], pa.int32()),
            "d": pa.array([i // 3 for i in ids], pa.int32()),
        }
    )


def run(partitions: int, runs: int, url: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, Warehouse.open(Path(tmp) / "wh", url) as wh:
        wh.sql(
            "CREATE TABLE t (id BIGINT, v INT) PARTITIONED BY (d INT) STORED AS ORC "
            "TBLPROPERTIES ('transactional'='true')"
        )
        wh.table("t").insert(_rows(partitions))
        times: dict[str, list[float]] = {"kept statistics": [], "recount (before)": []}
        for i in range(runs):
            wh.sql(f"INSERT INTO t VALUES ({10_000_000 + i}, 0, 7)")
            table = wh.table("t")
            started = time.perf_counter()
            health = table_health(table, ["d=7"])
            times["kept statistics"].append(time.perf_counter() - started)
            started = time.perf_counter()
            layouts = partition_layouts(table)
            times["recount (before)"].append(time.perf_counter() - started)
            assert health.rows == sum(p.live_rows or 0 for p in layouts)
        return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--url", default=None, help="metastore URL (default: SQLite)")
    args = parser.parse_args(argv)
    result = run(args.partitions, args.runs, args.url)
    for what, seconds in result.items():
        print(f"{what}: {seconds * 1000:.1f} ms")
    print(f"ratio: {result['recount (before)'] / result['kept statistics']:.0f}x")


if __name__ == "__main__":
    main()
