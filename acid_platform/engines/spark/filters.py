"""Spark's pushed filters as the format layer's DNF filters, and partition pruning.

Spark hands ``pushFilters`` a conjunction of simple filters (``EqualTo``, ``GreaterThan``, ``In``,
…). Those on one top-level column of a type whose comparison means the same in Spark and in Arrow
become ``(column, op, value)`` tuples:

* on a partition column they prune partition directories (evaluated exactly on the typed
  partition values, so Spark need not re-check them);
* on a data column they prune ORC stripes by their statistics and then filter rows exactly
  (:func:`acid_platform.format.read_split`), so Spark need not re-check them either.

Everything else is handed back to Spark: filters on ``float``/``double`` columns (NaN orders
differently), ``NOT IN`` (NULL handling differs), string matching, ``IS [NOT] NULL``, nested
columns.

>>> from pyspark.sql.datasource import EqualTo, In
>>> import pyarrow as pa
>>> translate(EqualTo(("id",), 3), {"id": pa.int32()})
('id', '=', 3)
>>> translate(In(("s",), ("a", "b")), {"s": pa.string()})
('s', 'in', ['a', 'b'])
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    Not,
)

#: One condition on one column, as pyarrow.parquet's DNF filters spell it.
Conjunct = tuple[str, str, Any]

_OPS: dict[type, str] = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def translate(f: Filter, types: Mapping[str, pa.DataType]) -> Conjunct | None:
    """The DNF condition for Spark filter ``f`` on a column of ``types``; ``None`` when it
    cannot be evaluated with Spark's exact meaning."""
    negated = isinstance(f, Not)
    inner = f.child if isinstance(f, Not) else f
    attribute = getattr(inner, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1:
        return None
    column = str(attribute[0]).lower()
    typ = types.get(column)
    if typ is None or not _comparable(typ):
        return None
    value = getattr(inner, "value", None)
    if negated:
        if isinstance(inner, EqualTo) and fits(value, typ):
            return (column, "!=", value)
        return None
    if isinstance(inner, In):
        values = list(value) if isinstance(value, tuple | list) else []
        if not values or not all(fits(v, typ) for v in values):
            return None
        return (column, "in", values)
    op = _OPS.get(type(inner))
    if op is None or not fits(value, typ):
        return None
    return (column, op, value)


def matching_rows(values: pa.Table, conjuncts: Sequence[Conjunct]) -> list[int]:
    """Indices of the rows of ``values`` (e.g. one row per partition) passing all conjuncts."""
    if not conjuncts or values.num_rows == 0:
        return list(range(values.num_rows))
    indexed = values.append_column("__acid_idx", pa.array(range(values.num_rows), pa.int64()))
    kept = indexed.filter(pq.filters_to_expression([list(conjuncts)]))
    return [int(i) for i in kept.column("__acid_idx").to_pylist()]


def _comparable(typ: pa.DataType) -> bool:
    t = pa.types
    return (
        t.is_integer(typ)
        or t.is_string(typ)
        or t.is_large_string(typ)
        or t.is_date(typ)
        or t.is_timestamp(typ)
        or t.is_decimal(typ)
        or t.is_boolean(typ)
    )


def fits(value: Any, typ: pa.DataType) -> bool:
    """Whether ``value`` (a Spark filter literal) compares with a ``typ`` column as Spark would."""
    t = pa.types
    if value is None:
        return False
    if t.is_boolean(typ):
        return isinstance(value, bool)
    if t.is_integer(typ):
        return isinstance(value, int) and not isinstance(value, bool)
    if t.is_string(typ) or t.is_large_string(typ):
        return isinstance(value, str)
    if t.is_decimal(typ):
        return isinstance(value, decimal.Decimal | int) and not isinstance(value, bool)
    if t.is_timestamp(typ):
        return isinstance(value, dt.datetime) and value.tzinfo is None
    if t.is_date(typ):
        return isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    return False
