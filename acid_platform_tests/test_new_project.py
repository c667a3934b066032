"""``acid new``: a project of one's own that every ``dg`` command serves as made. And the
repository root itself, a ``dg`` project serving the example platform.

The new project is installed into a fresh virtual environment (``pip install -e '.[dev]'``)
that sees this environment's packages (a ``.pth`` adding its site-packages), so nothing is
downloaded but the build backend; ``dg`` runs with that environment active.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from typer.testing import CliRunner

from acid_platform.cli import app
from acid_platform.cli.new import package_name, write_project
from acid_platform.errors import InvalidNameError
from acid_platform_tests.dagster_server import DagsterServer
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import ROOT
from acid_platform_tests.venvs import fresh_venv, run

DG = "dg"  # the fresh environment's (on its PATH)
TABLE_COMPONENT = "acid_platform.orchestration.components.AcidTableComponent"


def list_defs(cwd: Path, venv: Path, env: dict[str, str]) -> dict[str, Any]:
    done = run([DG, "list", "defs", "--json"], cwd, venv, env)
    listed: dict[str, Any] = json.loads(done.stdout)
    return listed


def private_imports(root: Path, package: str) -> list[str]:
    """Imports of a private name (``_x``) of ``package`` in the Python files under ``root``."""
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
                names = [a.name for a in node.names]
                parts = (node.module or "").split(".")
                if any(p.startswith("_") for p in parts + names):
                    found.append(f"{path}: from {node.module} import {', '.join(names)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(package) and any(
                        p.startswith("_") for p in alias.name.split(".")
                    ):
                        found.append(f"{path}: import {alias.name}")
    return found


def test_a_project_name_makes_a_package_name(tmp_path: Path) -> None:
    assert package_name("my-platform") == "my_platform"
    for bad in ("1st", "class", "acid_platform", "--"):
        with pytest.raises(InvalidNameError):
            package_name(bad)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(FileExistsError):
        write_project(tmp_path / "full")
    refused = CliRunner().invoke(app, ["new", str(tmp_path / "full")])
    assert refused.exit_code == 2 and "not empty" in refused.output


@pytest.mark.slow
def test_acid_new_makes_a_project_every_dg_command_serves(tmp_path: Path) -> None:
    project = tmp_path / "my-platform"
    made = CliRunner().invoke(app, ["new", str(project)])
    assert made.exit_code == 0, made.output
    assert "pip install -e '.[dev]'" in made.output
    package = project / "src" / "my_platform"
    for path in ("pyproject.toml", "README.md", "workspace.yaml", "dagster.yaml",
                 "docker-compose.yml", ".gitignore", "tests/test_platform.py"):  # fmt: skip
        assert (project / path).is_file(), path
    assert (package / "defs" / "warehouse" / "defs.yaml").is_file()
    assert private_imports(project, "acid_platform") == []
    for component in project.rglob("defs.yaml"):
        kind = yaml.safe_load(component.read_text())["type"]
        assert not any(p.startswith("_") for p in kind.split(".")), kind

    venv = fresh_venv(project / ".venv")  # where the README puts it, and dg looks
    run([str(venv / "bin" / "pip"), "install", "-q", "-e", ".[dev]"], project, venv)
    home = tmp_path / "home"
    home.mkdir()
    env = {"DAGSTER_HOME": str(home), "ACID_WAREHOUSE": str(tmp_path / "wh")}
    checked = run([DG, "check", "defs"], project, venv, env)
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr

    listed = list_defs(project, venv, env)
    assets = {a["asset_key"] for a in listed["assets"]}
    assert assets == {"sales/orders", "staging/raw_orders"}
    checked_assets = {c["asset_key"] for c in listed["asset_checks"]}
    assert checked_assets == assets and len(listed["asset_checks"]) == 22
    assert {s["name"] for s in listed["sensors"]} >= {
        "acid_compaction_sensor",
        "acid_housekeeping_sensor",
    }
    assert {s["name"] for s in listed["schedules"]} == {"acid_cleaner_schedule"}

    envs = run([DG, "list", "envs"], project, venv, env).stdout
    assert "ACID_WAREHOUSE" in envs and "ACID_METASTORE_URL" in envs  # the settings it reads

    run([DG, "launch", "--assets", "staging/raw_orders,sales/orders"], project, venv, env)
    with __import__("acid_platform").Warehouse.open(str(tmp_path / "wh"), create=False) as wh:
        assert wh.table("sales.orders").scan().to_arrow().num_rows == 3

    run([DG, "scaffold", "defs", TABLE_COMPONENT, "customers"], project, venv, env)
    scaffolded = yaml.safe_load((package / "defs" / "customers" / "defs.yaml").read_text())
    assert scaffolded["attributes"]["table"] == "default.customers"
    again = list_defs(project, venv, env)
    assert {a["asset_key"] for a in again["assets"]} == assets | {"default/customers"}
    assert {c["asset_key"] for c in again["asset_checks"]} == assets | {"default/customers"}

    tested = run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                 project, venv)  # fmt: skip
    assert " passed" in tested.stdout
    serve_with_dg_dev(project, venv, env, tmp_path / "logs")


def serve_with_dg_dev(cwd: Path, venv: Path, env: dict[str, str], logs: Path) -> None:
    """``dg dev`` in ``cwd`` (``venv`` active) answers with its code location loaded."""
    port = free_port()
    active = {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    command = ["dg", "dev", "--host", "127.0.0.1", "--port", str(port)]
    with DagsterServer(
        {"dg-dev": command}, env=env | active, logs=logs, port=port, cwd=cwd
    ) as server:
        server.wait_ready(timeout_s=300)
        assert server.api.locations_loaded()


@pytest.mark.slow
def test_the_repository_root_is_a_dg_project_serving_the_example(tmp_path: Path) -> None:
    venv = fresh_venv(tmp_path / "venv")
    env = {"DAGSTER_HOME": str(tmp_path), "ACID_WAREHOUSE": str(tmp_path / "wh")}
    checked = run([DG, "check", "defs"], ROOT, venv, env)
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = list_defs(ROOT, venv, env)
    assert "retail/stores" in {a["asset_key"] for a in listed["assets"]}
    assert "acid_platform" in {j["name"] for j in listed["jobs"]}
    serve_with_dg_dev(ROOT, venv, env, tmp_path / "logs")
    components = run([DG, "list", "components", "--json"], ROOT, venv, env)
    types = {c["key"] for c in json.loads(components.stdout)["items"]}
    assert {
        "acid_platform.orchestration.components.AcidWarehouseComponent",
        TABLE_COMPONENT,
        "acid_platform.orchestration.components.AcidIngestComponent",
        "acid_platform.orchestration.components.AcidChangeFeedComponent",
    } <= types


@pytest.mark.slow
def test_the_wheel_holds_the_library_and_its_template_only(tmp_path: Path) -> None:
    """Nothing a user writes, and neither the example platform nor the tests, is in the
    library's distribution; the template ``acid new`` copies is."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
    )
    (wheel,) = tmp_path.glob("acid_platform-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("acid_platform-")}
    assert tops == {"acid_platform"}
    assert "acid_platform/cli/template/src/__PKG__/defs/orders/defs.yaml" in names
    assert "acid_platform/cli/template/tests/test_platform.py.tmpl" in names
