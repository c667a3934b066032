"""The modules of ``acid_platform.sql`` import one way: their import graph has no cycle.

Every import counts, also one inside a function (a lazy import hides a cycle, it does not break
it) and one under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import acid_platform.sql

PACKAGE = "acid_platform.sql"
SQL_DIR = Path(acid_platform.sql.__file__).parent


def module_name(path: Path) -> str:
    return PACKAGE if path.name == "__init__.py" else f"{PACKAGE}.{path.stem}"


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The modules of the package that ``path`` imports (anywhere in the file)."""
    this = module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x / from .x import y
                base = PACKAGE if this == PACKAGE else this.rpartition(".")[0]
                target = ".".join(p for p in (base, node.module) if p)
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names}
            named = submodules & modules
            found.update(named)
            if named != submodules:  # names, not modules: the module they come from
                found.add(target)
    return {m for m in found if m in modules and m != this}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(SQL_DIR.glob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def test_the_sql_package_has_no_import_cycle() -> None:
    graph = import_graph()
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle in {PACKAGE}: {' -> '.join(exc.args[1])}") from None
    assert set(order) == set(graph)
    # the statement loop sits above the handlers, which know only the session's state
    assert f"{PACKAGE}.executor" in graph[f"{PACKAGE}.session"]
    for handler in ("admin", "ddl", "dml"):
        assert f"{PACKAGE}.session" not in graph[f"{PACKAGE}.{handler}"]
        assert f"{PACKAGE}.state" in graph[f"{PACKAGE}.{handler}"]


def test_the_check_sees_a_lazy_import_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from acid_platform.sql.b import f\n")
    b.write_text("def f():\n    from acid_platform.sql import a\n")
    modules = {f"{PACKAGE}.a", f"{PACKAGE}.b"}
    graph = {module_name(p): imported_modules(p, modules) for p in (a, b)}
    assert graph == {f"{PACKAGE}.a": {f"{PACKAGE}.b"}, f"{PACKAGE}.b": {f"{PACKAGE}.a"}}
