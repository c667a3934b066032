"""Thousands of partitions (issue 34): a statement costs what its partitions cost.

TPC-DS ``store_sales`` unpartitioned and partitioned by ``ss_sold_date_sk`` (1,823 days and
the NULL day), the same HiveQL statements on both in one run, interleaved round by round:

* load — one ``INSERT … SELECT`` of every row from an unpartitioned staging table (a fresh
  table each round);
* a DELETE of three days (other days each round);
* the data-maintenance DELETE: ``… WHERE ss_sold_date_sk IN (SELECT … FROM days WHERE …)``, a
  date dimension's keys for three other days (``days`` stands in for ``date_dim``);
* a full scan (``count(*)``, ``sum(ss_net_paid)``) and the same scan of one day.

Goals (partitioned ÷ unpartitioned): load ≤ 2x, DELETE of a few days ≤ 1.2x, DM DELETE ≤ 1.5x,
full scan ≤ 1.5x; a scan of one day ≤ 0.1x of the full scan.

Then the metastore with ``--partitions`` (100,000) partitions registered in one table, on
SQLite and PostgreSQL: ``SHOW PARTITIONS``, an initiator tick, and a one-row INSERT into one
partition by a fresh session (which knows none of the table's partitions).

    python -m benchmarks.bench_partitions [--scale 1] [--runs 3] [--partitions 100000]
        [--backends sqlite,postgresql] [--load-runs N] [--skip-tpcds]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from acid_platform import Warehouse
from acid_platform.compaction import Initiator
from benchmarks.common import Timing, interleaved, median_ratio, median_timing
from benchmarks.data import store_sales

OUT = Path(__file__).resolve().parent / "out"
GOALS = {"load": 2.0, "delete_days": 1.2, "dm_delete": 1.5, "full_scan": 1.5}
TRANSACTIONAL = "STORED AS ORC TBLPROPERTIES ('transactional'='true')"


def _columns(rows: pa.Table) -> str:
    types = {pa.int32(): "INT", pa.int64(): "BIGINT"}
    out = []
    for f in rows.schema:
        if pa.types.is_decimal(f.type):
            out.append(f"{f.name} DECIMAL({f.type.precision},{f.type.scale})")
        else:
            out.append(f"{f.name} {types.get(f.type, 'BIGINT')}")
    return ", ".join(out)


class Store:
    """One warehouse with the staging table and the day keys; a table per layout and round."""

    def __init__(self, root: Path, rows: pa.Table) -> None:
        self.wh = Warehouse.open(root)
        self.rows = rows
        self.cols = [f.name for f in rows.schema]
        self.data_cols = [c for c in self.cols if c != "ss_sold_date_sk"]
        self.wh.sql(f"CREATE TABLE staging ({_columns(rows)}) {TRANSACTIONAL}")
        self.wh.table("staging").insert(rows)
        days = pc.unique(rows.column("ss_sold_date_sk")).drop_null().to_pylist()
        self.days = sorted(days)
        self.wh.sql(f"CREATE TABLE days (d_date_sk INT, d_round INT) {TRANSACTIONAL}")
        self.loads = 0

    def create(self, layout: str) -> str:
        self.loads += 1
        name = f"ss_{layout}_{self.loads}"
        data = ", ".join(
            f"{c} {t}"
            for c, t in (x.split(" ", 1) for x in _columns(self.rows).split(", "))
            if layout == "u" or c != "ss_sold_date_sk"
        )
        part = " PARTITIONED BY (ss_sold_date_sk INT)" if layout == "p" else ""
        self.wh.sql(f"CREATE TABLE {name} ({data}){part} {TRANSACTIONAL}")
        return name

    def load(self, name: str, layout: str) -> None:
        if layout == "p":
            cols = ", ".join([*self.data_cols, "ss_sold_date_sk"])
            self.wh.sql(
                f"INSERT INTO {name} PARTITION (ss_sold_date_sk) SELECT {cols} FROM staging"
            )
        else:
            self.wh.sql(f"INSERT INTO {name} SELECT {', '.join(self.cols)} FROM staging")


def tpcds(scale: float, runs: int, tmp: Path, load_runs: int | None = None) -> dict[str, Any]:
    load_runs = runs if load_runs is None else load_runs
    rows = store_sales(scale)
    rows = rows.set_column(
        rows.schema.get_field_index("ss_sold_date_sk"),
        "ss_sold_date_sk",
        rows.column("ss_sold_date_sk").cast(pa.int32()),
    )
    store = Store(tmp / "wh", rows)
    wh = store.wh
    loaded: dict[str, str] = {}

    def load(layout: str) -> Callable[[str], None]:
        def run(name: str) -> None:
            store.load(name, layout)
            loaded[layout] = name

        return run

    timings: dict[str, dict[str, list[Timing]]] = {}
    timings["load"] = {}
    for _ in range(load_runs):  # a fresh table each round, created untimed
        for layout in ("u", "p"):
            one = interleaved({layout: load(layout)}, 1, lambda layout=layout: store.create(layout))
            timings["load"].setdefault(layout, []).extend(one[layout])
    busy = [d for d in store.days if d % 7 == 0]  # days well apart, each with rows
    rounds = iter(range(10_000))

    def delete_days(layout: str) -> Callable[[], None]:
        def run() -> None:
            r = next(rounds)
            days = ", ".join(str(d) for d in busy[3 * r : 3 * r + 3])
            wh.sql(f"DELETE FROM {loaded[layout]} WHERE ss_sold_date_sk IN ({days})")

        return run

    def dm_delete(layout: str) -> Callable[[], None]:
        def run() -> None:
            r = next(rounds)
            days = busy[3 * r : 3 * r + 3]
            values = ", ".join(f"({d}, {r})" for d in days)
            wh.sql(f"INSERT INTO days VALUES {values}")
            wh.sql(
                f"DELETE FROM {loaded[layout]} WHERE ss_sold_date_sk IN "
                f"(SELECT d_date_sk FROM days WHERE d_round = {r})"
            )

        return run

    def scan(layout: str, where: str = "") -> Callable[[], None]:
        def run() -> None:
            wh.sql(f"SELECT count(*), sum(ss_net_paid) FROM {loaded[layout]} {where}")

        return run

    one_day = f"WHERE ss_sold_date_sk = {busy[-1]}"
    timings["delete_days"] = interleaved({k: delete_days(k) for k in ("u", "p")}, runs)
    timings["dm_delete"] = interleaved({k: dm_delete(k) for k in ("u", "p")}, runs)
    timings["full_scan"] = interleaved({k: scan(k) for k in ("u", "p")}, runs)
    timings["day_scan"] = interleaved({"p": scan("p", one_day), "u": scan("u", one_day)}, runs)
    out: dict[str, Any] = {
        "rows": rows.num_rows,
        "partitions": len(wh.list_partitions(loaded["p"])),
    }
    for what, series in timings.items():
        out[what] = {
            "unpartitioned_s": median_timing(series["u"]).wall_s,
            "partitioned_s": median_timing(series["p"]).wall_s,
            "ratio": median_ratio(series["p"], series["u"]),
        }
    out["day_scan"]["of_full_scan"] = median_ratio(
        timings["day_scan"]["p"], timings["full_scan"]["p"]
    )
    wh.close()
    return out


def metastore(backend: str, partitions: int, runs: int, tmp: Path) -> dict[str, float]:
    from benchmarks.bench_metastore import namespace

    url, cleanup = namespace(backend, tmp)
    root = tmp / f"wh_{backend}"
    try:
        wh = Warehouse.open(root, url)
        t = wh.create_table("many", [("id", "bigint")], partition_columns=[("d", "int")])
        t0 = time.perf_counter()
        wh.metastore.add_partitions("default", "many", [f"d={i}" for i in range(partitions)])
        register = time.perf_counter() - t0
        t.insert(pa.table({"id": pa.array([0], pa.int64()), "d": [0]}))
        wh.close()
        show, tick, insert = [], [], []
        for r in range(runs):
            fresh = Warehouse.open(root, url)  # a new session: it knows no partition yet
            try:
                t0 = time.perf_counter()
                listed = fresh.sql("SHOW PARTITIONS many")
                show.append(time.perf_counter() - t0)
                assert listed.num_rows == partitions
                t0 = time.perf_counter()
                Initiator(fresh).run()
                tick.append(time.perf_counter() - t0)
                row = pa.table({"id": pa.array([r + 1], pa.int64()), "d": [partitions // 2 + r]})
                t0 = time.perf_counter()
                fresh.table("many").insert(row)
                insert.append(time.perf_counter() - t0)
            finally:
                fresh.close()
        return {
            "register_all_s": register,
            "show_partitions_s": statistics.median(show),
            "initiator_tick_s": statistics.median(tick),
            "one_partition_insert_s": statistics.median(insert),
        }
    finally:
        cleanup()


def report(result: dict[str, Any]) -> str:
    t = result["tpcds"]
    lines = [
        f"store_sales SF{result['scale']:g}: {t['rows']:,} rows; partitioned: "
        f"{t['partitions']:,} partitions. Medians of {result['runs']} interleaved rounds.",
        "",
        "| statement | unpartitioned | partitioned | ratio | goal |",
        "|---|---|---|---|---|",
    ]
    names = {
        "load": "load (INSERT … SELECT)",
        "delete_days": "DELETE of 3 days",
        "dm_delete": "DM DELETE … IN (subquery)",
        "full_scan": "full scan",
        "day_scan": "scan of one day",
    }
    for key, label in names.items():
        row = t[key]
        goal = f"≤ {GOALS[key]}x" if key in GOALS else ""
        lines.append(
            f"| {label} | {row['unpartitioned_s']:.3f} s | {row['partitioned_s']:.3f} s | "
            f"{row['ratio']:.2f}x | {goal} |"
        )
    lines.append(
        f"| one day ÷ full scan (partitioned) | | | {t['day_scan']['of_full_scan']:.3f}x | ≤ 0.1x |"
    )
    lines += [
        "",
        f"Metastore, {result['partitions']:,} partitions in one table (a fresh session each):",
        "",
        "| backend | register all (one write) | SHOW PARTITIONS | initiator tick | "
        "one-partition INSERT |",
        "|---|---|---|---|---|",
    ]
    for backend, m in result["metastore"].items():
        lines.append(
            f"| {backend} | {m['register_all_s']:.2f} s | {m['show_partitions_s']:.3f} s | "
            f"{m['initiator_tick_s']:.3f} s | {m['one_partition_insert_s']:.3f} s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--load-runs", type=int, default=None, help="default: --runs")
    parser.add_argument("--skip-tpcds", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT / "partitions.json")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "scale": args.scale,
        "runs": args.runs,
        "partitions": args.partitions,
        "metastore": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            result["metastore"][backend] = metastore(backend, args.partitions, args.runs, Path(tmp))
            print(backend, result["metastore"][backend], flush=True)
        if not args.skip_tpcds:
            result["tpcds"] = tpcds(args.scale, args.runs, Path(tmp), args.load_runs)
            print(json.dumps(result["tpcds"], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    if "tpcds" in result:
        print(report(result))


if __name__ == "__main__":
    main()
