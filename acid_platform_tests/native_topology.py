"""Servers the tests run as separate OS processes on 127.0.0.1, and waiting for them.

:class:`Processes` starts each server in a process group of its own (its output in a log file),
waits for a state by polling with a deadline — failing at once, with every log, when a server it
started has exited — and stops them all, process groups included (a Spark worker's executors, a
Dagster daemon's code servers and runs), newest first::

    with Processes(tmp_path / "logs") as procs:
        procs.start("web", ["dagster-webserver", "-h", "127.0.0.1", "-p", str(port)], env)
        procs.wait_for("the webserver answers", lambda: http_json(f"{url}/server_info"))
        ...  # a failed assertion here has the logs appended by the test (procs.logs())
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from acid_platform.engines.spark.cluster import stop_process_group
from acid_platform_tests.pg_server import free_port

T = TypeVar("T")

LOOPBACK = "127.0.0.1"
#: How long a stopping process group gets after SIGTERM before SIGKILL.
STOP_GRACE_S = 20.0
#: Characters of each log a failure shows.
LOG_TAIL = 6000


class ServerFailure(AssertionError):
    """A server exited, or a state was not reached in time (the message has the logs)."""


@dataclass
class Server:
    """One started process (the leader of its process group) and its log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]

    @property
    def exited(self) -> bool:
        return self.proc.poll() is not None

    def tail(self, chars: int = LOG_TAIL) -> str:
        self.log.flush()
        text = self.log_path.read_text(errors="replace")
        return text[-chars:]


def http_json(url: str, timeout_s: float = 5.0) -> Any | None:
    """The JSON an HTTP GET of ``url`` returns; ``None`` while nothing answers or the answer is
    not 200 with JSON."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def graphql(port: int, query: str, variables: Mapping[str, Any] | None = None) -> Any | None:
    """The ``data`` of a GraphQL query to the Dagster webserver on 127.0.0.1:``port``; ``None``
    while it does not answer."""
    request = urllib.request.Request(
        f"http://{LOOPBACK}:{port}/graphql",
        data=json.dumps({"query": query, "variables": dict(variables or {})}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read()).get("data")
    except (OSError, ValueError, urllib.error.URLError):
        return None


LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def code_location_loaded(port: int, name: str) -> bool:
    """Whether the Dagster webserver on ``port`` has loaded code location ``name``; a location
    that failed to load fails the test (with Dagster's error)."""
    data = graphql(port, LOCATIONS)
    if not data or "locationEntries" not in data["workspaceOrError"]:
        return False
    for entry in data["workspaceOrError"]["locationEntries"]:
        if entry["name"] != name or entry["loadStatus"] != "LOADED":
            continue
        loaded = entry["locationOrLoadError"] or {}
        if loaded.get("__typename") == "PythonError":
            raise ServerFailure(f"code location {name} failed to load: {loaded.get('message')}")
        return True
    return False


class Processes:
    """Servers started by a test, stopped together (see module docs)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.servers: list[Server] = []

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None
    ) -> Server:
        """Start ``argv`` as server ``name`` in a new session (its own process group), stdout
        and stderr to ``<log_dir>/<name>.log``."""
        log_path = self.log_dir / f"{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        try:
            proc = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            log.close()
            raise
        server = Server(name, proc, log_path, log)
        self.servers.append(server)
        return server

    def check_alive(self) -> None:
        """Fail (with the logs) if a server has exited."""
        dead = [s for s in self.servers if s.exited]
        if dead:
            codes = ", ".join(f"{s.name} (exit status {s.proc.returncode})" for s in dead)
            raise ServerFailure(f"server(s) exited: {codes}\n{self.logs()}")

    def wait_for(self, what: str, probe: Callable[[], T | None], timeout_s: float = 180.0) -> T:
        """Poll ``probe`` until it returns something true and return that; fail with the logs
        when ``timeout_s`` passes or a server exits first."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.check_alive()
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise ServerFailure(f"not within {timeout_s:.0f} s: {what}\n{self.logs()}")
            time.sleep(0.5)

    def logs(self, chars: int = LOG_TAIL) -> str:
        """The end of every server's log, each under its name."""
        return "\n".join(
            f"----- {s.name} (pid {s.proc.pid}, {s.log_path}) -----\n{s.tail(chars)}"
            for s in self.servers
        )

    def stop(self) -> None:
        """Stop every server's process group, newest first: SIGTERM, then SIGKILL after
        :data:`STOP_GRACE_S`; then SIGKILL whatever is left of each group."""
        for server in reversed(self.servers):
            stop_process_group(server.proc, STOP_GRACE_S)
        for server in self.servers:
            server.log.close()
        self.servers.clear()

    def __enter__(self) -> Processes:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = [
    "LOOPBACK",
    "Processes",
    "Server",
    "ServerFailure",
    "code_location_loaded",
    "free_port",
    "graphql",
    "http_json",
]
