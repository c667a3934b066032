"""``docker compose up --build`` for real (Debian's docker and docker-compose; see
:mod:`.docker_host`): the whole topology of docker-compose.yml, with the test's override
substituting only the images no registry gives here, comes up healthy; then, over GraphQL from
this host (127.0.0.1), the platform runs on it:

- the platform job's run succeeds; the Spark asset's files were written by executors in the
  spark-worker container, the driver being in dagster-code (where the default run launcher
  starts runs: on the code-location server);
- a SQL check from this host on the PostgreSQL container's published port: the metastore holds
  the committed write ids; the warehouse volume holds the table's files;
- 11 commits to a table (by a client in the dagster-code container): the compaction sensor's run
  compacts them and succeeds;
- ``docker-compose restart dagster-daemon`` while a run is going: the run, a subprocess of the
  code server, goes on and succeeds (the daemon only dequeues runs and evaluates sensors), and
  no transaction is left open;
- ``down -v`` leaves no container, network or volume;
- the S3 variant (docker-compose.s3.yml): the same run writes the warehouse into the s3
  container's bucket.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from acid_platform_example.data import PLATFORM_JOB, platform_run_tags
from acid_platform_tests.dagster_api import DagsterApi, RunInfo
from acid_platform_tests.deploy.docker_host import (
    COMPOSE_FILES,
    S3_FILE,
    Compose,
    ensure_docker,
    ensure_images,
    wait_for,
)
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import SERVICES

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

AS_OF = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
PASSWORD = "deploy-test-pw"
RUN_TIMEOUT_S = 1500


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def host_ports() -> dict[str, str]:
    """Every published port's variable: its default when free here (the webserver on 3000),
    else a free port."""
    env = {}
    for service in SERVICES.values():
        for var, default in service.published.values():
            env[var] = str(default if port_is_free(default) else free_port())
    return env


@pytest.fixture(scope="module")
def docker_ready() -> None:
    ensure_docker()
    ensure_images()


class Stack:
    """A compose project up, and its webserver's API."""

    def __init__(self, compose: Compose) -> None:
        self.compose = compose
        self.api = DagsterApi(f"http://127.0.0.1:{compose.env['ACID_WEBSERVER_HOST_PORT']}")
        self.timings: dict[str, float] = {}

    def up(self) -> None:
        started = time.monotonic()
        self.compose("up", "--build", "-d")
        want = set(SERVICES)
        wait_for(
            "every service healthy",
            lambda: (
                (h := self.compose.health()).keys() == want
                and all(s == "healthy" for s in h.values())
            ),
            900,
        )
        self.timings["up_to_healthy_s"] = time.monotonic() - started
        wait_for("the code location loaded in the webserver", self._loaded, 300)

    def _loaded(self) -> bool:
        try:
            return self.api.locations_loaded()
        except OSError:
            return False

    def run(self, run_id: str) -> RunInfo:
        def finished() -> RunInfo | None:
            run = self.api.run(run_id)
            return run if run.finished else None

        return wait_for(f"run {run_id} to finish", finished, RUN_TIMEOUT_S)

    def logs(self) -> str:
        return self.compose("logs", "--tail", "80")[-8000:]

    def pg(self, database: str) -> Any:
        port = self.compose.env["ACID_PG_HOST_PORT"]
        return create_engine(f"postgresql+psycopg://acid:{PASSWORD}@127.0.0.1:{port}/{database}")


@contextmanager
def stack_of(project: str, *extra: Path) -> Iterator[Stack]:
    files = (*COMPOSE_FILES, *extra)
    # the images first (minutes from cold): the host ports are picked after, right before
    # `up`, or another process of this machine may take one in between (seen here: 55432)
    started = time.monotonic()
    Compose(project, files, {"ACID_PG_PASSWORD": PASSWORD})("build")
    env = host_ports() | {"ACID_PG_PASSWORD": PASSWORD}
    stack = Stack(Compose(project, files, env))
    stack.timings["build_s"] = time.monotonic() - started
    try:
        stack.up()
        yield stack
    finally:
        stack.compose("down", "-v", "--remove-orphans")
        # nothing of the project is left behind
        assert stack.compose.leftovers() == {"container": [], "network": [], "volume": []}


@pytest.fixture(scope="module")
def stack(docker_ready: None) -> Iterator[Stack]:
    with stack_of(f"acidtest{os.getpid()}") as up:
        yield up


@pytest.fixture(scope="module")
def materialized(stack: Stack) -> RunInfo:
    started = time.monotonic()
    run = stack.run(stack.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags()))
    assert run.status == "SUCCESS", stack.logs()
    stack.timings["first_run_s"] = time.monotonic() - started
    report(stack)
    return run


def report(stack: Stack) -> None:
    print(f"\ndeploy timings: {json.dumps(stack.timings)}")


def test_the_spark_asset_is_written_by_executors_in_the_worker_container(
    stack: Stack, materialized: RunInfo
) -> None:
    (latest, *_) = stack.api.materializations("retail/store_sales_daily", 1)
    assert latest["run_id"] == materialized.run_id
    assert latest["spark/master"] == "spark://spark-master:7077"
    assert latest["spark/driver"]["host"] == "dagster-code"  # the run's process, on the server
    writers = latest["spark/writers"]
    assert writers and {w["host"] for w in writers} == {"spark-worker"}
    assert latest["spark/tasks"] == sum(w["tasks"] for w in writers) >= 1


def test_the_metastore_and_the_warehouse_volume_hold_the_commits(
    stack: Stack, materialized: RunInfo
) -> None:
    engine = stack.pg("metastore")
    try:
        with engine.connect() as conn:
            ids = (
                conn.execute(
                    text(
                        "SELECT t2w_writeid FROM txn_to_write_id JOIN txns ON t2w_txnid = txn_id"
                        " WHERE t2w_database = :db AND t2w_table = :t AND txn_state = 'c'"
                        " UNION SELECT ctc_writeid FROM completed_txn_components"
                        " WHERE ctc_database = :db AND ctc_table = :t"
                    ),
                    {"db": "retail", "t": "store_sales_daily"},
                )
                .scalars()
                .all()
            )
            next_id = conn.execute(
                text(
                    "SELECT nwi_next FROM next_write_id WHERE nwi_database = :db AND nwi_table = :t"
                ),
                {"db": "retail", "t": "store_sales_daily"},
            ).scalar_one()
            open_txns = conn.execute(text("SELECT count(*) FROM txns WHERE txn_state = 'o'"))
            assert open_txns.scalar_one() == 0
    finally:
        engine.dispose()
    committed = sorted(i for i in ids if i is not None)
    assert committed and committed[-1] == next_id - 1
    volume = stack.compose.volume_path("warehouse")
    table = next(volume.rglob("store_sales_daily"))
    dirs = {p.parent.name for p in table.rglob("bucket_*") if p.is_file()}
    written = {int(d.split("_")[1]) for d in dirs if d.startswith(("delta_", "base_"))}
    assert written and written <= set(committed) | {0}, (dirs, committed)


INSERT_11 = """
import os
from acid_platform import Warehouse
with Warehouse.open(os.environ["ACID_WAREHOUSE"], os.environ["ACID_METASTORE_URL"]) as wh:
    t = wh.create_table("deltas", [("id", "int")])
    for i in range(11):
        t.insert([{"id": i}])
"""


def test_the_compaction_sensor_s_run_compacts_eleven_commits(
    stack: Stack, materialized: RunInfo
) -> None:
    stack.compose("exec", "-T", "dagster-code", "python", "-c", INSERT_11)
    run = wait_for(
        "the compaction sensor's run of default.deltas",
        lambda: next(
            (
                r
                for r in stack.api.runs("acid_compaction")
                if r.tags.get("acid/table") == "default.deltas" and r.finished
            ),
            None,
        ),
        RUN_TIMEOUT_S,
    )
    assert run.status == "SUCCESS", stack.logs()
    assert run.tags["dagster/sensor_name"] == "acid_compaction_sensor"
    compacted = stack.api.output_metadata(run.run_id)["acid_compact"]
    assert compacted["rows_written"] == 11
    (output,) = compacted["output_dirs"]
    volume = stack.compose.volume_path("warehouse")
    assert (volume / Path(output).relative_to("/warehouse")).is_dir()


def test_a_run_goes_on_while_the_daemon_restarts(stack: Stack, materialized: RunInfo) -> None:
    run_id = stack.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags())
    wait_for(
        "the run to start",
        lambda: stack.api.run(run_id).status in ("STARTED", "SUCCESS", "FAILURE"),
        600,
    )
    stack.compose("restart", "dagster-daemon")
    run = stack.run(run_id)
    # Dagster: a run launched by the default launcher is a process of the code server; the
    # daemon only dequeues runs, so restarting it leaves the run going
    assert run.status == "SUCCESS", stack.logs()
    engine = stack.pg("metastore")
    try:
        with engine.connect() as conn:
            open_txns = conn.execute(text("SELECT count(*) FROM txns WHERE txn_state = 'o'"))
            assert open_txns.scalar_one() == 0  # nothing half-written remains open
    finally:
        engine.dispose()
    wait_for(
        "the daemon healthy again",
        lambda: stack.compose.health()["dagster-daemon"] == "healthy",
        300,
    )


def test_the_s3_variant_writes_the_warehouse_into_the_s3_container(docker_ready: None) -> None:
    with stack_of(f"acids3{os.getpid()}", S3_FILE) as s3:
        run = s3.run(s3.api.launch(PLATFORM_JOB, AS_OF, platform_run_tags()))
        assert run.status == "SUCCESS", s3.logs()
        port = s3.compose.env["ACID_S3_HOST_PORT"]
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/warehouse?list-type=2&prefix=wh/", timeout=30
        ) as response:
            listing = response.read().decode()
        assert "store_sales_daily" in listing and "bucket_" in listing, listing[:2000]
        # nothing went to the local volume
        volume = s3.compose.volume_path("warehouse")
        assert not any(volume.rglob("bucket_*"))
