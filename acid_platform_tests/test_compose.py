"""``docker-compose.yml`` describes the topology ``test_native_topology`` runs (``topology.py``,
with compose's placement): the same services and ports (published on 127.0.0.1 only), the same
commands, the same environment of the platform services (values computed from the placement),
the warehouse and landing volumes, health checks; ``docker/dagster.yaml`` is the project's
``dagster.yaml`` with its PostgreSQL block uncommented, and an instance it configures works on
PostgreSQL as dagster-webserver uses it; the webserver and the daemon load the platform from the
code-location server through ``docker/workspace.yaml``. The compose file is read here (its
variables at their defaults); ``acid_platform_tests/deploy/`` runs it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from dagster import DagsterInstance, DagsterRun
from dagster._core.instance.ref import InstanceRef
from sqlalchemy.engine import make_url

from acid_platform_tests.helpers import fresh_pg_database
from acid_platform_tests.topology import (
    CODE_ENV,
    COMPOSE,
    COMPOSE_HOME,
    COMPOSE_LANDING,
    COMPOSE_WAREHOUSE,
    DAGSTER_DB,
    DAGSTER_PG_ENV,
    METASTORE_DB,
    PASSWORD_ENV,
    PLATFORM_ENV,
    PLATFORM_SERVICES,
    ROOT,
    SERVICES,
    WORKSPACE,
    native_placement,
)

#: ``${NAME:-default}``, compose's variable with a default.
VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")


def at_defaults(value: Any) -> str:
    """A value of the compose file with its variables at their defaults."""
    return VARIABLE.sub(lambda m: m.group(2), str(value))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def test_the_services_and_their_ports_are_the_topology_s_on_loopback(
    compose: dict[str, Any],
) -> None:
    assert set(services(compose)) == set(SERVICES)
    for name, service in SERVICES.items():
        published = services(compose)[name].get("ports", [])
        # a variable sets each host port (its default a port no PostgreSQL of yours holds)
        assert published == [
            f"127.0.0.1:${{{var}:-{default}}}:{service.ports[role]}"
            for role, (var, default) in service.published.items()
        ], name
        assert "healthcheck" in services(compose)[name], f"{name} has no health check"


def test_the_services_run_the_topology_s_commands(compose: dict[str, Any]) -> None:
    """The commands the native run starts, with compose's hosts and ports."""
    for name, service in SERVICES.items():
        command = services(compose)[name].get("command", [])
        assert command == COMPOSE.command(name, service.compose_bind), name
        if service.command:
            assert services(compose)[name].get("hostname") == COMPOSE.hosts[name], name


def test_the_platform_services_share_the_environment_and_the_warehouse(
    compose: dict[str, Any],
) -> None:
    svc = services(compose)
    for name in SERVICES:
        env: dict[str, Any] = svc[name].get("environment") or {}
        if name not in PLATFORM_SERVICES:
            assert not set(env) & set(PLATFORM_ENV), name
            continue
        # the native run's environment, computed from the same placement (values as strings)
        assert {k: at_defaults(v) for k, v in env.items()} == COMPOSE.platform_env(
            COMPOSE_HOME, COMPOSE_WAREHOUSE, COMPOSE_LANDING
        ), name
        assert set(env) == {*PLATFORM_ENV, *DAGSTER_PG_ENV, *CODE_ENV, PASSWORD_ENV}, name
        # the password is a variable of its own, never part of the metastore's URL
        assert make_url(env["ACID_METASTORE_URL"]).password is None
        assert env[PASSWORD_ENV] == env["DAGSTER_PG_PASSWORD"] == "${ACID_PG_PASSWORD:-acid}"
        volumes = svc[name]["volumes"]
        assert {f"warehouse:{COMPOSE_WAREHOUSE}", f"landing:{COMPOSE_LANDING}"} <= set(volumes)
    assert {"warehouse", "landing"} <= set(compose["volumes"])

    postgres = svc["postgres"]["environment"]
    assert (postgres["POSTGRES_USER"], at_defaults(postgres["POSTGRES_PASSWORD"])) == (
        COMPOSE.pg_user,
        COMPOSE.pg_password,
    )
    assert postgres["POSTGRES_DB"] == METASTORE_DB
    init = (ROOT / "docker" / "postgres-init.sql").read_text()
    assert f"CREATE DATABASE {DAGSTER_DB} OWNER {COMPOSE.pg_user};" in init


def test_the_dagster_services_load_the_platform_from_the_code_server(
    compose: dict[str, Any],
) -> None:
    """Dagster's Docker deployment: the webserver and the daemon read docker/workspace.yaml,
    whose gRPC server is the code-location server (its host and port from CODE_ENV), which
    serves the module and location the local workspace.yaml loads in-process."""
    svc = services(compose)
    web, daemon = svc["dagster-webserver"]["command"], svc["dagster-daemon"]["command"]
    assert web[web.index("-w") + 1] == daemon[daemon.index("-w") + 1] == WORKSPACE
    (entry,) = yaml.safe_load((ROOT / WORKSPACE).read_text())["load_from"]
    grpc = entry["grpc_server"]
    assert (grpc["host"], grpc["port"]) == ({"env": CODE_ENV[0]}, {"env": CODE_ENV[1]})
    local = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"][0]["python_module"]
    assert local["module_name"] == "acid_platform_example.definitions"
    code = svc["dagster-code"]["command"]
    assert code[code.index("-m") + 1] == local["module_name"]
    assert (
        code[code.index("--location-name") + 1] == grpc["location_name"] == local["location_name"]
    )
    env = svc["dagster-code"]["environment"]
    assert (env[CODE_ENV[0]], at_defaults(env[CODE_ENV[1]])) == (
        svc["dagster-code"]["hostname"],
        code[code.index("-p") + 1],
    )
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert f"COPY {WORKSPACE} ./{WORKSPACE}" in dockerfile
    assert f"COPY docker/dagster.yaml {COMPOSE_HOME}/dagster.yaml" in dockerfile
    assert f"DAGSTER_HOME={COMPOSE_HOME}" in dockerfile


def uncommented_postgres_block(text: str) -> str:
    """dagster.yaml with its commented ``storage:`` block uncommented."""
    lines = text.splitlines()
    start = lines.index("# storage:")
    out = lines[:start]
    for i, line in enumerate(lines[start:], start):
        if not line.startswith("#"):
            return "\n".join(out + lines[i:])
        out.append(re.sub(r"^# ?", "", line))
    return "\n".join(out)


def test_the_compose_instance_is_dagster_yaml_with_postgres() -> None:
    project = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    assert "storage" not in project  # SQLite by default
    compose_config = yaml.safe_load((ROOT / "docker" / "dagster.yaml").read_text())
    assert compose_config == yaml.safe_load(
        uncommented_postgres_block((ROOT / "dagster.yaml").read_text())
    )
    db = compose_config["storage"]["postgres"]["postgres_db"]
    assert {v["env"] for v in db.values() if isinstance(v, dict)} == set(DAGSTER_PG_ENV)


@pytest.fixture
def dagster_database() -> Iterator[str]:
    """A fresh database for Dagster's storage on the tests' PostgreSQL server."""
    url, cleanup = fresh_pg_database(DAGSTER_DB)
    try:
        yield url
    finally:
        cleanup()


def test_the_compose_instance_serves_the_webserver_on_postgresql(
    tmp_path: Path, dagster_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docker/dagster.yaml on PostgreSQL, tuned as dagster-webserver tunes it (a statement
    timeout set on every new connection): runs are stored and read back. On SQLAlchemy 2.1's
    default PostgreSQL driver (psycopg 3) that hook closed each connection it set up, and every
    launch from the UI or GraphQL failed with "the connection is closed"."""
    placement = native_placement(dagster_database, dagster_database)
    for key, value in placement.dagster_pg_env().items():
        monkeypatch.setenv(key, value)
    shutil.copy(ROOT / "docker" / "dagster.yaml", tmp_path / "dagster.yaml")
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as instance:
        instance.optimize_for_webserver(statement_timeout=15000, pool_recycle=-1, max_overflow=20)
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        run = instance.add_run(DagsterRun(job_name="acid_platform"))
        stored = instance.get_run_by_id(run.run_id)
        assert stored is not None and stored.job_name == "acid_platform"
    assert not (tmp_path / "history").exists()  # nothing in SQLite files


def test_dagster_yaml_configures_an_instance(tmp_path: Path) -> None:
    """The project's dagster.yaml is a valid instance configuration: SQLite storage, one
    compaction run at a time and no other limit (no pool of the user's is limited), queued
    runs, telemetry and the UI's community dialog off."""
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(ROOT))
    with DagsterInstance.from_ref(ref) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        concurrency = instance.get_concurrency_config()
        assert concurrency.pool_config.default_pool_limit is None
        assert concurrency.run_queue_config is not None
        assert concurrency.run_queue_config.tag_concurrency_limits == [
            {"key": "acid/service", "value": "compaction", "limit": 1}
        ]
        assert not instance.nux_enabled and not instance.telemetry_enabled
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"


def test_the_deploy_lane_debootstraps_from_the_debian_bookworm_source(tmp_path: Path) -> None:
    """The machine CI ran on had a third party's deb822 source first (nodesource, suite
    ``nodistro``) and disabled files beside the Debian one: debootstrap was pointed at
    nodesource and the deploy lane failed before any container ran."""
    from acid_platform_tests.deploy.docker_host import debian_mirror

    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "a-nodesource.sources").write_text(
        "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n"
        "Components: main\n"
    )
    (d / "a.list.disabled-by-farm").write_text("deb https://elsewhere.example/apt bookworm main\n")
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
    )
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example/debian bookworm main\n"
        "deb [arch=amd64] http://list.example/debian bookworm main\n"
    )
    assert debian_mirror(tmp_path) == "http://list.example/debian"
    assert debian_mirror(tmp_path / "none") == "http://deb.debian.org/debian"
