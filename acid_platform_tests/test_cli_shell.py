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


def _terminal_session(argv: list[str], home: Path, keys: list[tuple[str, str]]) -> str:
    """Run ``argv`` on a pseudo-terminal; for each ``(wait_for, send)`` wait until the output
    shows ``wait_for``, then type ``send``; returns everything it printed once it exits."""
    import pty
    import select
    import time

    env = {
        **os.environ,
        "HOME": str(home),
        "ACID_HISTORY": str(home / ".acid_history"),
        "TERM": "dumb",
        "COLUMNS": "120",
    }
    pid, fd = pty.fork()
    if pid == 0:  # the child: the shell on the terminal
        os.execvpe(argv[0], argv, env)
    seen = b""

    def read_until(text: str, timeout: float = 60.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while text.encode() not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} in {seen.decode(errors='replace')!r}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"ended before {text!r}: {seen.decode(errors='replace')!r}"
                seen += chunk

    try:
        for wait_for, send in keys:
            read_until(wait_for)
            seen = seen.replace(wait_for.encode(), b"<seen>", 1)  # wait for the next one
            os.write(fd, send.encode())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if not ready:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = 0
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace")


def test_ctrl_d_on_a_terminal_discards_an_unfinished_statement(tmp_path: Path) -> None:
    """``DELETE FROM t`` + Enter + Ctrl-D: the statement was never ended with ';', so the
    interactive shell does not run it (psql and beeline do not either) and says so; the table
    keeps its rows. From a pipe, the same input still runs (as with -f)."""
    warehouse = str(tmp_path / "wh")
    assert _acid("init", warehouse).returncode == 0
    setup = "CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2), (3)"
    assert _acid("sql", "-w", warehouse, "-e", setup).returncode == 0

    def count() -> list[str]:
        done = _acid("sql", "-w", warehouse, "--format", "csv", "-e", "SELECT count(*) FROM t")
        return done.stdout.split()

    shown = _terminal_session(
        [*ACID, "sql", "-w", warehouse],
        tmp_path,
        [("acid> ", "DELETE FROM t\r"), ("-> ", "\x04")],
    )
    assert "discarded the unfinished statement" in " ".join(shown.split()), shown
    assert "deleted" not in shown
    assert count() == ["_c0", "3"]

    piped = _acid("sql", "-w", warehouse, stdin="DELETE FROM t\n", home=tmp_path)
    assert piped.returncode == 0 and "deleted 3 row(s)" in piped.stderr, piped.stderr
    assert count() == ["_c0", "0"]
