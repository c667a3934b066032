"""What a scan does with a filter: prune partitions, push exact conjuncts into the reader, and
evaluate the rest over the rows read.

:class:`ScanFilter` is the planner's (:mod:`.scan`) view of a filter, whoever wrote it: a Hive
predicate of the table API or SQL (:func:`hive_filter`, evaluated by the engine), or Spark's
pushed filters (the Spark reader builds one from its own conjuncts).

Conjuncts of the simple form ``column <op> literal`` (and ``IN``/``BETWEEN`` lists of literals)
on data columns are handed to the reader as DNF ``filters``: they skip stripes whose ORC
statistics rule them out and drop rows before the engine sees them. The engine still evaluates
the whole predicate, so the pushed part only ever removes rows the predicate removes too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from acid_platform.metastore.model import TableSpec
from acid_platform.table.engine import Engine
from acid_platform.table.expressions import (
    Scope,
    and_all,
    conjuncts,
    quoted,
    resolve,
    to_expression,
)
from acid_platform.table.scan_where import Filters, ScanFilter
from acid_platform.table.schema import table_schema

_INDEX = "__acid_idx"
_RELATION = "__acid_rows"
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_INTEGER_TYPES = {"tinyint": 8, "smallint": 16, "int": 32, "integer": 32, "bigint": 64}


def hive_filter(
    spec: TableSpec,
    engine: Engine,
    filter: str | exp.Expr | None,  # noqa: A002 - the public name
    *,
    exact: bool = True,
) -> ScanFilter:
    """The :class:`ScanFilter` of a Hive predicate over the table's columns.

    Conjuncts naming only partition columns prune partitions, exact simple conjuncts are pushed
    into the reader, and with ``exact`` the whole predicate is evaluated over the rows by
    ``engine``. Without ``exact`` the filter only prunes: the caller evaluates the predicate on
    the rows itself (a SQL query's WHERE does).
    """
    if filter is None:
        return ScanFilter()
    predicate = resolve_filter(spec, filter)
    pruning = partition_pruning_predicate(spec, predicate)
    partitions = None
    if pruning is not None:

        def partitions(values: pa.Table) -> Sequence[int]:
            return list(matching_indices(values, pruning, engine))

    rows = None
    if exact:

        def rows(table: pa.Table) -> np.ndarray:
            return matching_indices(table, predicate, engine)

    return ScanFilter(
        partitions, pushdown_filters(spec, predicate), rows, tuple(referenced(predicate))
    )


def resolve_filter(spec: TableSpec, filter: str | exp.Expr) -> exp.Expr:  # noqa: A002
    """A Hive predicate over the table's columns, its column references resolved (bare,
    quoted, lower-case names)."""
    tree = to_expression(filter, f"filter on {spec.full_name}")
    names = tuple(table_schema(spec).names)
    scope = Scope(spec.name, names, (spec.full_name,), f"table {spec.full_name}")
    return resolve(
        tree, [scope], lambda _s, col: exp.column(quoted(col)), f"filter on {spec.full_name}"
    )


def partition_pruning_predicate(spec: TableSpec, filter: str | exp.Expr | None) -> exp.Expr | None:  # noqa: A002
    """The conjuncts of ``filter`` that name only partition columns (``None`` if there are none)."""
    if filter is None or not spec.partition_columns:
        return None
    predicate = resolve_filter(spec, filter)
    parts = set(spec.partition_column_names)
    kept = [c for c in conjuncts(predicate) if referenced(c) and set(referenced(c)) <= parts]
    return and_all(kept) if kept else None


def pushdown_filters(spec: TableSpec, predicate: exp.Expr) -> Filters | None:
    """The conjuncts of a resolved predicate the ORC reader can apply itself, as DNF tuples.

    Only ``col <op> literal`` (``=``, ``<``, ``<=``, ``>``, ``>=``), ``col IN (literals)`` and
    ``col BETWEEN literal AND literal`` on integer or string data columns with literals of the same
    kind qualify: there the reader's comparison is exactly SQL's (NULL never passes), so a pushed
    conjunct removes only rows the whole predicate removes.
    """
    types = dict(spec.columns)
    out: Filters = []
    for c in conjuncts(predicate):
        out += _pushable(c, types)
    return out or None


def referenced(predicate: exp.Expr) -> list[str]:
    """The column names a resolved predicate reads, each once, in order of appearance."""
    return list(dict.fromkeys(c.name for c in predicate.find_all(exp.Column)))


def matching_indices(table: pa.Table, predicate: exp.Expr, engine: Engine) -> np.ndarray:
    """Sorted indices of the rows of ``table`` for which ``predicate`` holds (on ``engine``)."""
    table = table.select([c for c in referenced(predicate) if c in table.column_names])
    indexed = table.append_column(_INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    query = exp.select(exp.column(_INDEX)).from_(_RELATION).where(predicate.copy())
    result = engine.execute(query, {_RELATION: indexed})
    column = result.column(_INDEX)
    if column.null_count:  # pragma: no cover - the index column is never NULL
        column = column.drop_null()
    return np.sort(column.to_numpy())


# --------------------------------------------------------------------------- helpers


def _pushable(node: exp.Expr, types: dict[str, str]) -> Filters:
    if isinstance(node, exp.Paren):
        return _pushable(node.this, types)
    op = _COMPARISONS.get(type(node))
    if op is not None:
        left, right = node.this, node.expression
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            left, right, op = right, left, _FLIPPED[op]
        if not isinstance(left, exp.Column):
            return []
        value = _literal_for(left.name, right, types)
        return [(left.name, op, value)] if value is not None else []
    if (
        isinstance(node, exp.In)
        and isinstance(node.this, exp.Column)
        and not node.args.get("query")
    ):
        col = node.this.name
        values = [_literal_for(col, v, types) for v in node.expressions]
        if values and all(v is not None for v in values):
            return [(col, "in", values)]
        return []
    if isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
        col = node.this.name
        lo = _literal_for(col, node.args.get("low"), types)
        hi = _literal_for(col, node.args.get("high"), types)
        if lo is not None and hi is not None:
            return [(col, ">=", lo), (col, "<=", hi)]
    return []


def _literal_for(column: str, node: exp.Expr | None, types: dict[str, str]) -> Any:
    """The Python value of a literal compared with ``column`` when the comparison is exact in
    the reader too; ``None`` otherwise."""
    hive_type = types.get(column, "").lower()
    negative = False
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if not isinstance(node, exp.Literal):
        return None
    bits = _INTEGER_TYPES.get(hive_type)
    if bits is not None and not node.is_string:
        text = node.this
        if not text.lstrip("-").isdigit():
            return None
        value = -int(text) if negative else int(text)
        limit = 1 << (bits - 1)
        return value if -limit <= value < limit else None
    if hive_type == "string" and node.is_string and not negative:
        return str(node.this)
    return None


__all__ = [
    "Filters",
    "ScanFilter",
    "hive_filter",
    "matching_indices",
    "partition_pruning_predicate",
    "pushdown_filters",
    "referenced",
    "resolve_filter",
]
