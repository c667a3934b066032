"""The house rules of ``docs/architecture.md``, checked on the source.

Walks every module of ``acid_platform`` (every import counts: one inside a function or under
``TYPE_CHECKING`` hides a dependency, it does not remove it) and fails on

- an import that points up a layer (``LAYERS``, lowest first);
- a cycle between packages, or between modules (packages' ``__init__`` re-exports included);
- PySpark below ``engines``, Dagster below ``orchestration``;
- a private name (``_x``) of one module imported or read by another: ``from m import _x``,
  ``m._x`` on an imported module, or ``obj._x`` on another object when ``_x`` is a private
  attribute the project defines.
"""

from __future__ import annotations

import ast
import graphlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import acid_platform

PACKAGE_DIR = Path(acid_platform.__file__).parent
#: The layers, lowest first: a module may import its own layer and those below it.
LAYERS = (
    "errors",
    "runtime",
    "format",
    "metastore",
    "table",
    "compaction",
    "engines",
    "streaming",
    "sql",
    "warehouse",
    "orchestration",
    "cli",
)
#: Third-party packages only a layer at or above the given one may import.
THIRD_PARTY_FLOOR = {"pyspark": "engines", "dagster": "orchestration"}


@dataclass
class Module:
    """One source file: its name, the project modules and third-party roots it imports, and
    the private names of other modules it uses."""

    name: str
    path: Path
    imports: set[str] = field(default_factory=set)
    third_party: set[str] = field(default_factory=set)
    private_uses: list[str] = field(default_factory=list)
    private_attrs: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def layer(self) -> str:
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else "__init__"

    @property
    def package(self) -> str:
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def read_modules(root: Path = PACKAGE_DIR.parent) -> dict[str, Module]:
    """Every module under ``root/acid_platform`` with what it imports."""
    paths = sorted((root / "acid_platform").rglob("*.py"))
    modules = {(m := Module(_module_name(p, root), p)).name: m for p in paths}
    for mod in modules.values():
        _scan(mod, set(modules))
    return modules


def _scan(mod: Module, known: set[str]) -> None:
    tree = ast.parse(mod.path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}  # local name -> project module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mod.imports |= _imports_of(mod, node, known, bound)
    mod.imports.discard(mod.name)
    _private_uses(mod, tree, bound)


def _imports_of(
    mod: Module, node: ast.Import | ast.ImportFrom, known: set[str], bound: dict[str, str]
) -> set[str]:
    """The project modules ``node`` imports (third-party roots go to ``mod.third_party``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                bound[alias.asname or alias.name] = alias.name
        return {t for alias in node.names if (t := _target(mod, alias.name, known))}
    if node.level:
        base = mod.package.split(".")
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    targets: set[str] = set()
    for alias in node.names:
        full = f"{source}.{alias.name}"
        if full in known:  # a module: `from pkg import module`
            targets.add(full)
            bound[alias.asname or alias.name] = full
            continue
        if t := _target(mod, source, known):
            targets.add(t)
        if source in known and _private(alias.name):
            mod.private_uses.append(f"{node.lineno}: from {source} import {alias.name}")
    return targets


def _private_uses(mod: Module, tree: ast.Module, bound: dict[str, str]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            value = node.value
            if isinstance(value, ast.Name) and value.id in bound:
                mod.private_uses.append(f"{node.lineno}: {bound[value.id]}.{node.attr}")
            elif not (isinstance(value, ast.Name) and value.id in ("self", "cls")):
                mod.private_attrs.append((node.lineno, ast.unparse(node), node.attr))


def _target(mod: Module, name: str, known: set[str]) -> str | None:
    """The project module ``name`` refers to (its longest known prefix), or ``None`` for a
    third-party import (recorded by its root package)."""
    if not name.startswith("acid_platform"):
        if name:
            mod.third_party.add(name.split(".")[0])
        return None
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _defined_private_attributes(modules: dict[str, Module]) -> set[str]:
    """Private attributes and methods the project defines on its own objects."""
    names: set[str] = set()
    for mod in modules.values():
        for node in ast.walk(ast.parse(mod.path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return names


def _layer_index(layer: str) -> int:
    return len(LAYERS) if layer == "__init__" else LAYERS.index(layer)


def upward_imports(modules: dict[str, Module]) -> list[str]:
    """``a -> b`` for each import of a higher layer (the package's ``__init__`` is the top)."""
    out = []
    for mod in modules.values():
        for target in sorted(mod.imports):
            to = modules[target]
            if _layer_index(to.layer) > _layer_index(mod.layer):
                out.append(f"{mod.name} ({mod.layer}) -> {target} ({to.layer})")
    return out


def cycles(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of ``graph`` (empty if it has none)."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return [" -> ".join(exc.args[1])]
    return []


def package_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    graph: dict[str, set[str]] = defaultdict(set)
    for mod in modules.values():
        for target in mod.imports:
            other = modules[target].package
            if other != mod.package and not mod.package.startswith(other + "."):
                graph[mod.package].add(other)
    return graph


def module_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> every module it imports: at run time, lazily inside a function, or for type
    annotations only (``TYPE_CHECKING``) — a type-only import hides a dependency, it does not
    remove it — and packages' ``__init__`` modules with their re-exports (issue 30: counted
    honestly, there are no circles; the table layer's modules declare what they need of the
    warehouse as protocols instead of importing it)."""
    return {m.name: m.imports - {m.name} for m in modules.values()}


# --------------------------------------------------------------------------- the rules


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return read_modules()


def test_every_module_has_a_layer(modules: dict[str, Module]) -> None:
    assert {m.layer for m in modules.values()} <= {*LAYERS, "__init__"}


def test_no_import_points_up_a_layer(modules: dict[str, Module]) -> None:
    assert upward_imports(modules) == []


def test_no_cycle_between_packages(modules: dict[str, Module]) -> None:
    assert cycles(package_graph(modules)) == []


def test_no_cycle_between_modules(modules: dict[str, Module]) -> None:
    assert cycles(module_graph(modules)) == []


@pytest.mark.parametrize(("library", "floor"), sorted(THIRD_PARTY_FLOOR.items()))
def test_heavy_libraries_stay_above_their_floor(
    modules: dict[str, Module], library: str, floor: str
) -> None:
    below = sorted(
        m.name
        for m in modules.values()
        if library in m.third_party and _layer_index(m.layer) < _layer_index(floor)
    )
    assert below == [], f"{library} imported below {floor}"


def test_no_private_name_crosses_a_module(modules: dict[str, Module]) -> None:
    own = _defined_private_attributes(modules)
    offences = [f"{m.name}:{use}" for m in modules.values() for use in m.private_uses]
    offences += [
        f"{m.name}:{line}: {text}"
        for m in modules.values()
        for line, text, attr in m.private_attrs
        if attr in own
    ]
    assert offences == [], "private names used across modules:\n" + "\n".join(offences)


# --------------------------------------------------------------------------- the checks check


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "acid_platform" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_catch_an_upward_import_a_cycle_and_a_private_name(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "__init__.py": "",
            "format/__init__.py": "",
            "format/a.py": "from acid_platform.table.t import Table\n",
            "table/__init__.py": "",
            "table/t.py": (
                "from acid_platform.format import a\n"
                "from acid_platform.format.a import _hidden\n"
                "x = a._secret\n"
                "def f(obj):\n    return obj._state\n"
            ),
            "table/u.py": "class U:\n    def __init__(self):\n        self._state = 1\n",
        },
    )
    found = read_modules(tmp_path)
    assert upward_imports(found) == [
        "acid_platform.format.a (format) -> acid_platform.table.t (table)"
    ]
    assert cycles(package_graph(found)) and cycles(module_graph(found))
    t = found["acid_platform.table.t"]
    assert t.private_uses == [
        "2: from acid_platform.format.a import _hidden",
        "3: acid_platform.format.a._secret",
    ]
    assert [attr for _, _, attr in t.private_attrs] == ["_state"]
    assert "_state" in _defined_private_attributes(found)


def test_tests_use_only_public_names_of_the_package() -> None:
    offences = []
    tests_dir = Path(__file__).parent
    for path in sorted(tests_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            source = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if source.startswith("acid_platform.") and isinstance(node, ast.ImportFrom):
                offences += [
                    f"{path.relative_to(tests_dir)}:{node.lineno}: {source}.{alias.name}"
                    for alias in node.names
                    if _private(alias.name)
                ]
    assert offences == [], "tests import private names of the package:\n" + "\n".join(offences)
