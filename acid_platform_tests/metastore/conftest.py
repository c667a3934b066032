"""Fixtures: every metastore test runs on SQLite and on PostgreSQL (never skipped).

Each test module gets its own SQLite file and its own uniquely named PostgreSQL schema (dropped
afterwards), so parallel and earlier runs never meet; between tests the tables are emptied and
the id sequences reset. ``ACID_TEST_PG_URL`` points at the server
(default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``); an unreachable server fails the
run. ``ACID_TEST_BACKENDS`` (default ``sqlite,postgresql``) may add ``mysql``
(``ACID_TEST_MYSQL_URL``, default ``mysql+pymysql://root@127.0.0.1:3306/test``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, delete, text, update
from sqlalchemy.engine import Engine, make_url

from acid_platform.metastore import Metastore
from acid_platform.metastore.schema import acid_sequences, metadata

PG_URL = os.environ.get("ACID_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("ACID_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
BACKENDS = [b for b in os.environ.get("ACID_TEST_BACKENDS", "sqlite,postgresql").split(",") if b]

_engines: dict[str, Engine] = {}


class FakeClock:
    """An injectable clock (seconds since the epoch) that only moves when told to."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _engine(url: str) -> Engine:
    if url not in _engines:
        _engines[url] = create_engine(url)
    return _engines[url]


def _fresh_namespace(backend: str, tmp: Path) -> tuple[str, object]:
    """A new empty database for one module: (url, cleanup callable)."""
    name = f"acid_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    if backend == "sqlite":
        return f"sqlite:///{tmp / '_metastore.db'}", lambda: None
    if backend == "postgresql":
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{name}"'))
        url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={name}"})

        def drop_pg() -> None:
            _dispose(url.render_as_string(hide_password=False))
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
            admin.dispose()

        return url.render_as_string(hide_password=False), drop_pg
    if backend == "mysql":
        admin = create_engine(MYSQL_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        url = make_url(MYSQL_URL).set(database=name)

        def drop_mysql() -> None:
            _dispose(url.render_as_string(hide_password=False))
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
            admin.dispose()

        return url.render_as_string(hide_password=False), drop_mysql
    raise ValueError(f"unknown test backend {backend!r}")


def _dispose(url: str) -> None:
    engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


def reset_store(url: str) -> None:
    """Empty every metastore table and restart the id sequences at 1."""
    with _engine(url).begin() as conn:
        for table in reversed(metadata.sorted_tables):
            if table is not acid_sequences:
                conn.execute(delete(table))
        conn.execute(update(acid_sequences).values(next_val=1))


@pytest.fixture(scope="module", params=BACKENDS)
def module_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    url, cleanup = _fresh_namespace(request.param, tmp_path_factory.mktemp("metastore"))
    Metastore(url).close()  # create the schema once per module
    try:
        yield url
    finally:
        cleanup()  # type: ignore[operator]


@pytest.fixture
def url(module_url: str) -> str:
    """A metastore URL whose tables are empty."""
    reset_store(module_url)
    return module_url


@pytest.fixture
def backend(url: str) -> str:
    return make_url(url).get_backend_name()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ms(url: str, clock: FakeClock) -> Iterator[Metastore]:
    """A metastore on an empty database, with a fake clock and a 300 s txn time-out."""
    store = Metastore(url, clock=clock)
    try:
        yield store
    finally:
        store.close()
