"""``acid sql`` without -e / -f (the shell, fed through a pipe in a real process) and
``acid --version``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import acid_platform

ACID = [sys.executable, "-m", "acid_platform.cli"]


def _acid(
    *args: str, stdin: str = "", home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = None
    if home is not None:
        env = {**os.environ, "HOME": str(home), "ACID_HISTORY": str(home / ".acid_history")}
    return subprocess.run(
        [*ACID, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_version() -> None:
    done = _acid("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"acid_platform {acid_platform.__version__}"


def test_the_shell_reads_statements_from_a_pipe(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    assert _acid("init", warehouse).returncode == 0
    script = "\n".join(
        [
            "CREATE TABLE t (id int, name string)",
            "  STORED AS ORC;",  # one statement over two lines
            "INSERT INTO t VALUES (1, 'a;b'),",
            "  (2, 'c'); SELECT count(*) AS n FROM t;",  # two statements, ';' in a text
            "SELECT * FROM no_such_table;",  # an error does not end the shell
            "SELECT id, name",
            "FROM t ORDER BY id;",
        ]
    )
    done = _acid("sql", "-w", warehouse, "--format", "json", stdin=script, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no_such_table" in done.stderr and "error:" in done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert results == [[{"n": 2}], [{"id": 1, "name": "a;b"}, {"id": 2, "name": "c"}]]
    assert "acid>" not in done.stdout + done.stderr  # no prompts on a pipe


def test_quit_ends_the_shell_and_rolls_back_an_open_transaction(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    assert _acid("init", warehouse).returncode == 0
    script = "CREATE TABLE t (id int);\nBEGIN;\nINSERT INTO t VALUES (1);\nquit;\nSELECT 1;\n"
    done = _acid("sql", "-w", warehouse, "--format", "csv", stdin=script, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # SELECT 1 after quit never ran
    assert "rolled back" in done.stderr
    after = _acid("sql", "-w", warehouse, "--format", "csv", "-e", "SELECT count(*) AS n FROM t")
    assert after.stdout.split() == ["n", "0"], after.stderr


def test_set_notes_and_warnings_print_on_stderr(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    assert _acid("init", warehouse).returncode == 0
    script = "SET hive.support.concurrency=true;\nSET hive.txn.timout=10s;\n"
    done = _acid("sql", "-w", warehouse, stdin=script, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "note: hive.support.concurrency has no effect here" in done.stderr
    assert (
        "warning: hive.txn.timout is not a setting known here; did you mean hive.txn.timeout?"
        in " ".join(done.stderr.split())
    )
    assert "note: warning" not in done.stderr
