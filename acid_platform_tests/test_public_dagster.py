"""Dagster's public API only: no ``dagster._…`` import in the library, the example platform or
the template ``acid new`` writes, but for the allow-list below, each entry with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

from acid_platform_tests.topology import ROOT

#: Private Dagster modules that may be imported, and why.
ALLOWED = {
    "dagster._core.storage.db_io_manager": (
        "DbIOManager, DbClient, DbTypeHandler, TableSlice and TablePartitionDimension exist only "
        "here in Dagster 1.13; every Dagster table integration (dagster-deltalake, "
        "dagster-iceberg, dagster-duckdb, dagster-snowflake) builds its IO manager on them"
    ),
}
SOURCES = [
    *sorted((ROOT / "acid_platform").rglob("*.py")),
    *sorted((ROOT / "acid_platform_example").rglob("*.py")),
    *sorted((ROOT / "acid_platform" / "cli" / "template").rglob("*.py.tmpl")),
]


def imported_modules(node: ast.AST) -> list[str]:
    """The modules an import statement names (``from dagster import _x`` names ``dagster._x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def private_dagster_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        for module in imported_modules(node):
            top, _, rest = module.partition(".")
            private = any(p.startswith("_") for p in rest.split("."))
            allowed = any(module == a or module.startswith(f"{a}.") for a in ALLOWED)
            if top.startswith("dagster") and private and not allowed:
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {module}")
    return found


def test_only_public_dagster_names_are_imported() -> None:
    assert len(SOURCES) > 100
    assert [hit for path in SOURCES for hit in private_dagster_imports(path)] == []


def test_the_allow_list_is_used_and_explained() -> None:
    used = {
        node.module
        for path in SOURCES
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module in ALLOWED
    }
    assert used == set(ALLOWED)
    assert all(len(reason) > 40 for reason in ALLOWED.values())
