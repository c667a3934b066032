"""Fixtures: a fresh warehouse (real files, real SQLite metastore) and a landing directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform_tests.helpers import warehouse_fixture

wh = warehouse_fixture()


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    path = tmp_path / "landing"
    path.mkdir()
    return path
