"""The ``acid`` command line against hostile and careless input (issue 13, items 9 and 10).

Names given as options never become statement text (no injection), and what goes wrong around
the warehouse (a file in its place, a read-only mount, a broken or newer metastore, an
unreachable PostgreSQL) is one clear line and a non-zero exit, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform.cli import app

TABLE = "CREATE TABLE t (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')"


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    """A warehouse with ``default.t`` holding one row."""
    path = str(tmp_path / "wh")
    for args in (["init", path], ["sql", "-w", path, "-e", f"{TABLE}; INSERT INTO t VALUES (1)"]):
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
    return path


def _rows(wh: str) -> str:
    done = CliRunner().invoke(app, ["sql", "-w", wh, "--format", "csv", "-e", "SELECT a FROM t"])
    assert done.exit_code == 0, done.output
    return done.stdout


def _one_clear_line(result: object, *needles: str) -> None:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 1, output  # type: ignore[attr-defined]
    assert "Traceback" not in output, output
    assert output.startswith("error: "), output
    for needle in needles:
        assert needle in output, output


# --------------------------------------------------------------------------- item 9: injection
@pytest.mark.parametrize(
    "args",
    [
        ["sql", "-d", "default`; DROP TABLE t; --", "-e", "SELECT 1"],
        ["sql", "-d", "default; DROP TABLE t", "-e", "SELECT 1"],
        ["compact", "t COMPACT 'major'; DROP TABLE t; --"],
        ["compact", "t; DROP TABLE t"],
        ["compact", "t", "-p", "a=1) COMPACT 'major'; DROP TABLE t; --"],
        ["compact", "t", "-p", "a=1; DROP TABLE t"],
        ["changes", "t; DROP TABLE t"],
    ],
)
def test_names_from_options_never_become_statement_text(wh: str, args: list[str]) -> None:
    result = CliRunner().invoke(app, [*args[:1], "-w", wh, *args[1:]])
    _one_clear_line(result)
    assert _rows(wh) == "a\n1\n"  # t is still there, with its row


def test_option_names_still_work(wh: str) -> None:
    done = CliRunner().invoke(app, ["sql", "-w", wh, "-e", "CREATE DATABASE other"])
    assert done.exit_code == 0, done.output
    used = CliRunner().invoke(app, ["sql", "-w", wh, "-d", "OTHER", "-e", TABLE])
    assert used.exit_code == 0, used.output
    shown = CliRunner().invoke(app, ["sql", "-w", wh, "-e", "SHOW TABLES IN other"])
    assert "t" in shown.stdout
    missing = CliRunner().invoke(app, ["sql", "-w", wh, "-d", "nope", "-e", "SELECT 1"])
    _one_clear_line(missing, "Database does not exist: nope")
    queued = CliRunner().invoke(app, ["compact", "default.t", "-w", wh, "--major"])
    assert queued.exit_code == 0 and "major compaction of default.t queued" in queued.output
    shown = CliRunner().invoke(app, ["show", "compactions", "-w", wh, "--format", "csv"])
    assert shown.exit_code == 0 and "MAJOR" in shown.stdout
