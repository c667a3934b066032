"""Fixtures for the SQL layer: a fresh warehouse per test, and helpers to look at its files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.sql import SqlSession


@pytest.fixture()
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    """An empty warehouse (SQLite metastore inside it)."""
    warehouse = Warehouse.open(tmp_path / "wh")
    yield warehouse
    warehouse.close()


@pytest.fixture()
def sql(wh: Warehouse) -> SqlSession:
    """The SQL session of ``wh``."""
    return wh.sql_session


def data_files(root: str | Path) -> set[str]:
    """Every file and directory under a warehouse, relative to it (the metastore excluded)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not rel.startswith("_metastore"):
                out.add(rel)
    return out


def acid_dirs(table_dir: str | Path) -> list[str]:
    """The base/delta/delete_delta directories of a table (or partition) directory, sorted."""
    return sorted(
        d for d in os.listdir(table_dir) if d.startswith(("base_", "delta_", "delete_delta_"))
    )
