"""Maintenance speed (issue 10): one compaction-sensor tick over 100 tables and 1,000 partitions.

Every partition has a committed write (one INSERT per table into its 10 partitions), so the
initiator judges all 1,000 (metastore state and one directory listing each); none needs a
compaction, so the tick requests nothing. Reported: the median tick with the initiator (what a
tick costs every ``hive.compactor.check.interval``) and without it (every other tick: the queue
only). Goal (issue 10): under 1 s. Writes ``benchmarks/out/maintenance.md``.

    python -m benchmarks.bench_maintenance [--tables 100] [--partitions 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from dagster import build_sensor_context, instance_for_test

from acid_platform import Warehouse
from acid_platform.orchestration import AcidWarehouseResource, compaction_sensor
from benchmarks.common import median_time

OUT = Path(__file__).resolve().parent / "out"


def tick_seconds(root: str, conf: dict[str, str], runs: int) -> float:
    resource = AcidWarehouseResource(warehouse=root, conf=conf)
    sensor = compaction_sensor()
    with instance_for_test() as instance:

        def tick() -> None:
            with build_sensor_context(
                instance=instance, resources={"acid_warehouse": resource}
            ) as context:
                assert not sensor(context).run_requests  # type: ignore[union-attr]

        return median_time(tick, runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Warehouse.open(tmp) as wh:
        for i in range(args.tables):
            table = wh.create_table(f"t{i}", [("id", "int")], partition_columns=[("p", "string")])
            table.insert([{"id": j, "p": f"v{j}"} for j in range(args.partitions)])
        with_initiator = tick_seconds(wh.root, {"hive.compactor.check.interval": "0"}, args.runs)
        queue_only = tick_seconds(wh.root, {"hive.compactor.initiator.on": "false"}, args.runs)
    parts = args.tables * args.partitions
    text = "\n".join(
        [
            "## Maintenance: compaction-sensor tick",
            "",
            f"{args.tables} tables, {parts} partitions with uncompacted writes (SQLite "
            f"metastore); median of {args.runs} ticks. Goal: under 1 s.",
            "",
            "| tick | seconds |",
            "|---|---|",
            f"| initiator + queue (every hive.compactor.check.interval) | {with_initiator:.3f} |",
            f"| queue only (other ticks) | {queue_only:.3f} |",
            "",
        ]
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "maintenance.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
