"""How ``acid`` prints SHOW results (issue 33): a table when it fits the terminal, records only
when asked (``--format vertical``) or when too wide, the column names also without rows;
SHOW COMPACTIONS' duration agrees with its start and commit times; ``acid health`` covers every
database unless one is named."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from acid_platform.cli import app, output
from acid_platform.cli.output import fitted_widths
from acid_platform.metastore.show import (
    SHOW_COMPACTIONS_COLUMNS,
    SHOW_LOCKS_COLUMNS,
    SHOW_TRANSACTIONS_COLUMNS,
)

RECORD = "-[ RECORD 1 ]-"


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture()
def wh(runner: CliRunner, tmp_path: Path) -> str:
    path = str(tmp_path / "wh")
    assert runner.invoke(app, ["init", path]).exit_code == 0
    return path


def _acid(runner: CliRunner, *args: str, columns: int = 80) -> tuple[str, str]:
    """``acid ARGS`` on a terminal ``columns`` wide. (rich reads COLUMNS once, when a console
    is made: in this process, when the first command imported the printing, maybe under
    pytest-xdist's COLUMNS=80; so the rows' console is replaced for the command.)"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output, "out", Console(highlight=False, soft_wrap=False, width=columns))
        result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


@pytest.mark.parametrize("output", ["table", "vertical"])
@pytest.mark.parametrize("what", ["transactions", "locks", "compactions"])
def test_show_without_rows_prints_its_header(
    runner: CliRunner, wh: str, what: str, output: str
) -> None:
    columns = {
        "transactions": SHOW_TRANSACTIONS_COLUMNS,
        "locks": SHOW_LOCKS_COLUMNS,
        "compactions": SHOW_COMPACTIONS_COLUMNS,
    }[what]
    for width in (80, 300):
        stdout, stderr = _acid(runner, "show", what, "-w", wh, "--format", output, columns=width)
        words = stdout.replace("\u00a0", " ").split()
        for name in columns:  # every column's name, however wrapped
            assert all(word in words or word in stdout for word in name.split()), stdout
        assert "0 row(s)" in stderr and RECORD not in stdout
        assert max(len(line) for line in stdout.splitlines()) <= width
        if width == 300:  # a boxed header with the names whole
            assert all(name in stdout for name in columns), stdout


def _compactions(runner: CliRunner, wh: str, count: int) -> None:
    """``count`` compactions of a table, cleaned: ``succeeded`` entries in the history."""
    setup = "CREATE TABLE t (id int, name string); INSERT INTO t VALUES (1, 'a'), (2, 'b');"
    _acid(runner, "sql", "-w", wh, "-e", setup)
    for i in range(count):
        _acid(runner, "sql", "-w", wh, "-e", f"UPDATE t SET name = 'n{i}' WHERE id = 1")
        _acid(runner, "compact", "t", "-w", wh, "--major", "--wait")
    _acid(runner, "clean", "-w", wh)


def test_show_compactions_is_a_table_when_it_fits_records_when_asked_or_too_wide(
    runner: CliRunner, wh: str
) -> None:
    _compactions(runner, wh, 3)
    stdout, stderr = _acid(runner, "show", "compactions", "-w", wh, columns=250)
    lines = stdout.splitlines()
    assert RECORD not in stdout and "3 row(s)" in stderr
    assert max(len(line) for line in lines) <= 250
    header = next(line for line in lines if "CompactionId" in line)
    assert "Database" in header and "Enqueue Time" in header  # one table, header on top
    assert sum("succeeded" in line for line in lines) == 3  # one line per compaction
    for row in _show_compactions_json(runner, wh):  # every value, a timestamp maybe wrapped
        assert all(part in stdout for value in row.values() for part in value.split())
    wide, _ = _acid(runner, "show", "compactions", "-w", wh, columns=300)
    for row in _show_compactions_json(runner, wh):  # room enough: every value on one line
        assert all(value in wide for value in row.values())

    asked, _ = _acid(runner, "show", "compactions", "-w", wh, "--format", "vertical", columns=250)
    assert asked.count("-[ RECORD") == 3 and "CompactionId" in asked
    narrow, _ = _acid(runner, "show", "compactions", "-w", wh, columns=80)
    assert narrow.count("-[ RECORD") == 3
    assert max(len(line) for line in narrow.splitlines()) <= 80


def _show_compactions_json(runner: CliRunner, wh: str) -> list[dict[str, str]]:
    stdout, _ = _acid(runner, "sql", "-w", wh, "-e", "SHOW COMPACTIONS", "--format", "json")
    rows: list[dict[str, str]] = json.loads(stdout)
    return rows


def _millis(stamp: str) -> int:
    moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def test_show_compactions_duration_is_start_to_commit(runner: CliRunner, wh: str) -> None:
    """Not start to cleaned: the cleaner comes by later (here a second later; in the issue
    137 s later for a compaction of 0.25 s)."""
    _acid(runner, "sql", "-w", wh, "-e", "CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
    _acid(runner, "sql", "-w", wh, "-e", "UPDATE t SET id = 2")
    _acid(runner, "compact", "t", "-w", wh, "--major", "--wait")
    (ready,) = _show_compactions_json(runner, wh)
    assert ready["State"] == "ready for cleaning"
    assert int(ready["Duration(ms)"]) == _millis(ready["Commit Time"]) - _millis(
        ready["Start Time"]
    )
    import time

    time.sleep(1.2)
    _acid(runner, "clean", "-w", wh)
    (done,) = _show_compactions_json(runner, wh)
    assert done["State"] == "succeeded"
    assert done["Duration(ms)"] == ready["Duration(ms)"]  # cleaning took none of it
    assert int(done["Duration(ms)"]) < 1200


def test_health_covers_every_database_unless_one_is_named(runner: CliRunner, wh: str) -> None:
    script = (
        "CREATE TABLE t (id int); INSERT INTO t VALUES (1);"
        "CREATE DATABASE retail; CREATE TABLE retail.orders (id int);"
        "INSERT INTO retail.orders VALUES (1)"
    )
    _acid(runner, "sql", "-w", wh, "-e", script)

    def tables(*args: str) -> list[str]:
        stdout, _ = _acid(runner, "health", "-w", wh, "--format", "json", *args)
        return sorted({row["tab_name"] for row in json.loads(stdout)})

    assert tables() == ["default.t", "retail.orders"]
    assert tables("-d", "retail") == ["retail.orders"]
    assert tables("retail.orders") == ["retail.orders"]
    assert tables("orders") == ["retail.orders"]  # a name alone: in whichever database
    assert tables("-d", "default") == ["default.t"]
    stdout, stderr = _acid(runner, "health", "-w", wh)
    assert "2 row(s)" in stderr


def test_fitted_widths() -> None:
    names = ["id", "Error message", "Start Time"]
    message = "compaction failed because the worker ran out of disk space"
    cells: list[list[str | None]] = [["1", "2"], [None, message], ["2026-01-02 03:04:05.678"] * 2]
    natural = [2, len(message), 23]
    assert fitted_widths(names, cells, 200) == natural  # fits as it is
    room = 60 - (3 * 3 + 1)
    widths = fitted_widths(names, cells, 60)  # the message wraps at its spaces
    assert widths is not None and sum(widths) == room
    assert widths[0] == 2 and widths[2] == 23  # an id and a timestamp never wrap
    assert widths[1] >= len("compaction")  # the longest word of the message
    squeezed = fitted_widths(names, cells, 40)  # the timestamp too: date above time
    assert squeezed is not None and squeezed[2] == len("03:04:05.678") and sum(squeezed) == 30
    assert fitted_widths(names, cells, 30) is None  # records then
    assert fitted_widths(["Worker host"], [["h"]], 10) == [6]  # a header wraps at its spaces
