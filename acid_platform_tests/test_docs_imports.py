"""Every import in the Python examples of the README and docs/ works (issue 29: docs/mutation.md
imported ``split_changes`` from where it was not). The examples' other lines need a warehouse,
Spark or Dagster around them; their imports need nothing but the package."""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from acid_platform_tests.topology import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def imports() -> list[tuple[str, int, str, str | None]]:
    """``(doc, block, module, name)`` of each ``import`` / ``from … import`` of the project's
    modules in a Python block."""
    found: list[tuple[str, int, str, str | None]] = []
    for doc in DOCS:
        for number, block in enumerate(BLOCK.findall(doc.read_text()), start=1):
            tree = ast.parse(block, f"{doc.name} block {number}")  # every block parses
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("acid_"):
                    found += [(doc.name, number, node.module or "", a.name) for a in node.names]
                elif isinstance(node, ast.Import):
                    found += [
                        (doc.name, number, a.name, None)
                        for a in node.names
                        if a.name.startswith("acid_")
                    ]
    return found


IMPORTS = imports()


def test_the_docs_import_the_project() -> None:
    assert len(IMPORTS) > 20


@pytest.mark.parametrize(("doc", "block", "module", "name"), IMPORTS)
def test_each_import_of_the_docs_works(doc: str, block: int, module: str, name: str | None) -> None:
    imported = importlib.import_module(module)
    if name is not None and not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # a submodule, else ImportError
