"""Dagster servers in processes of their own, for the tests and the benchmarks: ``dagster dev``
(webserver and daemon in one command), or ``dagster-webserver`` and ``dagster-daemon run`` apart
— any command lines, started with a given environment, each in a process group of its own,
waited for until GraphQL answers and every code location has loaded, and stopped as whole
process groups. What the processes print goes to one log file per command; a failed wait says
why and ends with the tail of each log.

    home = dagster_home(tmp / "home")                   # the repository's dagster.yaml in it
    env = platform_env(home, tmp / "wh", ACID_CONF="…")  # acid_platform_tests.topology
    with DagsterServer({"dev": dagster_dev_command(port)}, env=env, logs=tmp / "logs",
                       port=port) as server:
        server.wait_ready()
        DagsterApi(server.url).launch("acid_platform")   # acid_platform_tests.dagster_api
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TypeVar

from acid_platform_tests.dagster_api import DagsterApi, DagsterApiError
from acid_platform_tests.pg_server import free_port
from acid_platform_tests.topology import ROOT

T = TypeVar("T")

#: The loopback address every server of the tests binds.
HOST = "127.0.0.1"
#: The workspace ``dagster dev`` and the webserver and daemon load (in the repository root).
WORKSPACE = "workspace.yaml"


class ServerError(AssertionError):
    """A server process died, or what was waited for did not happen in time (with the logs)."""


def bin_path(name: str) -> str:
    """A console script of this interpreter's environment (``dagster``, ``dagster-daemon``…)."""
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else (shutil.which(name) or name)


def dagster_dev_command(port: int, workspace: str = WORKSPACE) -> list[str]:
    """``dagster dev`` on ``workspace``: webserver on 127.0.0.1:``port``, daemon beside it."""
    return [bin_path("dagster"), "dev", "-w", workspace, "-h", HOST, "-p", str(port)]


def webserver_command(port: int, workspace: str = WORKSPACE) -> list[str]:
    """``dagster-webserver`` alone on 127.0.0.1:``port``."""
    return [bin_path("dagster-webserver"), "-w", workspace, "-h", HOST, "-p", str(port)]


def daemon_command(workspace: str = WORKSPACE) -> list[str]:
    """``dagster-daemon run`` alone (sensors, schedules, the run queue)."""
    return [bin_path("dagster-daemon"), "run", "-w", workspace]


def dagster_home(path: Path, config: Path = ROOT / "dagster.yaml") -> Path:
    """A ``DAGSTER_HOME`` at ``path`` configured by ``config`` (the repository's
    ``dagster.yaml``, as ``scripts/platform`` sets it up)."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config, path / "dagster.yaml")
    return path


def poll(
    what: str, check: Callable[[], T | None], timeout_s: float = 180.0, max_pause_s: float = 1.0
) -> T:
    """The first value of ``check()`` that is not ``None`` (or false); polled (pauses growing to
    ``max_pause_s``) until ``timeout_s``, then :class:`ServerError` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    pause = 0.05
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ServerError(f"{what}: not after {timeout_s:g}s")
        time.sleep(pause)  # a poll interval, not a wait for something to happen
        pause = min(pause * 2, max_pause_s)


class DagsterServer:
    """Processes serving Dagster on 127.0.0.1:``port`` (see the module docs). ``commands``
    maps a name (its log file is ``<logs>/<name>.log``) to a command line; ``env`` is added to
    this process's environment; they run in ``cwd`` (default the repository root)."""

    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        *,
        env: Mapping[str, str],
        logs: Path,
        port: int | None = None,
        cwd: Path = ROOT,
    ) -> None:
        self.commands = {name: list(argv) for name, argv in commands.items()}
        self.env = dict(env)
        self.logs = logs
        self.port = port or free_port()
        self.cwd = cwd
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started_at = 0.0
        self._files: list[IO[bytes]] = []

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api(self) -> DagsterApi:
        return DagsterApi(self.url)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> DagsterServer:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.started_at = time.monotonic()
        for name, argv in self.commands.items():
            log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed by stop()
            self._files.append(log)
            self.processes[name] = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a process group of its own, stopped as a whole
            )
        return self

    def wait_ready(self, timeout_s: float = 240.0, max_pause_s: float = 1.0) -> float:
        """Wait until GraphQL answers and every code location has loaded; seconds since
        :meth:`start` (to within ``max_pause_s``)."""
        what = "GraphQL answering with every code location loaded"
        self.wait_for(what, self._ready, timeout_s, max_pause_s)
        return time.monotonic() - self.started_at

    def wait_for(
        self,
        what: str,
        check: Callable[[], T | None],
        timeout_s: float = 180.0,
        max_pause_s: float = 1.0,
    ) -> T:
        """:func:`poll` that also fails at once when a server process has died, and whose
        failure carries the logs."""

        def alive_check() -> T | None:
            dead = {n: p.returncode for n, p in self.processes.items() if p.poll() is not None}
            if dead:
                raise ServerError(f"{what}: server process(es) exited {dead}")
            return check()

        try:
            return poll(what, alive_check, timeout_s, max_pause_s)
        except ServerError as e:
            raise ServerError(f"{e}\n{self.log_tail()}") from None

    def stop(self, grace_s: float = 60.0) -> None:
        """Stop each command as Ctrl-C would (SIGTERM to it: ``dagster dev`` shuts its
        webserver and daemon down), then SIGKILL whatever is left of its process group."""
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            kill_group(proc.pid)
            proc.wait()
        for log in self._files:
            log.close()
        self._files.clear()

    def __enter__(self) -> DagsterServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if error is not None and not isinstance(error, ServerError):
            print(self.log_tail(), file=sys.stderr)  # pytest shows it with the failure

    # ------------------------------------------------------------------ looking at it

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of each command's log."""
        parts = []
        for name in self.commands:
            path = self.logs / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else ""
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {name} ({path}), last {lines} lines:\n{tail}")
        return "\n".join(parts)

    def _ready(self) -> bool:
        try:
            return self.api.locations_loaded()
        except (OSError, DagsterApiError):
            return False  # not listening yet, or the workspace is still loading


def kill_group(pgid: int) -> None:
    """SIGKILL every process left in process group ``pgid`` (a command's descendants)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


__all__ = [
    "HOST",
    "WORKSPACE",
    "DagsterServer",
    "ServerError",
    "bin_path",
    "dagster_dev_command",
    "dagster_home",
    "daemon_command",
    "kill_group",
    "poll",
    "webserver_command",
]
