"""Hive built-ins whose meaning sqlglot's Hive -> DuckDB transpile does not keep.

Applied to every query the SQL layer plans on the embedded engine (an AST rewrite in Hive's
dialect, before the engine transpiles it):

* ``date_add`` / ``date_sub`` return a DATE in Hive (DuckDB's ``date + interval`` is a TIMESTAMP);
* ``int(x)``, ``string(x)``, ``double(x)`` … are casts in Hive (NULL when the value does not
  convert, as ``CAST`` is in Hive);
* ``lpad`` / ``rpad`` accept numbers in Hive (DuckDB wants text);
* ``year`` … ``second``, ``weekofyear``, ``datediff`` are INT in Hive, and ``dayofweek`` counts
  from 1 = Sunday;
* ``from_utc_timestamp(ts, tz)`` / ``to_utc_timestamp(ts, tz)`` shift a wall-clock timestamp
  between UTC and a zone (DuckDB's ``timezone()``);
* ``TIMESTAMP '… .123456789'`` keeps its nanoseconds (DuckDB's TIMESTAMP has microseconds);
* ``date_format`` / ``from_unixtime`` format with Java's ``SimpleDateFormat`` letters
  (:mod:`.datetimes`), ``unix_timestamp`` / ``to_unix_timestamp`` give BIGINT seconds (UTC, the
  session zone), ``size`` counts a map's entries or an array's elements (-1 for NULL),
  ``isnull`` / ``isnotnull`` are ``IS [NOT] NULL``, and ``map(…)`` drops NULL keys
  (``map(NULL, NULL)`` is ``{}``). :class:`HiveQL`, the dialect statements are read with, keeps
  these calls as written (sqlglot would convert the pattern to strftime's, losing letters).

>>> import sqlglot
>>> q = sqlglot.parse_one("select int(x), date_add(d, 1) from t", read="hive")
>>> hive_builtins(q).sql(dialect="duckdb")
'SELECT TRY_CAST(x AS INT), CAST(CAST(d AS DATE) + INTERVAL 1 DAY AS DATE) FROM t'
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import TypeVar

from sqlglot import exp
from sqlglot.dialects.hive import Hive

from acid_platform.errors import InvalidExpressionError, TimestampRangeError
from acid_platform.sql.datetimes import format_expression, parse_format, parse_prefix

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

#: Date parts Hive returns as INT (the engine's are BIGINT).
_INT_PARTS = (
    exp.Year,
    exp.Quarter,
    exp.Month,
    exp.Day,
    exp.DayOfMonth,
    exp.DayOfWeek,
    exp.WeekOfYear,
    exp.Hour,
    exp.Minute,
    exp.Second,
    exp.DateDiff,
)


def _raw(name: str) -> Callable[[list[exp.Expr]], exp.Expr]:
    return lambda args: exp.Anonymous(this=name, expressions=args)


class HiveQL(Hive):
    """sqlglot's Hive dialect, keeping the calls whose meaning :func:`hive_builtins` computes
    itself as plain calls (sqlglot turns ``date_format``'s Java pattern into strftime's, losing
    letters, and reads ``size`` as an array's length)."""

    class Parser(Hive.Parser):  # type: ignore[misc,valid-type]  # sqlglot builds it at runtime
        FUNCTIONS = {
            **Hive.Parser.FUNCTIONS,
            **{
                name.upper(): _raw(name)
                for name in (
                    "date_format",
                    "from_unixtime",
                    "unix_timestamp",
                    "to_unix_timestamp",
                    "size",
                )
            },
        }


def hive_builtins(query: Q) -> Q:
    """Rewrite ``query`` (in place) so the embedded engine computes what Hive computes."""
    for add in list(query.find_all(exp.TsOrDsAdd)):
        add.replace(exp.cast(add.copy(), exp.DataType.build("DATE")))
    for part in list(query.find_all(*_INT_PARTS)):  # before the rewrites below, which use them
        value: exp.Expr = part.copy()
        if isinstance(part, exp.DayOfWeek):  # Hive: 1 = Sunday … 7 = Saturday
            value = exp.Add(this=value, expression=exp.Literal.number(1))
        part.replace(exp.cast(value, exp.DataType.build("INT")))
    for pad in list(query.find_all(exp.Pad)):
        for key in ("this", "fill_pattern"):
            arg = pad.args.get(key)
            if arg is not None and not (isinstance(arg, exp.Literal) and arg.is_string):
                pad.set(key, exp.cast(arg, exp.DataType.build("VARCHAR")))
    # Inner calls first (reversed breadth-first order): a rewrite copies its arguments.
    for call in reversed(list(query.find_all(exp.Anonymous))):
        name = call.name.lower()
        args = call.expressions
        if name in _CAST_FUNCTIONS and len(args) == 1:
            call.replace(exp.TryCast(this=args[0], to=exp.DataType.build(name, dialect="hive")))
        elif name in ("from_utc_timestamp", "to_utc_timestamp") and len(args) == 2:
            call.replace(_shift_zone(args[0], args[1], to_utc=name == "to_utc_timestamp"))
        elif name in _REWRITES:
            call.replace(_REWRITES[name](args))
    for var_map in list(query.find_all(exp.VarMap)):
        _drop_null_keys(var_map)
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
        nanos = _literal_nanos(operand.name)
        if nanos is None or -(2**63) <= nanos < 2**63:
            cast.set("to", exp.DataType.build("TIMESTAMP_NS", dialect="duckdb"))
        elif nanos % 1000:
            # beyond the nanosecond range timestamps keep microseconds (format.wide_timestamps);
            # the engine would cut the digits silently
            raise TimestampRangeError(
                f"TIMESTAMP '{operand.name}': beyond 1677-09-21 .. 2262-04-11 timestamps are kept "
                "at microseconds, and this value has nanoseconds; see docs/values.md"
            )


_LITERAL = re.compile(
    r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2}):(\d{2})\.(\d{7,9})\s*$"
)


def _literal_nanos(text: str) -> int | None:
    """Nanoseconds since 1970 of a ``yyyy-mm-dd hh:mm:ss.fffffff[ff]`` constant (``None``
    when it has another form, left to the engine)."""
    m = _LITERAL.match(text)
    if m is None:
        return None
    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    try:
        day = dt.date(y, mo, d).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    return ((day * 24 + h) * 60 + mi) * 60 * 10**9 + sec * 10**9 + int(m.group(7).ljust(9, "0"))


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


def _shift_zone(ts: exp.Expr, zone: exp.Expr, *, to_utc: bool) -> exp.Expr:
    # timezone('UTC', naive) reads the value as UTC; timezone(zone, tstz) gives the wall clock there.
    utc = exp.Literal.string("UTC")
    naive = exp.cast(ts, exp.DataType.build("TIMESTAMP"))
    inner, outer = (zone, utc) if to_utc else (utc, zone)
    return exp.Anonymous(
        this="timezone",
        expressions=[outer, exp.Anonymous(this="timezone", expressions=[inner, naive])],
    )


def _timestamp(value: exp.Expr) -> exp.Expr:
    return exp.TryCast(this=value, to=exp.DataType.build("TIMESTAMP"))


def _constant_pattern(name: str, pattern: exp.Expr) -> str:
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise InvalidExpressionError(f"{name}: the pattern must be a constant string")
    return pattern.name


def _date_format(args: list[exp.Expr]) -> exp.Expr:
    if len(args) != 2:
        raise InvalidExpressionError("date_format takes 2 arguments (date, pattern)")
    return format_expression(_timestamp(args[0]), _constant_pattern("date_format", args[1]))


def _from_unixtime(args: list[exp.Expr]) -> exp.Expr:
    """Seconds since the epoch as text (UTC), in ``yyyy-MM-dd HH:mm:ss`` or the given pattern."""
    if len(args) not in (1, 2):
        raise InvalidExpressionError("from_unixtime takes 1 or 2 arguments (seconds[, pattern])")
    micros = exp.Mul(
        this=exp.cast(args[0].copy(), exp.DataType.build("BIGINT")),
        expression=exp.Literal.number(1_000_000),
    )
    ts = exp.Anonymous(this="make_timestamp", expressions=[micros])
    pattern = (
        _constant_pattern("from_unixtime", args[1]) if len(args) == 2 else "yyyy-MM-dd HH:mm:ss"
    )
    return format_expression(ts, pattern)


def _seconds(ts: exp.Expr) -> exp.Expr:
    floor = exp.Floor(this=exp.Anonymous(this="epoch", expressions=[ts]))
    return exp.cast(floor, exp.DataType.build("BIGINT"))


def _unix_timestamp(args: list[exp.Expr]) -> exp.Expr:
    """Hive's BIGINT seconds since the epoch (UTC): of now, of a date / timestamp, of a string in
    ``yyyy-MM-dd HH:mm:ss`` or the given pattern (NULL when it does not parse)."""
    if not args:
        return _seconds(exp.CurrentTimestamp())
    if len(args) > 2:
        raise InvalidExpressionError("unix_timestamp takes at most 2 arguments")
    value = args[0]
    pattern = _constant_pattern("unix_timestamp", args[1]) if len(args) == 2 else None
    java = pattern or "yyyy-MM-dd HH:mm:ss"
    prefix = exp.Anonymous(  # Java parses a prefix and ignores the rest
        this="regexp_extract",
        expressions=[
            exp.cast(value.copy(), exp.DataType.build("VARCHAR")),
            exp.Literal.string(parse_prefix(java)),
        ],
    )
    parsed = exp.Anonymous(
        this="try_strptime", expressions=[prefix, exp.Literal.string(parse_format(java))]
    )
    if pattern is not None:
        return _seconds(parsed)
    is_text = exp.EQ(
        this=exp.Anonymous(this="typeof", expressions=[value.copy()]),
        expression=exp.Literal.string("VARCHAR"),
    )
    return _seconds(exp.If(this=is_text, true=parsed, false=_timestamp(value)))


def _size(args: list[exp.Expr]) -> exp.Expr:
    """Hive's ``size``: elements of an array or entries of a map, -1 for NULL (the engine has no
    length common to both, its JSON form tells them apart)."""
    if len(args) != 1:
        raise InvalidExpressionError("size takes 1 argument")
    (value,) = args
    as_json = exp.Anonymous(this="to_json", expressions=[value.copy()])
    length = exp.Case(
        ifs=[
            exp.If(
                this=exp.EQ(
                    this=exp.Anonymous(this="json_type", expressions=[as_json]),
                    expression=exp.Literal.string("ARRAY"),
                ),
                true=exp.Anonymous(this="json_array_length", expressions=[as_json.copy()]),
            )
        ],
        default=exp.Anonymous(
            this="len",
            expressions=[exp.Anonymous(this="json_keys", expressions=[as_json.copy()])],
        ),
    )
    return exp.Coalesce(
        this=exp.cast(length, exp.DataType.build("INT")), expressions=[exp.Literal.number(-1)]
    )


def _is_null(args: list[exp.Expr], *, negate: bool) -> exp.Expr:
    if len(args) != 1:
        raise InvalidExpressionError(f"{'isnotnull' if negate else 'isnull'} takes 1 argument")
    test: exp.Expr = exp.Is(this=exp.paren(args[0].copy()), expression=exp.Null())
    return exp.Not(this=test) if negate else test


_REWRITES = {
    "date_format": _date_format,
    "from_unixtime": _from_unixtime,
    "unix_timestamp": _unix_timestamp,
    "to_unix_timestamp": _unix_timestamp,
    "size": _size,
    "isnull": lambda args: _is_null(args, negate=False),
    "isnotnull": lambda args: _is_null(args, negate=True),
}


def _drop_null_keys(var_map: exp.VarMap) -> None:
    """``map(k, v, …)`` drops entries whose key is NULL, as Hive does (``map(NULL, NULL)`` is
    ``{}``), and a constant key given twice keeps its place and its last value (as a Java
    map's ``put`` does);
    the engine's maps refuse a NULL or repeated key."""
    keys, values = var_map.args["keys"].expressions, var_map.args["values"].expressions
    if all(isinstance(k, exp.Literal) for k in keys):
        last = {k.sql(): i for i, k in enumerate(keys)}  # in order of first appearance
        if len(last) < len(keys):
            firsts = [next(i for i, k in enumerate(keys) if k.sql() == key) for key in last]
            var_map.set("keys", exp.Array(expressions=[keys[i].copy() for i in firsts]))
            var_map.set("values", exp.Array(expressions=[values[i].copy() for i in last.values()]))
        return
    entries = exp.Array(
        expressions=[
            exp.Anonymous(
                this="struct_pack",
                expressions=[
                    exp.PropertyEQ(this=exp.to_identifier("k"), expression=k.copy()),
                    exp.PropertyEQ(this=exp.to_identifier("v"), expression=v.copy()),
                ],
            )
            for k, v in zip(keys, values, strict=True)
        ]
    )
    kept = exp.Anonymous(
        this="list_filter",
        expressions=[
            entries,
            exp.Lambda(
                this=exp.Not(this=exp.Is(this=exp.column("k", table="e"), expression=exp.Null())),
                expressions=[exp.to_identifier("e")],
            ),
        ],
    )
    var_map.replace(exp.Anonymous(this="map_from_entries", expressions=[kept]))
