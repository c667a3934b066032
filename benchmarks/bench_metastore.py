"""Metastore speed (issue 3): transactions and locks per second with concurrent clients.

Each client is a separate OS process with its own ``Metastore``; all start together and run
for a fixed time. Workloads:

* ``open+commit``: ``open_txn`` then ``commit_txn`` (the floor of every statement);
* ``lock+unlock``: a txn-less EXCL_WRITE on the client's own partition, then ``unlock``;
* ``statement``: what an INSERT costs the metastore: open, SHARED_WRITE lock, write id,
  write components, commit.

Reported: operations/s over the whole run and per-operation p50/p99 latency. Goals (issue 3):
1,000 txn/s on PostgreSQL, 300 txn/s on SQLite, 8 clients. Prints a table and writes
``benchmarks/out/metastore.json`` (and ``metastore.md``).

    python -m benchmarks.bench_metastore [--clients 8] [--seconds 4] [--runs 3]
        [--backends "sqlite,sqlite (synchronous=normal),postgresql,mysql"]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy

from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec
from acid_platform_tests.helpers import fresh_namespace

OUT = Path(__file__).resolve().parent / "out"
GOALS = {"postgresql": 1000, "sqlite": 300, "sqlite (synchronous=normal)": 300}
WORKLOADS = ("open+commit", "lock+unlock", "statement")


# --------------------------------------------------------------------------- client side


def _op(ms: Metastore, workload: str, client: int) -> Callable[[], None]:
    if workload == "open+commit":

        def open_commit() -> None:
            ms.commit_txn(ms.open_txn())

        return open_commit
    if workload == "lock+unlock":
        comps = [LockComponent(LockType.EXCL_WRITE, "bench", "t", f"p={client}")]

        def lock_unlock() -> None:
            ms.unlock(ms.lock(None, comps).lock_id)

        return lock_unlock
    if workload == "statement":
        comps = [LockComponent(LockType.SHARED_WRITE, "bench", "t", f"p={client}")]

        def statement() -> None:
            txn = ms.open_txn()
            ms.lock(txn, comps)
            ms.add_write_components(txn, "bench", "t", [f"p={client}"], "insert")
            ms.commit_txn(txn)

        return statement
    raise ValueError(workload)


def _client(url: str, workload: str, client: int, barrier: Any, seconds: float) -> list[float]:
    """Run one workload for ``seconds`` once every client is ready; returns latencies (s)."""
    with Metastore(url) as ms:
        op = _op(ms, workload, client)
        op()  # warm up connection and statement caches
        barrier.wait(timeout=300)  # all clients start together, however slow the start-up
        latencies: list[float] = []
        end = time.perf_counter() + seconds
        while True:
            t0 = time.perf_counter()
            if t0 >= end:
                break
            op()
            latencies.append(time.perf_counter() - t0)
        return latencies


# --------------------------------------------------------------------------- driver side


def namespace(backend: str, tmp: Path) -> tuple[str, Callable[[], None]]:
    name = f"acid_bench_{uuid.uuid4().hex[:10]}"
    if backend.startswith("sqlite"):
        query = "?synchronous=normal" if "normal" in backend else ""
        return f"sqlite:///{tmp / name}.db{query}", lambda: None
    return fresh_namespace(backend, tmp)


def prepare(url: str, clients: int) -> None:
    with Metastore(url) as ms:
        ms.create_database("bench")
        ms.create_table(
            TableSpec(
                "bench",
                "t",
                (("id", "int"),),
                (("p", "int"),),
                location="/bench/t",
                properties={"transactional": "true"},
            )
        )
        for c in range(clients):
            ms.add_partition("bench", "t", f"p={c}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_backend(
    backend: str,
    clients: int,
    seconds: float,
    runs: int,
    pool: Any,
    manager: Any,
    tmp: Path,
    workloads: tuple[str, ...] = WORKLOADS,
) -> list[dict[str, Any]]:
    """Every workload ``runs`` times; the run with the median throughput is reported."""
    url, cleanup = namespace(backend, tmp)
    rows = []
    try:
        prepare(url, clients)
        for workload in workloads:
            attempts = []
            for _ in range(runs):
                barrier = manager.Barrier(clients)
                results = pool.starmap(
                    _client, [(url, workload, c, barrier, seconds) for c in range(clients)]
                )
                attempts.append([x for r in results for x in r])
            attempts.sort(key=len)
            lat = attempts[len(attempts) // 2]
            ops_per_s = len(lat) / seconds
            rows.append(
                {
                    "backend": backend,
                    "workload": workload,
                    "clients": clients,
                    "seconds": seconds,
                    "runs": runs,
                    "ops_per_s_all_runs": [round(len(a) / seconds, 1) for a in attempts],
                    "operations": len(lat),
                    "ops_per_s": round(ops_per_s, 1),
                    "p50_ms": round(_percentile(lat, 0.50) * 1000, 2),
                    "p99_ms": round(_percentile(lat, 0.99) * 1000, 2),
                    "mean_ms": round(statistics.fmean(lat) * 1000, 2),
                    "goal_txn_per_s": GOALS.get(backend) if workload == "open+commit" else None,
                }
            )
            print(_format_row(rows[-1]), flush=True)
    finally:
        cleanup()
    return rows


def _format_row(r: dict[str, Any]) -> str:
    goal = r["goal_txn_per_s"]
    verdict = (
        "" if goal is None else f" (goal {goal}: {'met' if r['ops_per_s'] >= goal else 'MISSED'})"
    )
    return (
        f"{r['backend']:<28} {r['workload']:<12} {r['clients']:>3} {r['ops_per_s']:>9.1f}/s "
        f"p50 {r['p50_ms']:>7.2f} ms  p99 {r['p99_ms']:>7.2f} ms{verdict}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=3, help="runs per workload; median reported")
    parser.add_argument(
        "--backends",
        default="sqlite,sqlite (synchronous=normal),postgresql",
        help="comma list of: sqlite, 'sqlite (synchronous=normal)', postgresql, mysql",
    )
    parser.add_argument("--out", type=Path, default=OUT / "metastore.json")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    started = time.time()
    load_before = os.getloadavg()
    print(f"{'backend':<28} {'workload':<12} {'cl':>3} {'throughput':>11} latency")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["acid_platform.metastore"])
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        ctx.Manager() as manager,
        ctx.Pool(args.clients) as pool,
    ):
        for backend in backends:
            rows += run_backend(
                backend, args.clients, args.seconds, args.runs, pool, manager, Path(tmp)
            )
    report = {
        "benchmark": "metastore",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "sqlalchemy": sqlalchemy.__version__,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "notes": (
            "ops_per_s counts completed operations (open+commit pairs, lock+unlock pairs, "
            "statements) of all clients over the run (median of the runs); latencies are per "
            "operation. SQLite uses "
            "synchronous=FULL unless the backend says normal; PostgreSQL runs with its server "
            "defaults (synchronous_commit=on)."
        ),
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(_markdown(report))
    print(f"wrote {args.out}")


def _markdown(report: dict[str, Any]) -> str:
    lines = [
        "## Metastore throughput",
        "",
        f"{report['machine']['cpus']} CPUs, load average before/after "
        f"{report['machine']['load_average_before']} / {report['machine']['load_average_after']}.",
        "",
        "| backend | workload | clients | ops/s | p50 ms | p99 ms | goal |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in report["results"]:
        goal = r["goal_txn_per_s"]
        goal_text = (
            "" if goal is None else f"{goal}/s {'met' if r['ops_per_s'] >= goal else 'missed'}"
        )
        lines.append(
            f"| {r['backend']} | {r['workload']} | {r['clients']} | {r['ops_per_s']} | "
            f"{r['p50_ms']} | {r['p99_ms']} | {goal_text} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
