"""Fixtures: a fresh warehouse (real files, real SQLite metastore) per test."""

from __future__ import annotations

from typing import Any

from acid_platform_tests.helpers import warehouse_fixture

#: A warehouse in ``tmp_path`` that does not wait for locks.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"})


def rows_of(table: object, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """A table's rows as sorted tuples (NULLs sort first)."""
    data = table.scan(columns=columns).to_arrow()  # type: ignore[attr-defined]
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
