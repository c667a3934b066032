"""``docker-compose.yml`` describes the topology the native tests run (``topology.py``): the same
services and ports (published on 127.0.0.1 only), the environment the platform reads, one
warehouse volume, health checks; and ``docker/dagster.yaml`` is the project's ``dagster.yaml``
with its PostgreSQL block uncommented. Docker does not run here: the file is read, not run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from sqlalchemy.engine import make_url

from acid_platform_tests.topology import (
    DAGSTER_DB,
    DAGSTER_PG_ENV,
    METASTORE_DB,
    PLATFORM_ENV,
    PLATFORM_SERVICES,
    ROOT,
    SERVICES,
)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def test_the_services_and_their_ports_are_the_topology_s_on_loopback(
    compose: dict[str, Any],
) -> None:
    assert set(services(compose)) == set(SERVICES)
    for name, ports in SERVICES.items():
        published = services(compose)[name].get("ports", [])
        assert published == [f"127.0.0.1:{p}:{p}" for p in ports], name
        assert "healthcheck" in services(compose)[name], f"{name} has no health check"


def test_the_platform_services_share_the_environment_and_the_warehouse(
    compose: dict[str, Any],
) -> None:
    svc = services(compose)
    envs = [svc[name]["environment"] for name in PLATFORM_SERVICES]
    assert all(env == envs[0] for env in envs)
    env = envs[0]
    assert set(PLATFORM_ENV) | set(DAGSTER_PG_ENV) <= set(env)
    for name in PLATFORM_SERVICES:
        assert f"warehouse:{env['ACID_WAREHOUSE']}" in svc[name]["volumes"], name
    assert "warehouse" in compose["volumes"]

    postgres = svc["postgres"]["environment"]
    url = make_url(env["ACID_METASTORE_URL"])
    assert (url.host, url.port, url.database) == ("postgres", SERVICES["postgres"][0], METASTORE_DB)
    assert (url.username, url.password) == (
        postgres["POSTGRES_USER"],
        postgres["POSTGRES_PASSWORD"],
    )
    assert postgres["POSTGRES_DB"] == METASTORE_DB
    assert (env["DAGSTER_PG_HOST"], env["DAGSTER_PG_DB"]) == ("postgres", DAGSTER_DB)
    assert (env["DAGSTER_PG_USER"], env["DAGSTER_PG_PASSWORD"]) == (url.username, url.password)
    init = (ROOT / "docker" / "postgres-init.sql").read_text()
    assert f"CREATE DATABASE {DAGSTER_DB} OWNER {url.username};" in init
    assert env["ACID_SPARK_MASTER"] == f"spark://spark-master:{SERVICES['spark-master'][0]}"
    worker = svc["spark-worker"]["command"]
    assert env["ACID_SPARK_MASTER"] in worker


def test_the_dagster_services_serve_the_project_workspace(compose: dict[str, Any]) -> None:
    svc = services(compose)
    web, daemon = svc["dagster-webserver"]["command"], svc["dagster-daemon"]["command"]
    assert web[0] == "dagster-webserver" and daemon[:2] == ["dagster-daemon", "run"]
    assert web[web.index("-p") + 1] == str(SERVICES["dagster-webserver"][0])
    assert web[web.index("-w") + 1] == daemon[daemon.index("-w") + 1] == "workspace.yaml"
    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text())
    module = workspace["load_from"][0]["python_module"]["module_name"]
    assert module == "acid_platform.definitions"
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "COPY docker/dagster.yaml /opt/dagster/home/dagster.yaml" in dockerfile
    assert svc["dagster-daemon"]["environment"]["DAGSTER_HOME"] == "/opt/dagster/home"


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


def test_dagster_yaml_configures_an_instance(tmp_path: Path) -> None:
    """The project's dagster.yaml is a valid instance configuration: SQLite storage, the
    compactor pool limited to one, queued runs."""
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(ROOT))
    with DagsterInstance.from_ref(ref) as instance:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
