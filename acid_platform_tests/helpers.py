"""What the tests share: where the fixtures and the database servers are, a fresh warehouse or
metastore namespace per test, and ways to look at what a table left on disk.

Conftests build their fixtures from these; tests import them from here (never from another
test module or a conftest of another package).
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pyarrow.orc as po
import pytest
from sqlalchemy import create_engine, delete, event, text, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlglot.parser import Parser
from sqlglot.tokens import Token

from acid_platform import Warehouse
from acid_platform.compaction.hooks import on_checkpoint
from acid_platform.format.fs import resolve
from acid_platform.metastore import Metastore, TableSpec
from acid_platform.metastore.schema import acid_sequences, metadata
from acid_platform_tests.s3_server import S3Server

#: The Hive- and Trino-written tables the conformance tests read (see ``fixtures/NOTICE``).
REPO_ROOT = Path(__file__).resolve().parents[1]
HIVE_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hive_written"

#: Where the PostgreSQL tests find their server; ``scripts/with-postgres`` exports it after
#: starting a throwaway server when nothing answers at the default.
PG_URL_ENV = "ACID_TEST_PG_URL"
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PG_URL = os.environ.get(PG_URL_ENV, DEFAULT_PG_URL)
MYSQL_URL = os.environ.get("ACID_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")

ACID_DIR_PREFIXES = ("base_", "delta_", "delete_delta_")

_engines: dict[str, Engine] = {}


# --------------------------------------------------------------------------- metastore databases


def fresh_namespace(backend: str, tmp: Path) -> tuple[str, Callable[[], None]]:
    """A new empty metastore database: (url, cleanup). SQLite is a file in ``tmp``; PostgreSQL
    a uniquely named schema and MySQL a uniquely named database, dropped by ``cleanup``. An
    unreachable server fails the test (it is never skipped)."""
    name = f"acid_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    if backend == "sqlite":
        return f"sqlite:///{tmp / '_metastore.db'}", lambda: None
    if backend == "postgresql":
        return _server_namespace(
            PG_URL,
            f'CREATE SCHEMA "{name}"',
            f'DROP SCHEMA IF EXISTS "{name}" CASCADE',
            {"options": f"-csearch_path={name}"},
            None,
        )
    if backend == "mysql":
        return _server_namespace(
            MYSQL_URL,
            f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4",
            f"DROP DATABASE IF EXISTS `{name}`",
            {},
            name,
        )
    raise ValueError(f"unknown test backend {backend!r}")


def fresh_pg_database(label: str) -> tuple[str, Callable[[], None]]:
    """A new empty database on the tests' PostgreSQL server (for a service that wants a whole
    database, as Dagster's storage does): (url, cleanup); ``cleanup`` drops it, ending the
    sessions still open on it."""
    name = f"acid_{label}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    return _server_namespace(
        PG_URL,
        f'CREATE DATABASE "{name}"',
        f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
        {},
        name,
    )


def _server_namespace(
    server_url: str, create: str, drop: str, query: dict[str, str], database: str | None
) -> tuple[str, Callable[[], None]]:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(create))
    except OperationalError as exc:  # a missing server fails the test, it is never skipped
        admin.dispose()
        hint = (
            f"set {PG_URL_ENV} or run the tests under scripts/with-postgres"
            if server_url == PG_URL
            else "set ACID_TEST_MYSQL_URL"
        )
        pytest.fail(f"no database server answers at {server_url} ({hint}): {exc.orig}")
    url = make_url(server_url).update_query_dict(query)
    if database is not None:
        url = url.set(database=database)
    rendered = url.render_as_string(hide_password=False)

    def cleanup() -> None:
        engine = _engines.pop(rendered, None)
        if engine is not None:
            engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(drop))
        admin.dispose()

    return rendered, cleanup


def reset_store(url: str) -> None:
    """Empty every metastore table and restart the id sequences at 1."""
    if url not in _engines:
        _engines[url] = create_engine(url)
    with _engines[url].begin() as conn:
        for table in reversed(metadata.sorted_tables):
            if table is not acid_sequences:
                conn.execute(delete(table))
        conn.execute(update(acid_sequences).values(next_val=1))


def make_table(ms: Metastore, db: str = "db", name: str = "t", partitioned: bool = False) -> None:
    """Register a transactional table ``db.name`` (one int column ``id``) in ``ms``."""
    if db not in ms.list_databases():
        ms.create_database(db)
    ms.create_table(
        TableSpec(
            db,
            name,
            (("id", "int"),),
            partition_columns=(("p", "string"),) if partitioned else (),
            location=f"/wh/{db}/{name}",
            properties={"transactional": "true"},
        )
    )


# --------------------------------------------------------------------------- processes


def spawn_module(
    module: str, args: Sequence[object], stderr: Any = subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """``python -m module args…`` with this checkout importable (tests kill these processes)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, args)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


# --------------------------------------------------------------------------- warehouses


@contextmanager
def open_warehouse(
    tmp_path: Path,
    conf: Mapping[str, str] | None = None,
    backend: str = "sqlite",
    s3: S3Server | None = None,
) -> Iterator[Warehouse]:
    """A warehouse in ``tmp_path / "wh"``, closed afterwards. On ``sqlite`` its metastore is the
    file inside it; on another backend a fresh namespace of that server (dropped afterwards).
    With ``s3`` the warehouse is in a fresh bucket of that S3 server instead (its SQLite
    metastore stays in ``tmp_path``)."""
    url, cleanup = (None, None) if backend == "sqlite" else fresh_namespace(backend, tmp_path)
    root: str | Path = tmp_path / "wh"
    storage = None
    if s3 is not None:
        root, storage = f"s3://{s3.new_bucket()}/wh", s3.options()
        url = url or f"sqlite:///{tmp_path / 'metastore.db'}"
    warehouse = Warehouse.open(root, url, conf=conf, storage=storage)
    try:
        yield warehouse
    finally:
        warehouse.close()
        if cleanup is not None:
            cleanup()


def warehouse_fixture(
    *,
    conf: Mapping[str, str] | None = None,
    backends: Sequence[str] | None = None,
    spark: bool = False,
) -> Any:
    """A ``wh`` fixture for a conftest: a fresh warehouse per test (see :func:`open_warehouse`).

    ``backends`` parametrizes where it runs: a metastore (``sqlite``, ``postgresql``) on local
    disk, or ``s3`` (a bucket of the session's S3 server, SQLite metastore); default SQLite
    only, unparametrized. ``spark`` registers it with the session's ``spark`` fixture as the
    ``acid`` source."""

    @pytest.fixture(name="wh", params=list(backends) if backends else None)
    def wh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Warehouse]:
        backend = getattr(request, "param", "sqlite")
        s3 = request.getfixturevalue("s3") if backend == "s3" else None
        with open_warehouse(tmp_path, conf, "sqlite" if s3 else backend, s3) as warehouse:
            if spark:
                warehouse.register_spark(request.getfixturevalue("spark"))
            yield warehouse

    return wh


# --------------------------------------------------------------------------- what is on disk


def copy_nation_table(dest: Path) -> Path:
    """Trino's Hive-written 25,000-row nation table at ``dest``: the insert of write id 2 and the
    DELETEs of write ids 3 and 4 (5 and 19 of the 25 nation keys)."""
    delta = dest / "delta_0000002_0000002_0000"
    delta.mkdir(parents=True)
    shutil.copy(HIVE_FIXTURES / "trino/nationFile25kRowsSortedOnNationKey/bucket_00000", delta)
    for d in (HIVE_FIXTURES / "trino/nation_delete_deltas").iterdir():
        shutil.copytree(d, dest / d.name)
    return dest


def acid_dirs(path: str | os.PathLike[str]) -> list[str]:
    """The base/delta/delete_delta directory names directly under a table or partition, sorted:
    a local path or a store URI (``s3://…`` of an open warehouse, see :class:`StorePath`)."""
    loc = resolve(os.fspath(path))
    infos = loc.filesystem.get_file_info(pafs.FileSelector(loc.path))
    return sorted(i.base_name for i in infos if i.base_name.startswith(ACID_DIR_PREFIXES))


def acid_dirs_of(wh: Warehouse, location: str) -> list[str]:
    """The base/delta/delete_delta directory names directly under ``location``, on whichever
    store the warehouse is."""
    loc = resolve(location, wh.filesystem_for(location))
    infos = loc.filesystem.get_file_info(pafs.FileSelector(loc.path, allow_not_found=True))
    return sorted(
        i.base_name
        for i in infos
        if i.type == pafs.FileType.Directory and i.base_name.startswith(ACID_DIR_PREFIXES)
    )


def events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The ACID events of one ORC bucket file, as dicts (a local path or a store URI)."""
    loc = resolve(os.fspath(path))
    with loc.filesystem.open_input_file(loc.path) as f:
        return po.read_table(f).to_pylist()


def data_files(root: str | Path) -> set[str]:
    """Every file and directory under a warehouse, relative to it (the metastore and the mark
    naming it excluded)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not rel.startswith(("_metastore", "_acid_metastore")):
                out.add(rel)
    return out


def count_parses(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """From now on (for the test), count every sqlglot parse by the text parsed (its tokens,
    joined by spaces): the SQL layer's statements, the table API's expressions and queries."""
    parses: collections.Counter[str] = collections.Counter()
    original = Parser.parse

    def parse(self: Parser, raw_tokens: list[Token], sql: str) -> Any:
        parses[" ".join(t.text for t in raw_tokens)] += 1
        return original(self, raw_tokens, sql)

    monkeypatch.setattr(Parser, "parse", parse)
    return parses


# --------------------------------------------------------------------------- what databases are sent


class SentStatements:
    """While entered, what every SQLAlchemy engine sends: each statement, as one upper-case
    line with the number of database transactions committed before it (which transaction it
    ran in), and the COMMITs."""

    def __init__(self) -> None:
        self.commits = 0
        self.statements: list[tuple[int, str]] = []

    def __enter__(self) -> SentStatements:
        event.listen(Engine, "commit", self._commit)
        event.listen(Engine, "before_cursor_execute", self._statement)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(Engine, "commit", self._commit)
        event.remove(Engine, "before_cursor_execute", self._statement)

    def _commit(self, *_: Any) -> None:
        self.commits += 1

    def _statement(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        self.statements.append((self.commits, " ".join(statement.split()).upper()))

    @property
    def total(self) -> int:
        """Statements and COMMITs sent (as ``benchmarks/bench_limits.py`` counts them)."""
        return len(self.statements) + self.commits

    def transactions_of(self, *prefixes: str) -> list[int]:
        """The transaction (commits before it) of each statement beginning with one of
        ``prefixes`` (upper case), in order."""
        return [n for n, text in self.statements if text.startswith(prefixes)]


# --------------------------------------------------------------------------- test artifacts


def artifacts_dir(*parts: str) -> Path:
    """A directory for what a test keeps for people to look at (screenshots, server logs):
    ``$ACID_TEST_ARTIFACTS`` or ``test-artifacts/`` in the repository (gitignored), then
    ``parts``."""
    default = Path(__file__).resolve().parents[1] / "test-artifacts"
    root = Path(os.environ.get("ACID_TEST_ARTIFACTS") or default)
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


#: A child process started by :func:`kill_compaction_at` pauses at this step (test-only
#: settings, read by :func:`pause_if_asked` in the child, never by the package).
PAUSE_AT_ENV = "ACID_TEST_PAUSE_AT"
PAUSE_FILE_ENV = "ACID_TEST_PAUSE_FILE"


@contextmanager
def pause_if_asked() -> Iterator[None]:
    """In a test's child process: with ``ACID_TEST_PAUSE_AT=<step>`` set, announce the step
    (the pid and step into ``ACID_TEST_PAUSE_FILE``, atomically) and block until killed."""
    step = os.environ.get(PAUSE_AT_ENV)
    if not step:
        yield
        return

    def pause(reached: str) -> None:
        if reached != step:
            return
        marker = os.environ.get(PAUSE_FILE_ENV)
        if marker:
            Path(f"{marker}.tmp").write_text(f"{os.getpid()} {reached}\n")
            os.replace(f"{marker}.tmp", marker)  # the reader never sees a half-written marker
        while True:  # until killed
            signal.pause()

    with on_checkpoint(pause):
        yield


def kill_compaction_at(step: str, cmd: str, url: str, tmp: Path) -> None:
    """Start ``procs <cmd> <metastore url>`` paused at ``step``, wait until it is there, kill -9 it."""
    marker = tmp / f"paused-{step}"
    env = dict(os.environ, **{PAUSE_AT_ENV: step, PAUSE_FILE_ENV: str(marker)})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "acid_platform_tests.compaction.procs", cmd, url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"{cmd} exited ({proc.returncode}) before {step}: {err}")
            assert time.monotonic() < deadline, f"{cmd} never reached {step}"
            time.sleep(0.01)
        pid, reached = marker.read_text().split()
        assert (int(pid), reached) == (proc.pid, step)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def poll(condition: Callable[[], bool], what: str, deadline_s: float = 90.0) -> None:
    """Wait until ``condition()`` holds (checked every 50 ms), failing after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what} after {deadline_s:g}s")
        time.sleep(0.05)  # a poll interval, not a wait for something to happen
