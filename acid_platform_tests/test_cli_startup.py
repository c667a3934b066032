"""``acid`` starts light and its help reads well (issue 33).

* ``acid --help`` (and a command's ``--help``) imports typer and the CLI's own option modules,
  not the engine: no pyarrow, pandas, DuckDB, sqlglot, SQLAlchemy, Dagster or PySpark, none of
  the warehouse's layers. What is imported is checked, not how long it takes (a timing would
  flake on a loaded machine; on an idle one ``acid --help`` takes about 0.1 s).
* The help wraps its paragraphs at word boundaries to the terminal's width, a flag shows no
  type (``--version``, not ``--version <bool>``) and an option a value name (``-w PATH``).
* The ``acid ingest`` option values repeated to keep the CLI light agree with the loader's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

#: Top-level packages (and project layers) ``acid --help`` must not import: the engine, its
#: storage and SQL libraries, the optional platforms. (pydantic is typer's: it parses a
#: command's parameters, ``--help`` of a command included.)
HEAVY = (
    "pyarrow",
    "numpy",
    "pandas",
    "duckdb",
    "sqlglot",
    "sqlalchemy",
    "alembic",
    "pyorc",
    "dagster",
    "pyspark",
    "acid_platform.format",
    "acid_platform.metastore",
    "acid_platform.table",
    "acid_platform.compaction",
    "acid_platform.engines",
    "acid_platform.streaming",
    "acid_platform.sql",
    "acid_platform.warehouse",
    "acid_platform.orchestration",
)

#: Runs ``acid`` with the given arguments in this process, then prints the modules loaded.
PROBE = """
import json, sys
from acid_platform.cli import run
sys.argv = ["acid", *json.loads(sys.argv[1])]
try:
    run()
except SystemExit:
    pass
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def _acid(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def _loaded(done: subprocess.CompletedProcess[str]) -> list[str]:
    _, _, listed = done.stdout.rpartition("MODULES ")
    modules: list[str] = json.loads(listed)
    return modules


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize("args", [["--help"], [], ["sql", "--help"], ["health", "--help"]])
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    done = _acid(*args)
    assert "Usage: acid" in done.stdout + done.stderr  # no arguments: the help, on stderr
    modules = _loaded(done)
    assert "acid_platform.cli.commands" in modules  # the probe did run the CLI
    assert _heavy(modules) == []


def test_a_command_imports_what_it_needs_when_it_runs(tmp_path: object) -> None:
    """The check above is not vacuous: running a command loads the engine."""
    done = _acid("init", str(tmp_path) + "/wh")
    assert "warehouse created" in done.stderr, done.stderr
    assert {"pyarrow", "sqlalchemy", "acid_platform.warehouse"} <= set(_loaded(done))


def _help_lines(*args: str, columns: int = 80) -> list[str]:
    done = _acid(*args, "--help", columns=columns)
    assert done.returncode == 0, done.stderr
    text = done.stdout.rpartition("\nMODULES ")[0]
    return text.splitlines()


def _unfilled(lines: list[str], width: int) -> list[str]:
    """Lines broken before the width while the next line's first word would have fit: a
    paragraph (or an option's description) broken inside, as when the help printed a
    docstring's own line breaks. click wraps to the terminal's width, at most 80 columns, less
    a margin of 2."""
    width = min(width, 80) - 2
    broken = []
    for line, following in zip(lines, lines[1:], strict=False):
        line = line.rstrip()
        text = following.strip()
        indent = len(following) - len(following.lstrip())
        if not line.strip() or not text or indent != _text_column(line):
            continue  # a paragraph's end, a new section or item: not a continuation
        if len(line) + 1 + len(text.split()[0]) <= width:
            broken.append(f"{line!r} / {following!r}")
    return broken


def _text_column(line: str) -> int:
    """Where the running text of a help line starts: after a definition's term (``  -w,
    --warehouse PATH   Warehouse…``), else at its indentation."""
    indent = len(line) - len(line.lstrip())
    gap = re.search(r"\S {2,}(?=\S)", line)
    return gap.end() if gap else indent


@pytest.mark.parametrize("command", [[], ["sql"], ["health"], ["show"], ["ingest"], ["services"]])
def test_help_wraps_at_word_boundaries_and_flags_show_no_type(command: list[str]) -> None:
    broken = [  # what the issue saw: a docstring's own line break kept in the command list
        "  sql        Run HiveQL statements (one, or a script) on a warehouse; without",
        "             -e or -f, an",
        "             interactive shell (statements end with ';', history in",
    ]
    assert _unfilled(broken, 80) == [f"{broken[1]!r} / {broken[2]!r}"]
    for width in (80, 120):
        lines = _help_lines(*command, columns=width)
        text = "\n".join(lines)
        assert max(len(line) for line in lines) <= width, text
        assert _unfilled(lines, width) == [], text
        assert "<bool>" not in text and "<str>" not in text and "<int>" not in text, text
        assert "--help  " in text or "--help " in text


def test_the_command_list_and_options_read_as_sentences() -> None:
    listing = "\n".join(_help_lines())
    assert "--version  Print acid_platform's version and exit." in listing
    commands = listing.partition("Commands:")[2]
    assert commands.count("\n  ") == 16 and "..." not in commands  # no summary is cut
    sql = " ".join(" ".join(_help_lines("sql")).split())
    assert "without -e or -f, an interactive shell (statements end with ';'" in sql
    assert "-w, --warehouse PATH" in sql and "-e, --execute SQL" in sql
    show = " ".join(" ".join(_help_lines("show")).split())
    assert "WHAT <transactions|locks|compactions>" in show  # a choice's type helps


def test_ingest_repeats_the_loaders_defaults() -> None:
    from acid_platform.cli.ingest import BATCH_SIZE, LandingFormat
    from acid_platform.streaming.landing import DEFAULT_BATCH_SIZE, FileFormat

    assert BATCH_SIZE == DEFAULT_BATCH_SIZE
    assert [f.value for f in LandingFormat] == [f.value for f in FileFormat]
