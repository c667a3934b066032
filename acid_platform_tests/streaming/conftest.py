"""Fixtures: a fresh warehouse per test, real files. ``wh`` runs each test on a SQLite and on a
PostgreSQL metastore (those fail, never skip, without a server); ``local_wh`` on SQLite only,
for what the metastore does not change (record parsing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform_tests.helpers import open_warehouse, warehouse_fixture

CONF = {"acid.lock.wait.timeout.s": "10"}

wh = warehouse_fixture(conf=CONF, backends=["sqlite", "postgresql"])


@pytest.fixture
def local_wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path, CONF) as warehouse:
        yield warehouse
