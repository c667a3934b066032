"""Fixtures: a fresh warehouse (real files, real SQLite metastore) per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def emp_rows(n: int) -> list[dict[str, Any]]:
    """``n`` rows of the ``emp`` test table (id, name, salary, note, dept): NULL names every 11th
    row, departments a, b and NULL in turn."""
    return [
        {
            "id": i,
            "name": None if i % 11 == 0 else f"n{i}",
            "salary": i * 10,
            "note": "x" * (i % 4),
            "dept": ["a", "b", None][i % 3],
        }
        for i in range(n)
    ]
