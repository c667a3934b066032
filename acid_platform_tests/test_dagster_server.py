"""The server harness itself (``acid_platform_tests.dagster_server``), on small real processes:
a command that dies is reported with its log, and stopping leaves nothing of its process group
behind — not even a child that ignores SIGTERM."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acid_platform_tests.dagster_server import DagsterServer, ServerError, poll

#: Starts a child that ignores SIGTERM, prints its pid, then waits for a signal.
STUBBORN = """
import signal, subprocess, sys
child = subprocess.Popen([sys.executable, "-c",
    "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); signal.pause()"],
    stdout=subprocess.PIPE, text=True)
child.stdout.readline()
print(f"child {child.pid}", flush=True)
signal.pause()
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # zombies are gone
    except FileNotFoundError:
        return False


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    server = DagsterServer({"stubborn": [sys.executable, "-c", STUBBORN]}, env={}, logs=tmp_path)
    with server:
        log = tmp_path / "stubborn.log"

        def child_pid() -> int | None:
            text = log.read_text()
            return int(text.split()[1]) if text.startswith("child ") else None

        child = server.wait_for("the child's pid", child_pid, 60)
        (proc,) = server.processes.values()
        assert os.getpgid(child) == proc.pid  # the command's own group
    server.stop(grace_s=0.5)  # already stopped: stopping again is harmless
    poll("the child to be gone", lambda: not alive(child), 30)
    assert proc.returncode is not None


def test_a_command_that_dies_is_reported_with_its_log(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "print('cannot bind 127.0.0.1:3000'); raise SystemExit(3)"]
    server = DagsterServer({"webserver": command}, env={}, logs=tmp_path)
    with server, pytest.raises(ServerError) as failed:
        server.wait_ready(timeout_s=60)
    text = str(failed.value)
    assert "exited {'webserver': 3}" in text and "cannot bind 127.0.0.1:3000" in text


def test_poll_returns_the_first_answer_or_names_what_never_came() -> None:
    answers = iter([None, 0, "", "yes"])
    assert poll("an answer", lambda: next(answers), 10) == "yes"
    with pytest.raises(ServerError, match="the impossible: not after 0.2s"):
        poll("the impossible", lambda: None, 0.2)
