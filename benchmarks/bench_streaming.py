"""Streaming Ingest V2 (issue 11): sustained ingest of 1,000-row transactions in batches of 100
transactions, with a reader polling the table at the same time, against delta-rs appending the
same 1,000-row micro-batches as separate commits.

For each metastore backend a writer process streams ``--batches`` batches of 100 transactions
(``ArrowRecordWriter``, 1,000 rows each; ``--text`` also runs the delimited text writer) while a
reader process polls the table (a fresh snapshot each time: ``max(id)`` of a scan of ``id``).
Reported: rows/s of the writer, commits/s, and commit-to-visible latency p50/p99 — from the
start of ``commit_transaction()`` to the end of the first poll that saw the transaction's rows
(so a poll's own duration is in it; its p50 is reported too). delta-rs (``deltalake``) appends
the same micro-batches, one commit each, in the same run. Goal: >= 300,000 rows/s.

    python -m benchmarks.bench_streaming [--batches 10] [--backends "sqlite,sqlite (synchronous=normal),postgresql"]
        [--text] [--delta-commits 500] [--runs 3]

Writes ``benchmarks/out/streaming.json`` and ``streaming.md``. The machine is small and shared
(2 cores, other jobs): figures move between runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

OUT = Path(__file__).resolve().parent / "out"
ROWS_PER_TXN = 1_000
TXNS_PER_BATCH = 100
GOAL_ROWS_S = 300_000


def micro_batch(k: int) -> pa.Table:
    """The ``k``-th 1,000-row micro-batch: ids ``k*1000 ...``, a device name, a reading."""
    ids = np.arange(k * ROWS_PER_TXN, (k + 1) * ROWS_PER_TXN, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "device": pa.array([f"dev-{i % 97}" for i in range(ROWS_PER_TXN)]),
            "reading": pa.array((ids % 1000) * 0.5),
        }
    )


def _text(batch: pa.Table) -> list[bytes]:
    cols = batch.to_pydict()
    return [
        f"{i},{d},{r}".encode()
        for i, d, r in zip(cols["id"], cols["device"], cols["reading"], strict=True)
    ]


def _metastore_url(backend: str, root: Path) -> tuple[str | None, Any]:
    if backend == "sqlite":
        return None, None
    if backend.startswith("sqlite (synchronous=normal)"):
        return f"sqlite:///{root / '_metastore.db'}?synchronous=normal", None
    from acid_platform_tests.helpers import fresh_namespace

    return fresh_namespace(backend, root)


def _reader(root: str, url: str | None, stop: Any, out: Any) -> None:
    from acid_platform import Warehouse

    polls: list[tuple[float, int, float]] = []
    with Warehouse.open(root, url) as wh:
        t = wh.table("events")
        while not stop.is_set():
            started = time.time()
            ids = t.scan(["id"]).to_arrow().column("id")
            newest = int(max(ids.to_numpy())) // ROWS_PER_TXN if len(ids) else -1
            polls.append((time.time(), newest, time.time() - started))
    out.put(polls)


def _writer(root: str, url: str | None, batches: int, text: bool, out: Any) -> None:
    from acid_platform import Warehouse
    from acid_platform.streaming import (
        ArrowRecordWriter,
        StreamingConnection,
        StrictDelimitedInputWriter,
    )

    data = [micro_batch(k) for k in range(batches * TXNS_PER_BATCH)]
    records = [_text(b) for b in data] if text else data
    commits: list[float] = []
    with Warehouse.open(root, url) as wh:
        conn = (
            StreamingConnection.builder(wh)
            .with_table("events")
            .with_transaction_batch_size(TXNS_PER_BATCH)
            .with_record_writer(StrictDelimitedInputWriter(",") if text else ArrowRecordWriter())
            .connect()
        )
        started = time.perf_counter()
        cpu = time.process_time()
        for rec in records:
            conn.begin_transaction()
            conn.write(rec)
            commits.append(time.time())
            conn.commit_transaction()
        conn.close()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    out.put({"elapsed_s": elapsed, "cpu_s": cpu, "commit_starts": commits})


def run_acid(backend: str, batches: int, text: bool) -> dict[str, Any]:
    """One writer and one polling reader on a fresh warehouse."""
    from acid_platform import Warehouse

    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    url, cleanup = _metastore_url(backend, tmp)
    try:
        root = str(tmp / "wh")
        with Warehouse.open(root, url) as wh:
            wh.create_table(
                "events", [("id", "bigint"), ("device", "string"), ("reading", "double")]
            )
        ctx = multiprocessing.get_context("spawn")
        stop, rq, wq = ctx.Event(), ctx.Queue(), ctx.Queue()
        reader = ctx.Process(target=_reader, args=(root, url, stop, rq))
        writer = ctx.Process(target=_writer, args=(root, url, batches, text, wq))
        reader.start()
        writer.start()
        result = wq.get(timeout=3600)
        writer.join()
        time.sleep(1.0)  # let the reader see the last commits
        stop.set()
        polls = rq.get(timeout=600)
        reader.join()
    finally:
        if cleanup is not None:
            cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    latencies = []
    for k, start in enumerate(result["commit_starts"]):
        seen = next((end for end, newest, _ in polls if newest >= k and end >= start), None)
        if seen is not None:
            latencies.append(seen - start)
    rows = len(result["commit_starts"]) * ROWS_PER_TXN
    return {
        "backend": backend,
        "writer": "delimited text" if text else "Arrow",
        "rows": rows,
        "elapsed_s": result["elapsed_s"],
        "writer_cpu_s": result["cpu_s"],
        "rows_per_s": rows / result["elapsed_s"],
        "commits_per_s": len(result["commit_starts"]) / result["elapsed_s"],
        "visible_p50_ms": 1000 * statistics.median(latencies),
        "visible_p99_ms": 1000 * float(np.percentile(latencies, 99)),
        "poll_p50_ms": 1000 * statistics.median(p[2] for p in polls),
        "polls": len(polls),
    }


def run_delta(commits: int) -> dict[str, Any]:
    """delta-rs appending the same 1,000-row micro-batches, one commit each."""
    from deltalake import write_deltalake

    tmp = Path(tempfile.mkdtemp(prefix="bench-delta-"))
    try:
        data = [micro_batch(k) for k in range(commits)]
        started = time.perf_counter()
        for batch in data:
            write_deltalake(str(tmp / "events"), batch, mode="append")
        elapsed = time.perf_counter() - started
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "rows": commits * ROWS_PER_TXN,
        "elapsed_s": elapsed,
        "rows_per_s": commits * ROWS_PER_TXN / elapsed,
        "commits_per_s": commits / elapsed,
    }


def report(acid: list[dict[str, Any]], delta: dict[str, Any]) -> str:
    lines = [
        "## Streaming Ingest V2 (issue 11)",
        "",
        f"1,000-row transactions in batches of {TXNS_PER_BATCH} transactions, a reader process "
        "polling the table at the same time (a new snapshot and a scan of `id` each poll). "
        "Commit-to-visible: from the start of `commit_transaction()` to the end of the first poll "
        f"that saw the rows (the poll's own time included). Goal: {GOAL_ROWS_S:,} rows/s. "
        "2 shared cores: the reader and writer compete, and figures move between runs.",
        "",
        "Medians of the runs; writer CPU is the writer process's own CPU time.",
        "",
        "| metastore | writer | rows | rows/s | commits/s | writer CPU | visible p50 | visible p99 "
        "| poll p50 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in acid:
        lines.append(
            f"| {r['backend']} | {r['writer']} | {r['rows']:,} | {r['rows_per_s']:,.0f} | "
            f"{r['commits_per_s']:,.0f} | {r['writer_cpu_s']:.2f} s | {r['visible_p50_ms']:.0f} ms | {r['visible_p99_ms']:.0f} ms | "
            f"{r['poll_p50_ms']:.0f} ms |"
        )
    lines += [
        f"| delta-rs {delta.get('version', '')} (append, one commit per micro-batch) | Arrow | "
        f"{delta['rows']:,} | {delta['rows_per_s']:,.0f} | {delta['commits_per_s']:,.0f} | – | – | – | – |",
        "",
    ]
    return "\n".join(lines)


def median_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-figure medians of several runs of the same configuration (the first run's labels)."""
    merged = dict(results[0])
    for key, value in results[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = statistics.median(r[key] for r in results)
    merged["runs"] = len(results)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--backends", default="sqlite,sqlite (synchronous=normal),postgresql")
    parser.add_argument("--text", action="store_true", help="also run the delimited text writer")
    parser.add_argument("--delta-commits", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (medians)")
    args = parser.parse_args()
    import deltalake

    configs = [
        (backend, text)
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]
        for text in ([False, True] if args.text else [False])
    ]
    acid_runs: dict[tuple[str, bool], list[dict[str, Any]]] = {c: [] for c in configs}
    delta_runs: list[dict[str, Any]] = []
    for _ in range(args.runs):  # configurations take turns within a round
        for backend, text in configs:
            r = run_acid(backend, args.batches, text)
            print(json.dumps(r), flush=True)
            acid_runs[(backend, text)].append(r)
        d = run_delta(args.delta_commits)
        print(json.dumps(d), flush=True)
        delta_runs.append(d)
    acid = [median_of(acid_runs[c]) for c in configs]
    delta = median_of(delta_runs) | {"version": deltalake.__version__}
    OUT.mkdir(exist_ok=True)
    (OUT / "streaming.json").write_text(json.dumps({"acid": acid, "delta_rs": delta}, indent=2))
    (OUT / "streaming.md").write_text(report(acid, delta))
    print(report(acid, delta))


if __name__ == "__main__":
    main()
