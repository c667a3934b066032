"""Fixtures for the SQL layer: a fresh warehouse per test and its SQL session."""

from __future__ import annotations

import pytest

from acid_platform import Warehouse
from acid_platform.sql import SqlSession
from acid_platform_tests.helpers import warehouse_fixture

#: An empty warehouse (SQLite metastore inside it).
wh = warehouse_fixture()


@pytest.fixture()
def sql(wh: Warehouse) -> SqlSession:
    """The SQL session of ``wh``."""
    return wh.sql_session
