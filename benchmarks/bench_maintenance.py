"""Maintenance speed (issue 10): one compaction-sensor tick over 100 tables and 1,000 partitions.

Every partition has a committed write (one INSERT per table into its 10 partitions), so the
initiator judges all 1,000 (metastore state and one directory listing each; checked before
timing). Three ticks are timed, each the sensor's evaluation on a real (temporary) Dagster
instance, as the daemon runs it:

* initiator + queue, nothing to compact: none of the partitions needs a compaction, so the tick
  requests nothing (what a tick costs every ``hive.compactor.check.interval``);
* queue only (every other tick): the initiator does not run;
* initiator + queue with compactions to request: the 10 partitions of ``--hot`` tables (10 by
  default: 100 partitions) hold a second delta over a per-table delta threshold of 1
  (``compactorthreshold.hive.compactor.delta.num.threshold``), so the tick queues 100
  compactions and requests 100 runs. Each of these ticks runs on a fresh warehouse (built
  untimed).

Goal (issue 10): under 1 s. Medians of ``--runs``, wall and process CPU seconds. Writes
``benchmarks/out/maintenance.md``.

    python -m benchmarks.bench_maintenance [--tables 100] [--partitions 10] [--hot 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from dagster import DagsterInstance, SensorResult, build_sensor_context, instance_for_test

from acid_platform import Warehouse
from acid_platform.compaction import Initiator
from acid_platform.orchestration import AcidWarehouseResource, compaction_sensor
from benchmarks.common import Timing, timed

OUT = Path(__file__).resolve().parent / "out"
#: The initiator runs on every tick.
EVERY_TICK = {"hive.compactor.check.interval": "0"}
HOT = {"compactorthreshold.hive.compactor.delta.num.threshold": "1"}
GOAL_S = 1.0


def build(root: str, tables: int, partitions: int, hot: int) -> None:
    """``tables`` tables of ``partitions`` partitions, one INSERT each; the first ``hot`` tables
    get a second INSERT over their delta threshold of 1."""
    with Warehouse.open(root) as wh:
        for i in range(tables):
            table = wh.create_table(
                f"t{i}",
                [("id", "int")],
                partition_columns=[("p", "string")],
                properties=HOT if i < hot else None,
            )
            rows = [{"id": j, "p": f"v{j}"} for j in range(partitions)]
            table.insert(rows)
            if i < hot:
                table.insert(rows)


def tick(instance: DagsterInstance, root: str, conf: dict[str, str]) -> SensorResult:
    """One evaluation of the compaction sensor on the warehouse at ``root``."""
    resource = AcidWarehouseResource(warehouse=root, conf=conf)
    sensor = compaction_sensor()
    with build_sensor_context(instance=instance, resources={"acid_warehouse": resource}) as ctx:
        result = sensor(ctx)
    assert isinstance(result, SensorResult)
    return result


def quiet_ticks(instance: DagsterInstance, root: str, conf: dict[str, str], runs: int) -> Timing:
    def run(_: object) -> None:
        assert not tick(instance, root, conf).run_requests

    return timed(run, runs, lambda: None)


def requesting_ticks(instance: DagsterInstance, args: argparse.Namespace) -> Timing:
    roots: list[str] = []
    want = args.hot * args.partitions

    def setup() -> str:
        root = tempfile.mkdtemp(prefix="acid-bench-maint-")
        roots.append(root)
        build(root, args.tables, args.partitions, args.hot)
        return root

    def run(root: str) -> None:
        requests = tick(instance, root, EVERY_TICK).run_requests or []
        assert len(requests) == want, len(requests)

    try:
        return timed(run, args.runs, setup)
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--hot", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    parts = args.tables * args.partitions
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, instance_for_test() as instance:
        build(tmp, args.tables, args.partitions, 0)
        with Warehouse.open(tmp) as wh:
            judged = Initiator(wh).run()
        assert len(judged) == parts and not any(d.type for d in judged), len(judged)
        with_initiator = quiet_ticks(instance, tmp, EVERY_TICK, args.runs)
        queue_only = quiet_ticks(instance, tmp, {"hive.compactor.initiator.on": "false"}, args.runs)
        requesting = requesting_ticks(instance, args)
    load1 = os.getloadavg()

    def line(what: str, t: Timing) -> str:
        met = "met" if t.wall_s < GOAL_S else "not met"
        return f"| {what} | {t.wall_s:.3f} | {t.cpu_s:.3f} | {met} |"

    text = "\n".join(
        [
            "## Maintenance: compaction-sensor tick",
            "",
            f"{args.tables} tables, {parts} partitions with uncompacted writes (SQLite "
            f"metastore); the sensor's evaluation on a temporary Dagster instance; median of "
            f"{args.runs} ticks, wall and process CPU seconds. Goal: under {GOAL_S:g} s. 2 CPUs, "
            f"load average {load0[0]:.1f} at start, {load1[0]:.1f} at end.",
            "",
            "| tick | wall s | CPU s | goal |",
            "|---|---|---|---|",
            line(
                f"initiator judges {parts} partitions, none to compact "
                "(every hive.compactor.check.interval)",
                with_initiator,
            ),
            line("queue only (other ticks)", queue_only),
            line(
                f"initiator queues {args.hot * args.partitions} compactions ({args.hot} tables "
                f"× {args.partitions} partitions over their delta threshold) and the sensor "
                f"requests {args.hot * args.partitions} runs",
                requesting,
            ),
            "",
        ]
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "maintenance.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
