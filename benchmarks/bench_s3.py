"""A warehouse on S3 (issue 16): load, scan, UPDATE, DELETE and MERGE of TPC-DS store_sales
against a real S3 server on loopback (moto's server mode), beside the same on local disk, with
the requests each operation makes; delta-rs runs the same sequence against the same server.

Each run: a fresh warehouse (bucket), then in order load, scan, UPDATE (~0.1%), DELETE (~1%),
MERGE (3% source: half updates, half new rows), scan again. Medians of ``--runs``; requests are
counted from the server's request log (LIST, GET, HEAD, PUT, POST, DELETE).

    python -m benchmarks.bench_s3 [--scale 1] [--runs 3]

Writes ``benchmarks/out/s3.json`` and ``benchmarks/out/s3.md``. moto is a Python server: its
own CPU is in every S3 figure, and it shares the two cores with the client.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from acid_platform_tests.s3_server import S3Server, s3_server
from benchmarks.bench_dml import (
    DELETE_WHERE,
    MERGE_ON,
    TABLE,
    UPDATE_SET,
    UPDATE_WHERE,
    workload,
)

OUT = Path(__file__).resolve().parent / "out"
STEPS = ("load", "scan", "update", "delete", "merge", "scan after")


def _acid_steps(wh: Any, rows: pa.Table, source: pa.Table) -> dict[str, Callable[[], Any]]:
    holder: dict[str, Any] = {}

    def load() -> None:
        holder["t"] = wh.create_table(TABLE, rows.schema)
        holder["t"].insert(rows)

    return {
        "load": load,
        "scan": lambda: holder["t"].scan().to_arrow(),
        "update": lambda: holder["t"].update(UPDATE_SET, UPDATE_WHERE),
        "delete": lambda: holder["t"].delete(DELETE_WHERE),
        "merge": lambda: (
            holder["t"]
            .merge(source, MERGE_ON)
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
        "scan after": lambda: holder["t"].scan().to_arrow(),
    }


def _delta_steps(uri: str, options: dict[str, str], rows: pa.Table, source: pa.Table) -> Any:
    from deltalake import DeltaTable, write_deltalake

    holder: dict[str, Any] = {}

    def load() -> None:
        write_deltalake(uri, rows, storage_options=options)
        holder["t"] = DeltaTable(uri, storage_options=options)

    def merge() -> None:
        (
            holder["t"]
            .merge(
                source,
                MERGE_ON.replace("t.", "target.").replace("s.", "source."),
                source_alias="source",
                target_alias="target",
            )
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    return {
        "load": load,
        "scan": lambda: holder["t"].to_pyarrow_table(),
        "update": lambda: holder["t"].update(
            {"ss_quantity": "ss_quantity + 1"}, predicate=UPDATE_WHERE
        ),
        "delete": lambda: holder["t"].delete(DELETE_WHERE),
        "merge": merge,
        "scan after": lambda: holder["t"].to_pyarrow_table(),
    }


def _run(steps: dict[str, Callable[[], Any]], s3: S3Server | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in STEPS:
        start = s3.log_offset() if s3 else 0
        t0 = time.perf_counter()
        steps[name]()
        wall = time.perf_counter() - t0
        requests = Counter(r.kind for r in s3.requests_since(start)) if s3 else Counter()
        out[name] = {"wall_s": wall, "requests": dict(requests)}
    return out


def run(scale: float, runs: int) -> dict[str, Any]:
    from acid_platform import Warehouse

    wl = workload(scale, 1)
    rows, source = wl.rows, wl.merge_sources[0]
    results: dict[str, list[dict[str, Any]]] = {"local": [], "s3": [], "delta-rs s3": []}
    with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp, s3_server(Path(tmp)) as s3:
        for i in range(runs):
            with Warehouse.open(Path(tmp) / f"local{i}") as wh:
                results["local"].append(_run(_acid_steps(wh, rows, source), None))
            root = f"s3://{s3.new_bucket()}/wh"
            url = f"sqlite:///{tmp}/ms{i}.db"
            with Warehouse.open(root, url, storage=s3.options()) as wh:
                results["s3"].append(_run(_acid_steps(wh, rows, source), s3))
            options = {
                "AWS_ENDPOINT_URL": s3.endpoint,
                "AWS_ACCESS_KEY_ID": s3.options().access_key or "",
                "AWS_SECRET_ACCESS_KEY": s3.options().secret_key or "",
                "AWS_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true",
                "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
            }
            uri = f"s3://{s3.new_bucket('delta')}/store_sales"
            results["delta-rs s3"].append(_run(_delta_steps(uri, options, rows, source), s3))
    summary = {
        system: {
            step: {
                "wall_s": statistics.median(r[step]["wall_s"] for r in rs),
                "requests": rs[-1][step]["requests"],
            }
            for step in STEPS
        }
        for system, rs in results.items()
    }
    return {"rows": rows.num_rows, "scale": scale, "runs": runs, "systems": summary}


def _requests(counts: dict[str, int]) -> str:
    if not counts:
        return "–"
    return " ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" (= {sum(counts.values())})"


def markdown(r: dict[str, Any]) -> str:
    s = r["systems"]
    lines = [
        "## A warehouse on S3 (issue 16) — store_sales against moto's S3 server on loopback",
        "",
        f"TPC-DS store_sales, {r['rows']:,} rows (scale {r['scale']}); one sequence per run on a "
        "fresh warehouse: load, scan, UPDATE ~0.1%, DELETE ~1%, MERGE of a 3% source, scan "
        f"again. Medians of {r['runs']} runs, wall seconds; requests of the last run (the "
        "server's log). moto is a Python server sharing the 2 cores with the client: S3 wall "
        "times carry its CPU.",
        "",
        "| step | local disk | S3 | S3 ÷ local | requests (S3) | delta-rs on S3 | requests "
        "(delta-rs) |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for step in STEPS:
        loc, s3w, d = s["local"][step], s["s3"][step], s["delta-rs s3"][step]
        lines.append(
            f"| {step} | {loc['wall_s']:.2f} | {s3w['wall_s']:.2f} | "
            f"{s3w['wall_s'] / loc['wall_s']:.1f}x | {_requests(s3w['requests'])} | "
            f"{d['wall_s']:.2f} | {_requests(d['requests'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = run(args.scale, args.runs)
    OUT.mkdir(exist_ok=True)
    (OUT / "s3.json").write_text(json.dumps(result, indent=2))
    (OUT / "s3.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
