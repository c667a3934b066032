"""How the tests share code: through ``acid_platform_tests.helpers``, never through a private
name of another test file or another package's conftest."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def module_name(path: Path, root: Path = TESTS.parent) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sharing_offences(path: Path, module: str) -> list[str]:
    """``line: what`` for each private name of another test file that ``path`` (the test module
    ``module``) imports, and each conftest of another package it imports from."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
        source = ".".join([*base, node.module] if node.module else base)
        if not source.startswith(TESTS.name) or source == module:
            continue
        found += [
            f"{node.lineno}: imports private {source}.{a.name}"
            for a in node.names
            if a.name.startswith("_") and not a.name.startswith("__")
        ]
        if source.endswith(".conftest") and source.rpartition(".")[0] != package:
            found.append(f"{node.lineno}: imports another package's {source}")
    return found


def test_no_test_takes_a_private_name_or_another_packages_conftest() -> None:
    offences = [
        f"{path.relative_to(TESTS.parent)}:{hit}"
        for path in sorted(TESTS.rglob("*.py"))
        for hit in sharing_offences(path, module_name(path))
    ]
    assert offences == [], "share test code through acid_platform_tests.helpers:\n" + "\n".join(
        offences
    )


def test_the_check_sees_both_offences(tmp_path: Path) -> None:
    probe = tmp_path / "acid_platform_tests" / "compaction" / "test_probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from acid_platform_tests.table.test_differential import _run_episode, Model\n"
        "from acid_platform_tests.metastore.conftest import FakeClock\n"
        "from .conftest import KV, _private\n"
        "from acid_platform_tests.helpers import acid_dirs\n"
        "from ..metastore.conftest import reset_store\n"
    )
    assert sharing_offences(probe, module_name(probe, tmp_path)) == [
        "1: imports private acid_platform_tests.table.test_differential._run_episode",
        "2: imports another package's acid_platform_tests.metastore.conftest",
        "3: imports private acid_platform_tests.compaction.conftest._private",
        "5: imports another package's acid_platform_tests.metastore.conftest",
    ]
