"""Spark path speed (issue 4) on TPC-DS store_sales: the ``acid`` data source and Spark DML
against native Spark on plain ORC, in the same run and the same SparkSession. Medians of several
runs. Writes ``benchmarks/out/spark.json`` and a Markdown section for the report.

    python -m benchmarks.bench_spark [--scale 1] [--runs 3] [--cores 2] [--cluster N]

``--cluster N`` runs the same measures on a standalone cluster on loopback (a master and ``N``
workers of one core each, :class:`~acid_platform.engines.spark.cluster.LocalCluster`) instead
of ``local[cores]``: executors in their own JVMs, reading and writing the same warehouse.

* load: ``df.write.format("acid")`` (one transaction, 4 tasks) vs ``df.write.orc`` (4 files);
* full scan: every row and column through the data source vs Spark's ORC reader on the same
  rows as plain ORC (both into Spark's ``noop`` sink, so rows are materialised), on a fresh
  ``load()`` and again as later queries on one loaded DataFrame (each query's tasks take its
  snapshot), the three interleaved a round at a time (as is each pair below);
* UPDATE 0.1% of rows, DELETE 1%, MERGE of a 3% source (half updates, half inserts) with
  :class:`~acid_platform.engines.spark.SparkEngine` vs "native": read the plain ORC table,
  apply the change with DataFrame operations, write the whole table again (what a Spark job
  does without ACID). Each DML run changes a fresh slice of rows.

Both tables use SNAPPY (``orc.compress=SNAPPY`` for the ACID table, Hive 3 reads it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"
DATA = Path(__file__).resolve().parent / "data"
KEYS = ("ss_item_sk", "ss_ticket_number")
TASKS = 4


def median_time(fn: Callable[[int], Any], runs: int, first: int = 0) -> tuple[float, list[float]]:
    """Median wall time of ``fn(run_index)`` (run indexes from ``first``), and every time
    (progress on stderr)."""
    times = []
    for i in range(first, first + runs):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
        print(f"  {fn.__name__} run {i}: {times[-1]:.2f} s", file=sys.stderr, flush=True)
    return statistics.median(times), times


class NativeRewrite:
    """The native way to change plain ORC at ``path``: write the whole changed table beside
    it, then swap it in."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.version = 0

    def __call__(self, frame: Any) -> None:
        self.version += 1
        target = f"{self.path}_v{self.version}"
        frame.write.mode("overwrite").orc(target)
        shutil.rmtree(self.path, ignore_errors=True)
        os.rename(target, self.path)


def interleaved(fns: list[Callable[[int], Any]], runs: int) -> list[list[float]]:
    """Wall times of ``runs`` rounds, each running every one of ``fns`` once, in order."""
    times: list[list[float]] = [[] for _ in fns]
    for i in range(runs):
        for fn, out in zip(fns, times, strict=True):
            out.append(median_time(fn, 1, first=i)[0])
    return times


def run(scale: float, runs: int, cores: int, cluster: int = 0) -> dict[str, Any]:
    from acid_platform.engines.spark.cluster import LocalCluster

    if not cluster:
        return _run(scale, runs, cores, None)
    with LocalCluster(workers=cluster, cores=1, memory="3g") as lc:
        return _run(scale, runs, cluster, lc)


def _run(scale: float, runs: int, cores: int, lc: Any) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812

    from acid_platform import Warehouse
    from acid_platform.engines.spark import SparkEngine
    from benchmarks.common import local_spark
    from benchmarks.data import store_sales

    rows = store_sales(scale)
    parquet = DATA / f"store_sales_sf{scale:g}.parquet"
    conf = {
        "spark.driver.memory": "6g",
        "spark.sql.shuffle.partitions": str(TASKS),
        "spark.sql.orc.compression.codec": "snappy",
    }
    if lc is None:
        spark = local_spark("bench_spark", cores, **conf)
    else:
        spark = lc.session("bench_spark", **{**conf, "spark.executor.memory": "2g"})
        spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="acid-bench-spark-"))
    results: dict[str, Any] = {
        "rows": rows.num_rows,
        "columns": rows.num_columns,
        "runs": runs,
        "cores": cores,
        "codec": "SNAPPY",
        "spark": spark.version,
        "master": f"standalone cluster, {cores} workers x 1 core" if lc else f"local[{cores}]",
    }
    try:
        wh = Warehouse.open(work / "wh")
        wh.register_spark(spark)
        engine = SparkEngine(spark)
        table = wh.create_table("store_sales", rows.schema, properties={"orc.compress": "SNAPPY"})
        source = spark.read.parquet(str(parquet)).repartition(TASKS).cache()
        source.count()
        plain = str(work / "plain_orc")

        # ---------------------------------------------------------------- load
        def load_acid(i: int) -> None:
            source.write.format("acid").mode("overwrite").save("store_sales")

        def load_native(i: int) -> None:
            source.write.mode("overwrite").orc(plain)

        acid_loads, native_loads = interleaved([load_acid, load_native], runs)
        acid_load, native_load = statistics.median(acid_loads), statistics.median(native_loads)
        results["load"] = {
            "acid_datasource_s": acid_load,
            "native_orc_s": native_load,
            "ratio": acid_load / native_load,
            "all_s": {"acid": acid_loads, "native": native_loads},
        }
        source.unpersist()

        # ---------------------------------------------------------------- full scan
        def scan_acid(i: int) -> None:
            spark.read.format("acid").load("store_sales").write.format("noop").mode(
                "overwrite"
            ).save()

        def scan_native(i: int) -> None:
            spark.read.orc(plain).write.format("noop").mode("overwrite").save()

        loaded = spark.read.format("acid").load("store_sales")

        def scan_acid_loaded(i: int) -> None:
            """Another query on one loaded DataFrame (its snapshot taken by the query's tasks)."""
            loaded.write.format("noop").mode("overwrite").save()

        scan_acid(0)  # warm the Python workers once, as the native reader is warm in the JVM
        # interleaved, a round of each at a time: warm-up and drift fall on all three alike
        acid_scans, loaded_scans, native_scans = interleaved(
            [scan_acid, scan_acid_loaded, scan_native], runs
        )
        acid_scan, loaded_scan, native_scan = (
            statistics.median(t) for t in (acid_scans, loaded_scans, native_scans)
        )
        count_filter = loaded.where("ss_ticket_number < 2400").count()
        results["full_scan"] = {
            "acid_datasource_s": acid_scan,
            "native_orc_s": native_scan,
            "ratio": acid_scan / native_scan,
            "loaded_dataframe_s": loaded_scan,
            "loaded_ratio": loaded_scan / native_scan,
            "splits": loaded.rdd.getNumPartitions(),
            "rows_with_filter": count_filter,
            "all_s": {"acid": acid_scans, "loaded": loaded_scans, "native": native_scans},
        }

        # ---------------------------------------------------------------- DML
        rewrite = NativeRewrite(plain)

        def update_acid(i: int) -> None:
            out = engine.update(
                table, {"ss_quantity": "ss_quantity + 1"}, f"ss_ticket_number % 1000 = {i}"
            )
            results.setdefault("update_rows", []).append(out.rows_updated)

        def update_native(i: int) -> None:
            df = spark.read.orc(plain)
            hit = F.col("ss_ticket_number") % 1000 == i
            rewrite(
                df.withColumn(
                    "ss_quantity",
                    F.when(hit, F.col("ss_quantity") + 1).otherwise(F.col("ss_quantity")),
                )
            )

        def delete_acid(i: int) -> None:
            out = engine.delete(table, f"ss_ticket_number % 100 = {10 + i}")
            results.setdefault("delete_rows", []).append(out.rows_deleted)

        def delete_native(i: int) -> None:
            df = spark.read.orc(plain)
            rewrite(df.where(~(F.col("ss_ticket_number") % 100 == 10 + i)))

        def merge_source(i: int, frame: Any) -> Any:
            """3%: 1.5% of rows changed (same keys), 1.5% new keys."""
            slice_ = frame.where(
                (F.col("ss_ticket_number") % 200).isin(60 + 3 * i, 61 + 3 * i, 62 + 3 * i)
            )
            changed = slice_.withColumn("ss_quantity", F.col("ss_quantity") + 1000)
            new = slice_.withColumn(
                "ss_ticket_number", F.col("ss_ticket_number") + 10_000_000 * (i + 1)
            )
            return changed.unionByName(new)

        def merge_acid(i: int) -> None:
            src = merge_source(i, spark.read.orc(plain_snapshot))
            out = (
                engine.merge(table, src, " AND ".join(f"t.{k} = s.{k}" for k in KEYS))
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
            results.setdefault("merge_rows", []).append([out.rows_updated, out.rows_inserted])

        def merge_native(i: int) -> None:
            df = spark.read.orc(plain)
            src = merge_source(i, spark.read.orc(plain_snapshot))
            rewrite(df.join(src.select(*KEYS), list(KEYS), "left_anti").unionByName(src))

        # the merge source is cut from a frozen copy, so both sides see the same source rows
        plain_snapshot = str(work / "plain_snapshot")
        shutil.copytree(plain, plain_snapshot)
        for name, acid_fn, native_fn in (
            ("update_0_1pct", update_acid, update_native),
            ("delete_1pct", delete_acid, delete_native),
            ("merge_3pct", merge_acid, merge_native),
        ):
            acid_all, native_all = interleaved([acid_fn, native_fn], runs)
            acid_s, native_s = statistics.median(acid_all), statistics.median(native_all)
            results[name] = {
                "acid_spark_s": acid_s,
                "native_rewrite_s": native_s,
                "ratio": acid_s / native_s,
                "all_s": {"acid": acid_all, "native": native_all},
            }
        after = spark.read.format("acid").load("store_sales").count()
        native_after = spark.read.orc(plain).count()
        results["rows_after"] = {"acid": after, "native": native_after}
        wh.close()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def markdown(r: dict[str, Any]) -> str:
    load, scan = r["load"], r["full_scan"]
    lines = [
        f"## Spark path (issue 4) — store_sales, {r['rows']:,} rows × {r['columns']} columns, "
        f"Spark {r['spark']} {r.get('master', 'local[' + str(r['cores']) + ']')}, {r['codec']}, "
        f"median of {r['runs']}",
        "",
        "| measure | acid_platform on Spark | native Spark, plain ORC | ratio | goal |",
        "|---|---|---|---|---|",
        f"| load (one INSERT, {TASKS} tasks) | {load['acid_datasource_s']:.2f} s | write ORC {load['native_orc_s']:.2f} s | {load['ratio']:.2f}x | |",
        f"| full scan, all columns ({scan['splits']} splits) | {scan['acid_datasource_s']:.2f} s | ORC scan {scan['native_orc_s']:.2f} s | {scan['ratio']:.2f}x | ≤ 1.2x |",
        f"| the same scan, again on one loaded DataFrame | {scan['loaded_dataframe_s']:.2f} s | ORC scan {scan['native_orc_s']:.2f} s | {scan['loaded_ratio']:.2f}x | ≤ 1.2x |",
    ]
    for key, label in (
        ("update_0_1pct", "UPDATE 0.1% of rows"),
        ("delete_1pct", "DELETE 1% of rows"),
        ("merge_3pct", "MERGE 3% source (½ update, ½ insert)"),
    ):
        m = r[key]
        lines.append(
            f"| {label} | {m['acid_spark_s']:.2f} s | rewrite table {m['native_rewrite_s']:.2f} s | {m['ratio']:.2f}x | |"
        )
    lines += [
        "",
        f"Rows changed per run: UPDATE {r.get('update_rows')}, DELETE {r.get('delete_rows')}, "
        f"MERGE [updated, inserted] {r.get('merge_rows')}; rows after: {r['rows_after']}. "
        "DML on Spark writes only delta / delete_delta files (merge-on-read); the native rewrite "
        "writes the whole table. Scans run after the load, before the DML; every pair (and the three scans) interleaved, a round of each at a time.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--cluster", type=int, default=0, help="workers of a standalone cluster")
    args = ap.parse_args()
    r = run(args.scale, args.runs, args.cores, args.cluster)
    OUT.mkdir(parents=True, exist_ok=True)
    name = "spark_cluster" if args.cluster else "spark"
    (OUT / f"{name}.json").write_text(json.dumps(r, indent=2))
    (OUT / f"{name}.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
