"""What checking a scan's listing against the file record costs (issue 13, item 6).

A table of ``--rows`` rows written by ``--inserts`` INSERTs and ``--deletes`` DELETEs (one delta
or delete delta each, ``--buckets`` bucket files per insert) is scanned whole, and its files
planned alone, with the check (the snapshot carries the table's record) and without it (the
same snapshot, ``files=None``), interleaved, median of ``--runs``; plus the one metastore
query that loads the record. Prints JSON.

    python -m benchmarks.bench_file_record [--rows 1000000] [--inserts 40] [--deletes 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from acid_platform import Warehouse
from acid_platform.format import Snapshot
from acid_platform.table.read_lease import take_snapshot
from acid_platform.table.scan import plan_files
from benchmarks.common import median_time

OUT = Path(__file__).resolve().parent / "out"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--inserts", type=int, default=40)
    parser.add_argument("--deletes", type=int, default=10)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--metastore-url", default=None)
    args, _ = parser.parse_known_args()  # benchmarks/run hands every bench the same flags
    with Warehouse.open(tempfile.mkdtemp(), args.metastore_url) as wh:
        t = wh.create_table(
            "t",
            [("id", "bigint"), ("v", "string")],
            bucket_columns=["id"],
            num_buckets=args.buckets,
        )
        per = args.rows // args.inserts
        for i in range(args.inserts):
            ids = np.arange(i * per, (i + 1) * per, dtype=np.int64)
            t.insert(pa.table({"id": ids, "v": pa.array([f"v{x % 1000}" for x in ids])}))
        for d in range(args.deletes):
            t.delete(f"id % 1000 = {d}")
        snapshots, _ = take_snapshot(wh.metastore, [t.spec], lease=False)
        checked = snapshots[t.spec.full_name]
        unchecked: Snapshot = dataclasses.replace(checked, files=None)
        location = t.location
        results: dict[str, Any] = {
            "rows": t.scan(["id"]).to_arrow().num_rows,
            "files": sum(
                len(d.files)
                for p in wh.metastore.recorded_files("default", "t").partitions.values()
                for d in p.dirs.values()
            ),
            "dialect": wh.metastore.dialect,
        }
        # interleaved: each round times both, so load on the machine falls on both alike
        plan_on, plan_off, scan_on, scan_off, query = [], [], [], [], []
        for i in range(args.runs):
            pairs = [(plan_on, checked), (plan_off, unchecked)]
            for out, snap in pairs if i % 2 else pairs[::-1]:  # alternate which goes first
                out.append(median_time(lambda s=snap: plan_files(t.spec, location, s), 3))
            pairs = [(scan_on, checked), (scan_off, unchecked)]
            for out, snap in pairs if i % 2 else pairs[::-1]:
                out.append(median_time(lambda s=snap: t.scan(snapshot=s).to_arrow(), 1))
            query.append(median_time(lambda: wh.metastore.recorded_files("default", "t"), 3))
        med = statistics.median
        results |= {
            "plan_checked_ms": med(plan_on) * 1000,
            "plan_unchecked_ms": med(plan_off) * 1000,
            "record_query_ms": med(query) * 1000,
            "scan_checked_s": med(scan_on),
            "scan_unchecked_s": med(scan_off),
        }
        results["scan_overhead_pct"] = (
            (results["scan_checked_s"] + results["record_query_ms"] / 1000)
            / results["scan_unchecked_s"]
            - 1
        ) * 100
    print(json.dumps(results, indent=2))
    OUT.mkdir(exist_ok=True)
    (OUT / "file_record.json").write_text(json.dumps(results, indent=2))
    (OUT / "file_record.md").write_text(_markdown(results, args))


def _markdown(r: dict[str, Any], args: argparse.Namespace) -> str:
    return (
        f"## File record check on scans (issue 13), {time.strftime('%Y-%m-%d', time.gmtime())} "
        f"— bench_file_record --runs {args.runs}\n\n"
        f"{r['rows']:,} rows in {args.inserts} inserts and {args.deletes} deletes "
        f"({r['files']} bucket files), {r['dialect']} metastore; interleaved medians.\n\n"
        "| | checked | unchecked |\n|---|---|---|\n"
        f"| plan_files | {r['plan_checked_ms']:.1f} ms | {r['plan_unchecked_ms']:.1f} ms |\n"
        f"| full scan | {r['scan_checked_s']:.3f} s | {r['scan_unchecked_s']:.3f} s |\n"
        f"| record query (once per read) | {r['record_query_ms']:.1f} ms | — |\n\n"
        f"Overhead of a checked read, the query included: {r['scan_overhead_pct']:+.1f}%.\n"
    )


if __name__ == "__main__":
    main()
