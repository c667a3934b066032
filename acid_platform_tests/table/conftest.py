"""Fixtures: a fresh warehouse (real files, real SQLite metastore) per test."""

from __future__ import annotations

from typing import Any

from acid_platform_tests.helpers import warehouse_fixture

#: A warehouse in ``tmp_path`` that does not wait for locks.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"})


def rows_of(table: object, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """A table's rows as sorted tuples (NULLs sort first)."""
    data = table.scan(columns=columns)  # type: ignore[attr-defined]
    out = [tuple(r.values()) for r in data.to_pylist()]
    return sorted(out, key=lambda r: tuple((v is not None, v) for v in r))
