"""Errors name the choices (issue 33): a misspelt database lists the databases that exist, a
misspelt warehouse path names the nearest warehouse, and ``'transactional'='false'`` in SQL
names the route to a non-transactional table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.metastore.names import choices_text
from acid_platform.table.catalog_ops import nearest_warehouses


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def wh(runner: CliRunner, tmp_path: Path) -> str:
    path = str(tmp_path / "warehouse")
    assert runner.invoke(app, ["init", path]).exit_code == 0
    made = runner.invoke(app, ["sql", "-w", path, "-e", "CREATE DATABASE retail"])
    assert made.exit_code == 0, made.output
    return path


def _error(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    return " ".join(result.stderr.split())


CHOICES = "the databases are: default, retail (did you mean retail?)"


@pytest.mark.parametrize(
    "args",
    [
        ["health", "-d", "retial"],
        ["health", "retial.orders"],
        ["sql", "-d", "retial", "-e", "SELECT 1"],
        ["sql", "-e", "USE retial"],
        ["sql", "-e", "SHOW TABLES IN retial"],
        ["sql", "-e", "CREATE TABLE retial.t (id int)"],
        ["sql", "-e", "DROP DATABASE retial"],
    ],
)
def test_a_misspelt_database_lists_the_databases(
    runner: CliRunner, wh: str, args: list[str]
) -> None:
    message = _error(runner, *args[:1], "-w", wh, *args[1:])
    assert "retial" in message and CHOICES in message, message


def test_choices_text() -> None:
    assert choices_text("sales", ["default"], "databases") == "; the databases are: default"
    many = [f"db{i:02d}" for i in range(30)] + ["marketing"]
    text = choices_text("marketng", many, "databases", limit=3)
    assert text == "; the databases are: db00, db01, db02, … (31 in all) (did you mean marketing?)"


def test_a_misspelt_warehouse_path_names_the_nearest_warehouse(
    runner: CliRunner, wh: str, tmp_path: Path
) -> None:
    misspelt = str(tmp_path / "warehuose")
    message = _error(runner, "sql", "-w", misspelt, "-e", "SELECT 1")
    assert f"no warehouse at {misspelt}" in message
    assert f"the nearest warehouse is {wh}" in message, message
    assert not (tmp_path / "warehuose").exists()  # nothing made
    inside = str(Path(wh) / "default")  # a directory inside the warehouse
    assert f"the nearest warehouse is {wh}" in _error(runner, "show", "locks", "-w", inside)
    deeper = str(tmp_path / "no" / "such" / "place")
    assert nearest_warehouses(deeper) == [wh]  # the nearest existing directory's
    assert nearest_warehouses("s3://bucket/wh") == []


def test_sql_names_the_route_to_a_non_transactional_table(runner: CliRunner, wh: str) -> None:
    message = _error(
        runner,
        "sql",
        "-w",
        wh,
        "-e",
        "CREATE TABLE t (id int) TBLPROPERTIES ('transactional'='false')",
    )
    assert "SQL creates only transactional (Hive ACID) tables" in message
    route = "wh.create_table(name, columns, properties={'transactional': 'false'})"
    assert route in message, message
    assert "'transactional_properties'='insert_only'" in message
    # the routes it names work
    with Warehouse.open(wh) as warehouse:
        plain = warehouse.create_table("t", [("id", "int")], properties={"transactional": "false"})
        assert not plain.spec.is_transactional
    script = (
        "CREATE TABLE mm (id int) STORED AS PARQUET "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only');"
        "INSERT INTO mm VALUES (1)"
    )
    assert runner.invoke(app, ["sql", "-w", wh, "-e", script]).exit_code == 0
