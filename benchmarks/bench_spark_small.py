"""Small Spark jobs (issue 12): session start to first result, as a new user meets them.

Each measure runs in a fresh Python process started with this interpreter by path, with no
``PYSPARK_PYTHON`` set (the venv's Python workers are picked by registration), on local[2]:

* ``insert10`` — ``df.write.format("acid")`` of 10 rows into an empty table;
* ``merge2`` — ``wh.table(t).merge(df)`` of 2 rows (1 update, 1 insert) into a 1,000-row table;
* ``count_sf1`` — ``COUNT(*)`` of store_sales SF1 (2,880,404 rows) through the ``acid`` source.

For each: session start (``getOrCreate``), ``register_spark``, the first statement ("first
result": the whole of it, from before ``getOrCreate`` to the statement's answer), and the same
statement again in the warm session. Writes ``benchmarks/out/spark_small.json`` and ``.md``.

    python -m benchmarks.bench_spark_small [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"
MEASURES = ("insert10", "merge2", "count_sf1")


def child(measure: str, root: str) -> dict[str, Any]:
    """One measure in this (fresh) process; returns its timings."""
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    from acid_platform import Warehouse

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    t_session = time.perf_counter()
    wh = Warehouse.open(root)
    wh.register_spark(spark)
    t_register = time.perf_counter()

    def statement(i: int) -> Any:
        if measure == "insert10":
            rows = [(100 * i + k, f"v{k}") for k in range(10)]
            df = spark.createDataFrame(rows, "id INT, v STRING")
            df.write.format("acid").mode("append").save("default.small")
            return 10
        if measure == "merge2":
            new_id = 10_000 + int(time.time() * 1000) % 1_000_000_000 + i  # new in every run
            df = spark.createDataFrame([(5, "changed"), (new_id, "new")], "id INT, v STRING")
            out = (
                wh.table("small")
                .merge(df, "t.id = s.id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
            return [out.rows_updated, out.rows_inserted]
        return spark.read.format("acid").load("default.store_sales").count()

    first = statement(0)
    t_first = time.perf_counter()
    again = statement(1)
    t_again = time.perf_counter()
    wh.close()
    spark.stop()
    return {
        "session_s": t_session - t0,
        "register_s": t_register - t_session,
        "first_statement_s": t_first - t_register,
        "start_to_first_result_s": t_first - t0,
        "warm_statement_s": t_again - t_first,
        "result": first,
        "result_again": again,
    }


def prepare(work: Path) -> dict[str, str]:
    """One warehouse per measure: empty ``small`` for insert10, 1,000 rows for merge2, SF1
    store_sales for count_sf1 (written with the embedded engine)."""
    import pyarrow as pa

    from acid_platform import Warehouse
    from benchmarks.data import store_sales

    roots = {}
    for measure in MEASURES:
        root = work / measure
        with Warehouse.open(root) as wh:
            if measure == "count_sf1":
                rows = store_sales(1.0)
                wh.create_table("store_sales", rows.schema).insert(rows)
            else:
                t = wh.create_table("small", [("id", "int"), ("v", "string")])
                if measure == "merge2":
                    t.insert(pa.table({"id": range(1000), "v": [f"v{i}" for i in range(1000)]}))
        roots[measure] = str(root)
    return roots


def run(runs: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="acid-bench-spark-small-"))
    roots = prepare(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    results: dict[str, Any] = {"runs": runs}
    for measure in MEASURES:
        samples = []
        for i in range(runs):
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_spark_small", "--child", measure,
                 "--root", roots[measure]],
                env=env, capture_output=True, text=True, check=True,
                cwd=Path(__file__).resolve().parent.parent,
            )  # fmt: skip
            sample = json.loads(done.stdout.strip().splitlines()[-1])
            samples.append(sample)
            print(f"  {measure} run {i}: {sample}", file=sys.stderr, flush=True)
        keys = [k for k in samples[0] if k.endswith("_s")]
        results[measure] = {k: statistics.median(s[k] for s in samples) for k in keys}
        results[measure]["results"] = [s["result"] for s in samples]
    return results


def markdown(r: dict[str, Any]) -> str:
    labels = {
        "insert10": 'INSERT 10 rows (`df.write.format("acid")`)',
        "merge2": "MERGE 2 rows (1 update, 1 insert) into 1,000",
        "count_sf1": "COUNT(*) store_sales SF1 (2,880,404 rows)",
    }
    lines = [
        f"## Spark: small jobs (issue 12) — session start to first result, local[2], fresh "
        f"process each, no PYSPARK_PYTHON, median of {r['runs']}",
        "",
        "| statement | session start | register | first statement | start → first result | "
        "same statement, warm |",
        "|---|---|---|---|---|---|",
    ]
    for m in MEASURES:
        x = r[m]
        lines.append(
            f"| {labels[m]} | {x['session_s']:.2f} s | {x['register_s']:.2f} s | "
            f"{x['first_statement_s']:.2f} s | {x['start_to_first_result_s']:.2f} s | "
            f"{x['warm_statement_s']:.2f} s |"
        )
    lines += ["", f"Results: { {m: r[m]['results'][0] for m in MEASURES} }."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", choices=MEASURES)
    ap.add_argument("--root")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.root)))
        return
    r = run(args.runs)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "spark_small.json").write_text(json.dumps(r, indent=2))
    (OUT / "spark_small.md").write_text(markdown(r))
    print(markdown(r))


if __name__ == "__main__":
    main()
