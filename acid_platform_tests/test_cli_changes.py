"""``acid changes``: the change feed on the command line (JSON, CSV and table output, the range
and key options, a range below a major compaction's base as one red line and status 1)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform.cli import app

SCRIPT = """
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000);
UPDATE employee SET salary = 7000 WHERE id = 2;
DELETE FROM employee WHERE id = 3;
"""


@pytest.fixture()
def wh(tmp_path: Path) -> str:
    """A warehouse with ``employee`` after write ids 1 (INSERT), 2 (UPDATE), 3 (DELETE)."""
    runner = CliRunner()
    path = str(tmp_path / "wh")
    assert runner.invoke(app, ["init", path]).exit_code == 0
    result = runner.invoke(app, ["sql", "-w", path, "-e", SCRIPT])
    assert result.exit_code == 0, result.output
    return path


def test_changes_as_json_with_a_key(wh: str) -> None:
    result = CliRunner().invoke(
        app, ["changes", "employee", "-w", wh, "--from", "1", "--key", "id", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert [
        (r["_write_id"], r["_change_type"], r["id"], r["salary"], r["row__id"]["writeid"])
        for r in json.loads(result.stdout)
    ] == [
        (2, "update_preimage", 2, 8000, 1),
        (2, "update_postimage", 2, 7000, 2),
        (3, "delete", 3, 6000, 1),
    ]
    assert "3 change(s) of default.employee after write id 1 up to 3" in result.stderr


def test_changes_as_csv_and_table_within_a_range(wh: str) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["changes", "default.employee", "-w", wh, "--to", "2", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["id", "name", "salary", "_change_type", "_write_id", "row__id"]
    assert [(r[3], r[4], r[0]) for r in rows[1:]] == [
        ("insert", "1", "1"),
        ("insert", "1", "2"),
        ("insert", "1", "3"),
        ("delete", "2", "2"),
        ("insert", "2", "2"),
    ]
    table = runner.invoke(app, ["changes", "employee", "-w", wh, "--where", "id = 3"])
    assert table.exit_code == 0, table.output
    assert "_change_type" in table.stdout and "Kate" in table.stdout
    assert "2 change(s)" in table.stderr


def test_history_below_a_major_compaction_is_a_user_error(wh: str) -> None:
    runner = CliRunner()
    compact = runner.invoke(app, ["compact", "employee", "-w", wh, "--major", "--wait"])
    assert compact.exit_code == 0, compact.output
    result = runner.invoke(app, ["changes", "employee", "-w", wh, "--from", "2"])
    assert result.exit_code == 1
    assert "ChangeHistoryUnavailableError" in result.stderr
    assert "earliest from_write_id these partitions answer is 3" in " ".join(result.stderr.split())
    bad = runner.invoke(app, ["changes", "employee", "-w", wh, "--from", "2", "--to", "9"])
    assert bad.exit_code == 1 and "InvalidChangeRangeError" in bad.stderr
    later = runner.invoke(app, ["changes", "employee", "-w", wh, "--from", "3"])
    assert later.exit_code == 0 and "0 change(s)" in later.stderr
