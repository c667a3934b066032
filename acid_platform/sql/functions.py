"""Hive built-ins whose meaning sqlglot's Hive -> DuckDB transpile does not keep.

Applied to every query the SQL layer plans on the embedded engine (an AST rewrite in Hive's
dialect, before the engine transpiles it):

* ``date_add`` / ``date_sub`` return a DATE in Hive (DuckDB's ``date + interval`` is a TIMESTAMP);
* ``int(x)``, ``string(x)``, ``double(x)`` … are casts in Hive (NULL when the value does not
  convert, as ``CAST`` is in Hive);
* ``lpad`` / ``rpad`` accept numbers in Hive (DuckDB wants text);
* ``from_utc_timestamp(ts, tz)`` / ``to_utc_timestamp(ts, tz)`` shift a wall-clock timestamp
  between UTC and a zone (DuckDB's ``timezone()``);
* ``TIMESTAMP '… .123456789'`` keeps its nanoseconds (DuckDB's TIMESTAMP has microseconds).

>>> import sqlglot
>>> q = sqlglot.parse_one("select int(x), date_add(d, 1) from t", read="hive")
>>> hive_builtins(q).sql(dialect="duckdb")
'SELECT TRY_CAST(x AS INT), CAST(CAST(d AS DATE) + INTERVAL 1 DAY AS DATE) FROM t'
"""

from __future__ import annotations

import re
from typing import TypeVar

from sqlglot import exp

#: Hive's cast-like functions: ``int(x)`` is ``CAST(x AS INT)``.
_CAST_FUNCTIONS = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "float",
        "double",
        "string",
        "boolean",
        "date",
        "timestamp",
        "binary",
        "decimal",
    }
)


Q = TypeVar("Q", bound=exp.Expr)


def hive_builtins(query: Q) -> Q:
    """Rewrite ``query`` (in place) so the embedded engine computes what Hive computes."""
    for add in list(query.find_all(exp.TsOrDsAdd)):
        add.replace(exp.cast(add.copy(), exp.DataType.build("DATE")))
    for pad in list(query.find_all(exp.Pad)):
        for key in ("this", "fill_pattern"):
            arg = pad.args.get(key)
            if arg is not None and not (isinstance(arg, exp.Literal) and arg.is_string):
                pad.set(key, exp.cast(arg, exp.DataType.build("VARCHAR")))
    for call in list(query.find_all(exp.Anonymous)):
        name = call.name.lower()
        args = call.expressions
        if name in _CAST_FUNCTIONS and len(args) == 1:
            call.replace(exp.TryCast(this=args[0], to=exp.DataType.build(name, dialect="hive")))
        elif name in ("from_utc_timestamp", "to_utc_timestamp") and len(args) == 2:
            call.replace(_shift_zone(args[0], args[1], to_utc=name == "to_utc_timestamp"))
    for cast in list(query.find_all(exp.Cast)):  # TryCast is a Cast too
        _keep_nanoseconds(cast)
    return query


_NANO_FRACTION = re.compile(r"\.\d{7,9}\s*$")


def _keep_nanoseconds(cast: exp.Cast) -> None:
    """``TIMESTAMP '… .123456789'`` (a cast of a string constant) keeps its nanoseconds, as in
    Hive: the engine's TIMESTAMP has microseconds, its TIMESTAMP_NS nanoseconds (and the range
    of Arrow's nanosecond timestamps, the tables' type)."""
    operand = cast.this
    if (
        cast.to.this == exp.DataType.Type.TIMESTAMP
        and isinstance(operand, exp.Literal)
        and operand.is_string
        and _NANO_FRACTION.search(operand.name)
    ):
        cast.set("to", exp.DataType.build("TIMESTAMP_NS", dialect="duckdb"))


def _shift_zone(ts: exp.Expr, zone: exp.Expr, *, to_utc: bool) -> exp.Expr:
    # timezone('UTC', naive) reads the value as UTC; timezone(zone, tstz) gives the wall clock there.
    utc = exp.Literal.string("UTC")
    naive = exp.cast(ts, exp.DataType.build("TIMESTAMP"))
    inner, outer = (zone, utc) if to_utc else (utc, zone)
    return exp.Anonymous(
        this="timezone",
        expressions=[outer, exp.Anonymous(this="timezone", expressions=[inner, naive])],
    )
