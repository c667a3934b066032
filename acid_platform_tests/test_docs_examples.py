"""The examples of the README and docs/ run (issue 29, item 7): a user copies them first.

Each document's ```python blocks run in order in ONE namespace — later blocks build on earlier
ones, as a reader types them — in a fresh temporary working directory: a warehouse an example
opens by a relative path (``Warehouse.open("warehouse")``) is a fresh one, and opening one
anywhere else fails the test. What the examples leave is then used as a reader would: every
``test_*`` function they define is called (with ``tmp_path`` and ``monkeypatch``), every Dagster
``Definitions`` they build must load, and a package ``acid new`` makes (``my_platform``) is
written for the examples that import it.

Blocks that use Spark run in the slow lane, on the test run's local session (the ``spark``
fixture: ``SparkSession.builder…getOrCreate()`` in an example returns it); the fast lane runs
every other block of the same document. A block that needs what a test cannot provide cheaply
is marked in the Markdown, on the line just before its fence::

    <!-- docs-test: skip (needs an S3 server and a PostgreSQL metastore) -->

It still parses and its imports are checked, like every block's; the skips are printed and their
number is kept under :data:`MAX_SKIPPED`, so they cannot grow silently.

A ```sql block is HiveQL as ``acid sql`` takes it: each runs in a fresh warehouse's session.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acid_platform_tests.topology import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A fenced block, with the docs-test comment on the line before it, if any.
FENCE = re.compile(
    r"^(?:<!-- docs-test: (?P<directive>.*?) -->\n)?```(?P<lang>python|sql)\n(?P<code>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
SKIP = re.compile(r"skip \((?P<reason>.+)\)")
#: The most blocks that may be skipped, all documents together.
MAX_SKIPPED = 3
#: The project ``acid new my-platform`` writes, for the examples that import its package.
NEW_PROJECT = "my-platform"


@dataclass(frozen=True)
class Block:
    """One fenced block: its document (relative to the repository), language, first line of
    code (1-based), the code, and why it is not run (None: it runs)."""

    doc: str
    lang: str
    line: int
    code: str
    skip: str | None

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"

    def tree(self) -> ast.Module:
        """The block parsed, numbered as the lines of its Markdown file."""
        tree = ast.parse(self.code, self.name)
        ast.increment_lineno(tree, self.line - 1)
        return tree

    def imports(self) -> list[tuple[str, str | None]]:
        """``(module, name)`` of each import (``name`` None for ``import module``)."""
        found: list[tuple[str, str | None]] = []
        for node in ast.walk(self.tree()):
            if isinstance(node, ast.ImportFrom):
                found += [(node.module or "", a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                found += [(a.name, None) for a in node.names]
        return found

    @property
    def uses_spark(self) -> bool:
        """Whether the block imports PySpark (or the project's Spark modules) or uses a name
        ``spark``."""
        names = {n.id for n in ast.walk(self.tree()) if isinstance(n, ast.Name)}
        modules = {m for m, _ in self.imports()}
        spark_modules = {m for m in modules if m.split(".")[0] == "pyspark" or ".spark" in m}
        return "spark" in names or bool(spark_modules)

    def run(self, namespace: dict[str, Any]) -> None:
        """Execute the block in ``namespace``; tracebacks point into the Markdown file."""
        exec(compile(self.tree(), str(ROOT / self.doc), "exec"), namespace)


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text()
    found = []
    for match in FENCE.finditer(text):
        directive, skip = match.group("directive"), None
        if directive is not None:
            skipped = SKIP.fullmatch(directive.strip())
            assert skipped, f"{doc.name}: unknown docs-test directive {directive!r}"
            skip = skipped.group("reason")
        line = text.count("\n", 0, match.start("code")) + 1
        code = match.group("code")
        found.append(Block(str(doc.relative_to(ROOT)), match.group("lang"), line, code, skip))
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]
PYTHON = [b for b in ALL if b.lang == "python"]
SQL = [b for b in ALL if b.lang == "sql"]
SKIPPED = [b for b in ALL if b.skip is not None]
RUN = [b for b in PYTHON if b.skip is None]
#: The documents with Python blocks to run, and those of them with blocks that need Spark.
DOCS_RUN = sorted({b.doc for b in RUN})
DOCS_SPARK = sorted({b.doc for b in RUN if b.uses_spark})
#: ``(block, module, name)`` of each import of the project's modules, in run and skipped blocks.
IMPORTS = [(b.name, m, n) for b in PYTHON for m, n in b.imports() if m.startswith("acid_")]


def test_the_docs_have_examples_and_few_skips() -> None:
    assert len(PYTHON) >= 15
    assert len(IMPORTS) > 20
    print(f"\n{len(RUN)} of {len(PYTHON)} python blocks run, and {len(SQL)} sql; skipped:")
    for block in SKIPPED:
        print(f"  {block.name}: {block.skip}")
    assert len(SKIPPED) <= MAX_SKIPPED, [f"{b.name}: {b.skip}" for b in SKIPPED]


@pytest.mark.parametrize(("block", "module", "name"), IMPORTS)
def test_each_import_of_the_docs_works(block: str, module: str, name: str | None) -> None:
    imported = importlib.import_module(module)
    if name is not None and not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # a submodule, else ImportError


@pytest.mark.parametrize("doc", DOCS_RUN)
def test_the_examples_of_a_doc_run(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every block that runs and needs no Spark (the slow lane runs those)."""
    _run([b for b in RUN if b.doc == doc and not b.uses_spark], tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS_SPARK)
def test_the_examples_of_a_doc_run_with_spark(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Every block that runs, Spark's too, on the test run's local Spark session."""
    request.getfixturevalue("spark")
    _run([b for b in RUN if b.doc == doc], tmp_path, monkeypatch)


@pytest.mark.parametrize("block", SQL, ids=lambda b: b.name)
def test_the_sql_examples_run(block: Block, tmp_path: Path) -> None:
    from acid_platform import Warehouse

    with Warehouse.open(tmp_path / "warehouse") as wh:
        wh.sql(block.code)


def _run(run: list[Block], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the blocks in order in one namespace, in ``tmp_path``, then what they left (module
    docs); close the warehouses and mutation clients they opened."""
    from acid_platform.streaming.mutate import MutatorClient
    from acid_platform.table.warehouse import TableWarehouse

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ACID_METASTORE_URL", raising=False)
    monkeypatch.delenv("ACID_WAREHOUSE", raising=False)
    opening = TableWarehouse.open.__func__  # type: ignore[attr-defined]

    def open_here(cls: type[TableWarehouse], path: Any, *args: Any, **kwargs: Any) -> Any:
        """``Warehouse.open`` of a local place inside ``tmp_path`` only: an example's warehouse
        is a fresh one, never one at an absolute path every run (and the reader's machine)
        would share."""
        text = os.fspath(path)
        inside = Path(text).resolve().is_relative_to(tmp_path.resolve())
        assert "://" in text or inside, f"an example opens a warehouse at {text}, outside its place"
        return opening(cls, path, *args, **kwargs)

    monkeypatch.setattr(TableWarehouse, "open", classmethod(open_here))
    if any(m.split(".")[0] == "my_platform" for b in run for m, _ in b.imports()):
        from acid_platform.cli.new import write_project

        write_project(tmp_path / NEW_PROJECT)
        monkeypatch.syspath_prepend(str(tmp_path / NEW_PROJECT / "src"))
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    seen: dict[int, Any] = {}  # every value a block left, by identity: used once, closed at the end
    try:
        for block in run:
            try:
                block.run(namespace)
            finally:
                new = {n: v for n, v in namespace.items() if id(v) not in seen}
                seen |= {id(v): v for v in new.values()}
            _use(new, tmp_path, monkeypatch)
    finally:
        for client in [v for v in seen.values() if isinstance(v, MutatorClient)]:
            client.close()  # clients before warehouses
        for wh in [v for v in seen.values() if isinstance(v, TableWarehouse)]:
            wh.close()
        for module in [m for m in sys.modules if m.split(".")[0] == "my_platform"]:
            del sys.modules[module]


def _use(new: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a block left, used as a reader would: its Dagster definitions must load (as ``dg
    check defs`` loads them), its ``test_*`` functions are called (as pytest would)."""
    if "dagster" in sys.modules:
        from dagster import Definitions

        for value in new.values():
            if isinstance(value, Definitions):
                Definitions.validate_loadable(value)
    for name, value in new.items():
        if name.startswith("test_") and inspect.isfunction(value):
            (tmp_path / name).mkdir()
            fixtures: dict[str, Any] = {"tmp_path": tmp_path / name, "monkeypatch": monkeypatch}
            value(**{p: fixtures[p] for p in inspect.signature(value).parameters})
