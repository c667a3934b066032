"""Platform start (issue 10): time from ``dagster dev`` start to the first successful run.

Each run starts ``dagster dev -w workspace.yaml`` on 127.0.0.1 from the repository root with a
fresh ``DAGSTER_HOME`` (the repository's ``dagster.yaml``) and a fresh warehouse (no Spark
asset: ``ACID_SPARK_MASTER=none``), through the tests' server harness
(``acid_platform_tests.dagster_server``). As soon as GraphQL answers with the code location
loaded, the example platform's materialization (the ``acid_platform`` job over three days, with
its asset checks) is launched over GraphQL, as a user clicks Materialize; the figure is the time
from the ``dagster dev`` command to that run's success, with its parts: until GraphQL answers,
until the daemon dequeues the run, until the run worker process it starts begins the run, and
the run itself. Then ``dagster dev`` is stopped (SIGTERM, as Ctrl-C) and the time until every
process is gone is reported too. Medians (and ranges) of ``--runs``. Writes
``benchmarks/out/platform_start.md``.

    python -m benchmarks.bench_platform_start [--runs 3] [--dagster-yaml dagster.yaml]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from acid_platform_example.data import PLATFORM_JOB, platform_run_tags
from acid_platform_tests.dagster_api import RunInfo
from acid_platform_tests.dagster_server import DagsterServer, dagster_dev_command, dagster_home
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import ROOT, platform_env

OUT = Path(__file__).resolve().parent / "out"
AS_OF = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
PHASES = {
    "ready": "`dagster dev` start → GraphQL answers, code location loaded",
    "dequeue": "run launched → the daemon takes it from the queue (RUN_STARTING)",
    "worker": "→ run started (a run worker process starts and loads the code)",
    "run": "the run: the platform's materialization (6 assets, 40 checks)",
    "first_success": "**`dagster dev` start → first successful run**",
    "stop": "SIGTERM → every process gone",
}


def one_start(tmp: Path, config: Path) -> dict[str, float]:
    """One ``dagster dev`` start (instance configured by ``config``) to the first successful
    run; the phases in seconds."""
    env = platform_env(dagster_home(tmp / "home", config), tmp / "warehouse")
    port = free_port()
    server = DagsterServer(
        {"dagster-dev": dagster_dev_command(port)}, env=env, logs=tmp / "logs", port=port
    )
    started = time.time()
    with server:
        ready = server.wait_ready(max_pause_s=0.05)  # to within 50 ms
        launched = time.time()
        run_id = server.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags())

        def finished() -> RunInfo | None:
            run = server.api.run(run_id)
            return run if run.finished else None

        run = server.wait_for(f"run {run_id}", finished, 600)
        assert run.status == "SUCCESS" and run.start and run.end, server.log_tail(100)
        events = server.api.run_events(run_id)
        stopping = time.monotonic()
    stop = time.monotonic() - stopping
    return {
        "ready": ready,
        "dequeue": events["RunStartingEvent"] - launched,
        "worker": run.start - events["RunStartingEvent"],
        "run": run.end - run.start,
        "first_success": run.end - started,
        "stop": stop,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dagster-yaml", type=Path, default=ROOT / "dagster.yaml")
    args = parser.parse_args()
    samples = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="acid-bench-start-") as tmp:
            samples.append(one_start(Path(tmp), args.dagster_yaml))
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
