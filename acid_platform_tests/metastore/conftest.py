"""Fixtures: every metastore test runs on SQLite and on PostgreSQL (never skipped).

Each test module gets its own SQLite file and its own uniquely named PostgreSQL schema (dropped
afterwards), so parallel and earlier runs never meet; between tests the tables are emptied and
the id sequences reset. The servers are the ones named in :mod:`acid_platform_tests.helpers`
(``ACID_TEST_PG_URL``, ``ACID_TEST_MYSQL_URL``); an unreachable server fails the run.
``ACID_TEST_BACKENDS`` (default ``sqlite,postgresql``) may add ``mysql``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import make_url

from acid_platform.metastore import Metastore
from acid_platform_tests.helpers import fresh_namespace, reset_store

BACKENDS = [b for b in os.environ.get("ACID_TEST_BACKENDS", "sqlite,postgresql").split(",") if b]


class FakeClock:
    """An injectable clock (seconds since the epoch) that only moves when told to."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module", params=BACKENDS)
def module_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    url, cleanup = fresh_namespace(request.param, tmp_path_factory.mktemp("metastore"))
    Metastore(url).close()  # create the schema once per module
    try:
        yield url
    finally:
        cleanup()


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
