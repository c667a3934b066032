"""The compose topology (``topology.py``, which ``docker-compose.yml`` is checked against), run
natively on 127.0.0.1: PostgreSQL holding the ACID metastore and Dagster's storage (two fresh
databases on the tests' server), a Spark standalone master and worker, the code-location server,
dagster-webserver and dagster-daemon (loading it through ``docker/workspace.yaml``), each a process of its own started with the topology's command and environment
from the project root, Dagster's instance configured by ``docker/dagster.yaml`` itself.

A run of the ``acid_platform`` job launched over GraphQL is queued, started by the daemon on the
code server and materializes the example platform; its Spark asset is computed and written by the executors the
standalone worker started. The tables are read back through the public API on the PostgreSQL
metastore, and the run's records are in Dagster's PostgreSQL storage.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
from dagster_graphql import DagsterGraphQLClient
from sqlalchemy import MetaData, Table, create_engine, select, text
from sqlalchemy.engine import make_url

from acid_platform import Warehouse
from acid_platform_example.data import (
    DAYS,
    FORGOTTEN,
    PLATFORM_JOB,
    STORE_SALES_DAILY,
    platform_run_tags,
    sales_of,
)
from acid_platform_tests.dagster_server import DagsterServer, bin_path, dagster_home
from acid_platform_tests.helpers import fresh_pg_database
from acid_platform_tests.topology import (
    DAGSTER_DB,
    LOOPBACK,
    METASTORE_DB,
    ROOT,
    Placement,
    native_placement,
)

pytestmark = pytest.mark.slow

#: The day whose store feed the run merges into retail.stores.
AS_OF = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
DONE = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


@pytest.fixture
def placement() -> Iterator[Placement]:
    """The topology on 127.0.0.1: two new databases on the tests' PostgreSQL server (dropped
    afterwards), the metastore's and Dagster's storage's; every other port free."""
    metastore_url, drop_metastore = fresh_pg_database(METASTORE_DB)
    try:
        dagster_url, drop_dagster = fresh_pg_database(DAGSTER_DB)
        try:
            yield native_placement(metastore_url, dagster_url)
        finally:
            drop_dagster()
    finally:
        drop_metastore()


def native_command(placement: Placement, service: str) -> list[str]:
    """The topology's command for ``service`` bound to 127.0.0.1, its program from this
    interpreter's environment (spark-class, dagster-webserver, dagster-daemon)."""
    program, *args = placement.command(service, LOOPBACK)
    return [bin_path(program), *args]


def http_json(url: str) -> Any | None:
    """The JSON at ``url`` (a Spark master's or worker's ``/json/``); ``None`` while nothing
    answers there."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def test_a_run_launched_over_graphql_writes_a_table_from_spark_executors(
    tmp_path: Path, placement: Placement, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = dagster_home(tmp_path / "home", ROOT / "docker" / "dagster.yaml")  # compose's
    warehouse = tmp_path / "warehouse"
    # the platform services' environment (as compose's), Spark on loopback with this Python
    # (and the project on its path) on the driver and in the executors' Python workers
    env = placement.platform_env(str(home), str(warehouse), str(tmp_path / "landing")) | {
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOG_DIR": str(tmp_path / "spark-logs"),
        "SPARK_WORKER_DIR": str(tmp_path / "spark-work"),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # a planted password (trust auth ignores it): it must show nowhere (issue 29)
        "ACID_METASTORE_URL": planted(placement.metastore_url),
    }
    master_ui = f"http://{LOOPBACK}:{placement.port('spark-master', 'webui')}/json/"
    worker_ui = f"http://{LOOPBACK}:{placement.port('spark-worker', 'webui')}/json/"
    for key, value in placement.dagster_pg_env().items():  # this process reads the instance too
        monkeypatch.setenv(key, value)

    def servers(*names: str, port: int | None = None) -> DagsterServer:
        """``names`` started together, each in a process group of its own; the Spark master
        gets the platform's environment too (compose gives it none; it reads none of it)."""
        commands = {name: native_command(placement, name) for name in names}
        return DagsterServer(commands, env=env, logs=tmp_path / "logs", port=port)

    web_port = placement.port("dagster-webserver", "http")
    with servers("spark-master", "spark-worker") as spark:
        spark.wait_for(
            "the worker registered with the master",
            lambda: (http_json(master_ui) or {}).get("aliveworkers", 0) >= 1,
        )
        code_port = str(placement.port("dagster-code", "grpc"))
        health = [bin_path("dagster"), "api", "grpc-health-check", "-p", code_port]
        with servers("dagster-code") as code:
            code.wait_for(
                "the code server answers",
                lambda: subprocess.run(health, capture_output=True, check=False).returncode == 0,
            )
            with servers("dagster-webserver", "dagster-daemon", port=web_port) as dagster:
                dagster.wait_ready(timeout_s=300)
                client = DagsterGraphQLClient(LOOPBACK, port_number=web_port)
                run_id = client.submit_job_execution(
                    PLATFORM_JOB,
                    repository_location_name="acid_platform",
                    run_config=AS_OF,
                    tags=platform_run_tags(),
                )
                status = dagster.wait_for(
                    f"run {run_id} (queued, then started by the daemon) ends",
                    lambda: (s := client.get_run_status(run_id)) in DONE and s,
                    timeout_s=600,
                )
                answers = graphql_answers(web_port, run_id)
                with DagsterInstance.from_config(str(home)) as instance:
                    failures = run_failures(instance, run_id)
                    assert status == DagsterRunStatus.SUCCESS, (
                        failures + code.log_tail() + dagster.log_tail()
                    )
                    event = instance.get_latest_materialization_event(STORE_SALES_DAILY)
                    assert event is not None and event.asset_materialization is not None
                    assert event.run_id == run_id
                    meta: dict[str, Any] = {
                        k: v.value for k, v in event.asset_materialization.metadata.items()
                    }

        # the Spark asset's tasks ran on executors of the standalone worker, not in the driver
        app_id = meta["spark/app_id"]
        assert meta["spark/master"] == placement.spark_master
        writers = meta["spark/writers"]
        assert meta["spark/tasks"] == sum(w["tasks"] for w in writers) >= 1
        assert meta["spark/driver"]["pid"] not in {w["pid"] for w in writers}
        (app,) = spark.wait_for(
            f"the master lists application {app_id} as completed",
            lambda: [
                a
                for a in (http_json(master_ui) or {}).get("completedapps", [])
                if a["id"] == app_id
            ],
        )
        assert app["name"] == "acid_platform"
        assert spark.wait_for(
            f"the worker lists the executors of {app_id} as finished",
            lambda: [
                e
                for e in (http_json(worker_ui) or {}).get("finishedexecutors", [])
                if e["appid"] == app_id
            ],
        )

    assert_runs_in_postgres(placement, run_id)
    assert not (home / "history").exists()  # no SQLite run storage beside it
    # the planted password: not in the webserver's answers (the resource's config shows the
    # variable's name), Dagster's PostgreSQL storage, the processes' logs or the warehouse
    assert '"ACID_METASTORE_URL"' in answers and SECRET not in answers
    assert SECRET not in postgres_dump(placement)
    for place in (tmp_path / "logs", home, warehouse):
        leaked = [p for p in place.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
        assert leaked == [], leaked
    assert_tables(placement, warehouse, meta)


SECRET = "PLANTEDnative4711"


def planted(url: str) -> str:
    """``url`` with :data:`SECRET` as its password."""
    return make_url(url).set(password=SECRET).render_as_string(hide_password=False)


def graphql_answers(port: int, run_id: str) -> str:
    """What the webserver answers about the code location's resources and the run (its
    config, tags, events), as text."""
    query = """query($run: ID!) {
      repositoriesOrError { ... on RepositoryConnection { nodes { name
        allTopLevelResourceDetails { name configFields { name } configuredValues { key value type } }
      } } }
      runOrError(runId: $run) { ... on Run { runConfigYaml tags { key value }
        eventConnection(afterCursor: null) { events { __typename ... on MessageEvent { message } } } } }
    }"""
    request = urllib.request.Request(
        f"http://{LOOPBACK}:{port}/graphql",
        data=json.dumps({"query": query, "variables": {"run": run_id}}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().decode()


def postgres_dump(placement: Placement) -> str:
    """Every row of every table of Dagster's PostgreSQL database, as text."""
    engine = create_engine(placement.database_url(DAGSTER_DB))
    try:
        with engine.connect() as conn:
            query = text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            tables: list[str] = list(conn.execute(query).scalars())
            reflected = [Table(t, MetaData(), autoload_with=conn) for t in tables]
            return "\n".join(str(row) for t in reflected for row in conn.execute(select(t)))
    finally:
        engine.dispose()


def run_failures(instance: DagsterInstance, run_id: str) -> str:
    """The errors of a failed run (its step and run failures), for the assertion message."""
    kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
    events = [
        e for e in instance.all_logs(run_id) if e.dagster_event and e.dagster_event_type in kinds
    ]
    return "\n".join(str(e.dagster_event.event_specific_data) for e in events if e.dagster_event)


def assert_runs_in_postgres(placement: Placement, run_id: str) -> None:
    """The run and its events are rows of Dagster's PostgreSQL database."""
    engine = create_engine(placement.database_url(DAGSTER_DB))
    try:
        with engine.connect() as conn:
            status: str = conn.execute(
                text("SELECT status FROM runs WHERE run_id = :run_id"), {"run_id": run_id}
            ).scalar_one()
            events: int = conn.execute(
                text("SELECT count(*) FROM event_logs WHERE run_id = :run_id"), {"run_id": run_id}
            ).scalar_one()
    finally:
        engine.dispose()
    assert status == "SUCCESS" and events > 0


def assert_tables(placement: Placement, warehouse: Path, meta: dict[str, Any]) -> None:
    """retail.store_sales_daily, read through the table API on the PostgreSQL metastore, is
    revenue per store and day of retail.sales, with the store's city from retail.stores."""
    with Warehouse.open(str(warehouse), placement.metastore_url, create=False) as wh:
        sales = wh.table("retail.sales").scan(["store_id", "amount", "ds"]).to_arrow().to_pylist()
        stores = wh.table("retail.stores").scan().to_arrow().to_pylist()
        cities = {r["store_id"]: r["city"] for r in stores}
        daily = wh.table("retail.store_sales_daily").scan().to_arrow().to_pylist()
    made = [
        r
        for d in DAYS.get_partition_keys()
        for r in sales_of(dt.date.fromisoformat(d))
        if r["customer_id"] not in FORGOTTEN
    ]
    assert len(sales) == len(made)  # the upstream assets ran in the same run
    expected: dict[tuple[Any, int], list[float]] = {}
    for r in sales:
        totals = expected.setdefault((r["ds"], r["store_id"]), [0, 0.0])
        totals[0] += 1
        totals[1] += r["amount"]
    got = {(r["ds"], r["store_id"]): r for r in daily}
    assert set(got) == set(expected)
    for key, (count, revenue) in expected.items():
        row = got[key]
        assert row["sales"] == count and row["revenue"] == pytest.approx(revenue, abs=0.011)
        assert row["city"] == cities.get(key[1])
    assert meta["rows_inserted"] == len(daily) and meta["dagster/row_count"] == len(daily)
