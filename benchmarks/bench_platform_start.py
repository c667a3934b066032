"""Platform start (issue 10): time from ``dagster dev`` start to the first successful run.

Each run starts ``dagster dev -w workspace.yaml`` on 127.0.0.1 from the repository root with a
fresh ``DAGSTER_HOME`` (the repository's ``dagster.yaml``) and a fresh warehouse (no Spark
asset: ``ACID_SPARK_MASTER=none``), through the tests' server harness
(``acid_platform_tests.dagster_server``). As soon as GraphQL answers with the code location
loaded, the example platform's materialization (the ``acid_platform`` job over three days, with
its asset checks) is launched over GraphQL, as a user clicks Materialize; the figure is the time
from the ``dagster dev`` command to that run's success, with its parts: until GraphQL answers,
until the queued run starts (the daemon dequeues it and starts a run worker process), and the
run itself. Then ``dagster dev`` is stopped (SIGTERM, as Ctrl-C) and the time until every
process is gone is reported too, and the CPU seconds all its processes used (a figure the other
load of a shared machine disturbs less than wall time). Medians (and ranges) of ``--runs``. Writes
``benchmarks/out/platform_start.md``.

    python -m benchmarks.bench_platform_start [--runs 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from acid_platform.definitions import PLATFORM_JOB, platform_run_tags
from acid_platform_tests.dagster_api import RunInfo
from acid_platform_tests.dagster_server import DagsterServer, dagster_dev_command, dagster_home
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import platform_env

OUT = Path(__file__).resolve().parent / "out"
AS_OF = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
PHASES = {
    "ready": "`dagster dev` start → GraphQL answers, code location loaded",
    "queued": "run launched → run started (daemon dequeues, run worker process starts)",
    "run": "the run: the platform's materialization (6 assets, 40 checks)",
    "first_success": "**`dagster dev` start → first successful run**",
    "stop": "SIGTERM → every process gone",
    "cpu": "CPU seconds of every `dagster dev` process, start to stop (less noisy)",
}


def one_start(tmp: Path) -> dict[str, float]:
    """One ``dagster dev`` start to the first successful run; the phases in seconds."""
    env = platform_env(dagster_home(tmp / "home"), tmp / "warehouse")
    port = free_port()
    server = DagsterServer(
        {"dagster-dev": dagster_dev_command(port)}, env=env, logs=tmp / "logs", port=port
    )
    cpu_before = children_cpu()
    started = time.time()
    with server:
        ready = server.wait_ready()
        launched = time.time()
        run_id = server.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags())

        def finished() -> RunInfo | None:
            run = server.api.run(run_id)
            return run if run.finished else None

        run = server.wait_for(f"run {run_id}", finished, 600)
        assert run.status == "SUCCESS" and run.start and run.end, server.log_tail(100)
        stopping = time.monotonic()
    stop = time.monotonic() - stopping
    return {
        "ready": ready,
        "queued": run.start - launched,
        "run": run.end - run.start,
        "first_success": run.end - started,
        "stop": stop,
        "cpu": children_cpu() - cpu_before,
    }


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished descendants (each waited for by
    its parent: ``dagster dev`` waits for its webserver and daemon, the daemon for run
    workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    samples = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="acid-bench-start-") as tmp:
            samples.append(one_start(Path(tmp)))
        print(f"start {i + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in samples[-1].items()))
    rows = []
    for key, label in PHASES.items():
        values = [s[key] for s in samples]
        rows.append(
            f"| {label} | {statistics.median(values):.1f} | {min(values):.1f}–{max(values):.1f} |"
        )
    text = "\n".join(
        [
            "## Platform start: `dagster dev` to the first successful run",
            "",
            "`dagster dev -w workspace.yaml` on 127.0.0.1, fresh `DAGSTER_HOME` (the repository's "
            "`dagster.yaml`: SQLite storage, queued runs) and warehouse, no Spark asset; the "
            "platform's materialization launched over GraphQL as soon as the code location has "
            f"loaded. Median and range of {args.runs} starts, seconds.",
            "",
            "| phase | median | range |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "platform_start.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
