"""Fixtures: a fresh warehouse (real files, real SQLite metastore) per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.orc as po
import pytest

from acid_platform import Warehouse


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    """A warehouse in ``tmp_path`` with a short lock wait."""
    w = Warehouse.open(tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0"})
    yield w
    w.close()


def acid_dirs(path: str | Path) -> list[str]:
    """The base/delta directory names directly under ``path``, sorted."""
    return sorted(d for d in os.listdir(path) if d.startswith(("base_", "delta_", "delete_delta_")))


def events(path: str | Path) -> list[dict[str, object]]:
    """The ACID events of one ORC bucket file."""
    return po.read_table(str(path)).to_pylist()


def rows_of(table: object, columns: list[str] | None = None) -> list[tuple[object, ...]]:
    """A table's rows as sorted tuples (NULLs sort first)."""
    data = table.scan(columns=columns)  # type: ignore[attr-defined]
    out = [tuple(r.values()) for r in data.to_pylist()]
    return sorted(out, key=lambda r: tuple((v is not None, v) for v in r))
