"""What statements return: :class:`StatementResult` and helpers to build one.

Queries and SHOW return rows; DML returns one row of metrics from the table API (rows inserted /
updated / deleted, write id, directories written); DDL, SET and transaction control return no
rows, only a status message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from acid_platform.sql.statements import Statement
from acid_platform.table.statement import StatementMetrics
from acid_platform.table.stream import RowStream


@dataclass(frozen=True)
class StatementResult:
    """What one statement returned: rows (possibly none), a status message, and notes."""

    statement: Statement
    table: pa.Table
    message: str | None = None
    notes: tuple[str, ...] = ()
    #: True for rows a user asked to see (queries, SHOW, DESCRIBE); False for DML metrics.
    is_query: bool = True
    #: A streamed query's rows (``table`` is then empty, with the rows' schema): read them
    #: before the next statement runs, which closes the stream.
    stream: RowStream | None = None


def empty_result(
    statement: Statement, message: str | None = None, notes: Sequence[str] = ()
) -> StatementResult:
    """A result without rows (DDL, SET, transaction control)."""
    return StatementResult(statement, pa.table({}), message, tuple(notes))


def rows_result(
    statement: Statement, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> StatementResult:
    """A result of ``rows`` (dicts) with exactly ``columns``, in that order (also when empty)."""
    data = {c: [r.get(c) for r in rows] for c in columns}
    arrays = [_array(data[c]) for c in columns]
    return StatementResult(statement, pa.Table.from_arrays(arrays, names=list(columns)))


def metrics_result(
    statement: Statement,
    metrics: StatementMetrics,
    message: str,
    table_location: str | None = None,
) -> StatementResult:
    """One row of a DML statement's metrics (lists as comma-separated text).

    The message gains the write id and the directories written, relative to the table
    (``inserted 3 row(s) into default.employee: write id 1, delta_0000001_0000001_0000``).
    """
    row = {
        k: (", ".join(map(str, v)) if isinstance(v, list | tuple) else v)
        for k, v in metrics.as_dict().items()
    }
    table = pa.Table.from_pylist([row])
    details = []
    if metrics.write_id is not None:
        details.append(f"write id {metrics.write_id}")
    dirs = [_relative(d, table_location) for d in metrics.dirs_written]
    details.extend(sorted(dirs))
    if details:
        message = f"{message}: {', '.join(details)}"
    return StatementResult(statement, table, message, is_query=False)


def _relative(path: str, root: str | None) -> str:
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def _array(values: list[Any]) -> pa.Array:
    if all(v is None for v in values):
        return pa.array(values, pa.string())
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], pa.string())
