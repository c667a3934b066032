"""House rule: no private name (``_x``) is imported from another module or read off one.

Walks the source of the packages listed in ``CHECKED`` (the layers cleaned so far) and fails on
``from acid_platform.a.b import _x`` and on ``module._x`` where ``module`` is an imported
project module. Add a package to ``CHECKED`` once its cross-file private names are gone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import acid_platform

PACKAGE_DIR = Path(acid_platform.__file__).parent
CHECKED = ("format", "metastore")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _imported_from(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[: None if is_package else -1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def cross_module_private_names(path: Path, root: Path = PACKAGE_DIR.parent) -> list[str]:
    """``line: what`` for each private name of another project module used in ``path`` (a file
    under ``root/acid_platform``)."""
    module, is_package = _module_name(path, root), path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> project module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("acid_platform"):
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _imported_from(module, node, is_package)
            if not source.startswith("acid_platform"):
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{node.lineno}: from {source} import {alias.name}")
                else:
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{node.lineno}: {modules[node.value.id]}.{node.attr}")
    return found


@pytest.mark.parametrize("package", CHECKED)
def test_no_private_name_crosses_a_module(package: str) -> None:
    offences = [
        f"{path.relative_to(PACKAGE_DIR.parent)}:{hit}"
        for path in sorted((PACKAGE_DIR / package).rglob("*.py"))
        for hit in cross_module_private_names(path)
    ]
    assert offences == [], "private names used across modules:\n" + "\n".join(offences)


def test_the_check_sees_both_kinds_of_offence(tmp_path: Path) -> None:
    probe = tmp_path / "acid_platform" / "format" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from acid_platform.format import names\n"
        "from acid_platform.format.hive_hash import _secret\n"
        "from .names import _also\n"
        "x = names._hidden\n"
        "y = names.public, self._own\n"
    )
    assert cross_module_private_names(probe, tmp_path) == [
        "2: from acid_platform.format.hive_hash import _secret",
        "3: from acid_platform.format.names import _also",
        "4: acid_platform.format.names._hidden",
    ]
