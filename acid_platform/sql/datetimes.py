"""Java ``SimpleDateFormat`` patterns (Hive's ``date_format``, ``unix_timestamp``) as engine SQL.

Hive formats and parses dates with ``java.text.SimpleDateFormat`` in the server's default locale
(``en_US``: weeks start on Sunday, week 1 holds January 1) and the session time zone (UTC here:
the project has no session zone setting). sqlglot's own mapping drops letters (``u`` stays the
letter ``u``) and reads ``SSSSSS`` as microseconds; this module maps every letter itself:

* :func:`format_expression` builds ``date_format(ts, pattern)`` as a concatenation of one engine
  expression per letter run (padded to the run's length, as Java does) and quoted literals;
* :func:`parse_format` gives the engine's ``strptime`` format of a pattern
  (``unix_timestamp(s, pattern)``).

A letter Java rejects is refused with Java's message (Hive fails the query the same way).

>>> from sqlglot import exp
>>> format_expression(exp.column("ts"), "u").sql(dialect="duckdb")
'CAST(ISODOW(ts) AS TEXT)'
>>> parse_format("yyyy-MM-dd HH:mm:ss")
'%Y-%m-%d %H:%M:%S'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from sqlglot import exp

from acid_platform.errors import InvalidExpressionError

_LETTERS = frozenset("GyYMLwWDdFEuaHkKhmsSzZX")


def pattern_runs(pattern: str) -> Iterator[tuple[str, int] | str]:
    """The pattern as letter runs ``(letter, count)`` and literal text (quotes removed)."""
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = i + 1
            text = ""
            while end < len(pattern):
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text, end = text + "'", end + 2
                        continue
                    break
                text, end = text + pattern[end], end + 1
            else:
                raise InvalidExpressionError(f"Unterminated quote in pattern {pattern!r}")
            yield text or "'"
            i = end + 1
        elif char.isascii() and char.isalpha():
            if char not in _LETTERS:
                raise InvalidExpressionError(f"Illegal pattern character '{char}'")
            count = 1
            while i + count < len(pattern) and pattern[i + count] == char:
                count += 1
            yield (char, count)
            i += count
        else:
            yield char
            i += 1


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _padded(value: exp.Expr, count: int) -> exp.Expr:
    text = exp.cast(value, exp.DataType.build("VARCHAR"))
    if count <= 1:
        return text
    # Java pads to the run's length and never truncates a longer number.
    return _call(
        "lpad",
        text,
        exp.cast(
            exp.func("greatest", exp.Literal.number(count), _call("length", text.copy())),
            exp.DataType.build("INT"),
        ),
        exp.Literal.string("0"),
    )


def _strftime(ts: exp.Expr, spec: str) -> exp.Expr:
    return _call("strftime", ts, exp.Literal.string(spec))


def _num(sql: str, ts: exp.Expr) -> exp.Expr:
    """A numeric expression over ``ts`` written with ``{t}`` placeholders (engine SQL)."""
    tree: exp.Expr = exp.maybe_parse(sql.replace("{t}", "__ts__"), dialect="duckdb")
    return tree.transform(
        lambda n: ts.copy() if isinstance(n, exp.Column) and n.name == "__ts__" else n
    )


#: Sunday of the week of t (en_US weeks), and the week-based year: the year of that week's
#: Saturday (a week holding January 1 is week 1 of the new year).
_WEEK_START = "(CAST({t} AS DATE) - CAST(dayofweek({t}) AS INTEGER))"
_WEEK_YEAR = f"year({_WEEK_START} + 6)"
_WEEK_OF_YEAR = (
    f"(({_WEEK_START} - (make_date({_WEEK_YEAR}, 1, 1) "
    f"- CAST(dayofweek(make_date({_WEEK_YEAR}, 1, 1)) AS INTEGER))) // 7 + 1)"
)


def _letter(letter: str, count: int, ts: exp.Expr) -> exp.Expr:
    text_forms: dict[str, Callable[[], exp.Expr]] = {
        "G": lambda: _num("CASE WHEN year({t}) > 0 THEN 'AD' ELSE 'BC' END", ts),
        "E": lambda: _strftime(ts, "%A" if count >= 4 else "%a"),
        "a": lambda: _strftime(ts, "%p"),
        "z": lambda: exp.Literal.string("UTC" if count < 4 else "Coordinated Universal Time"),
        "Z": lambda: exp.Literal.string("+0000"),
        "X": lambda: exp.Literal.string("Z"),
    }
    if letter in text_forms:
        return text_forms[letter]()
    if letter in "ML" and count >= 3:
        return _strftime(ts, "%B" if count >= 4 else "%b")
    if letter in "yY" and count == 2:
        year = "year({t})" if letter == "y" else _WEEK_YEAR
        return _padded(_num(f"{year} % 100", ts), 2)
    numbers = {
        "y": "year({t})",
        "Y": _WEEK_YEAR,
        "M": "month({t})",
        "L": "month({t})",
        "w": _WEEK_OF_YEAR,
        "W": "((day({t}) + CAST(dayofweek(date_trunc('month', {t})) AS INTEGER) - 1) // 7 + 1)",
        "D": "dayofyear({t})",
        "d": "day({t})",
        "F": "((day({t}) - 1) // 7 + 1)",
        "u": "isodow({t})",
        "H": "hour({t})",
        "k": "CASE WHEN hour({t}) = 0 THEN 24 ELSE hour({t}) END",
        "K": "(hour({t}) % 12)",
        "h": "CASE WHEN hour({t}) % 12 = 0 THEN 12 ELSE hour({t}) % 12 END",
        "m": "minute({t})",
        "s": "second({t})",
        "S": "(millisecond({t}) % 1000)",
    }
    return _padded(_num(numbers[letter], ts), count)


def format_expression(ts: exp.Expr, pattern: str) -> exp.Expr:
    """``date_format(ts, pattern)`` as engine SQL (``ts`` a TIMESTAMP expression)."""
    parts = [
        _letter(run[0], run[1], ts) if isinstance(run, tuple) else exp.Literal.string(run)
        for run in pattern_runs(pattern)
    ]
    if not parts:
        return exp.Literal.string("")
    text = (
        parts[0] if len(parts) == 1 else exp.Concat(expressions=parts, safe=False, coalesce=False)
    )
    return exp.cast(text, exp.DataType.build("VARCHAR"))  # a string, even when NULL


#: Letters ``unix_timestamp(s, pattern)`` parses, by (letter, count) -> strptime directive.
def _parse_directive(letter: str, count: int) -> str:
    if letter in "ML":
        return {1: "%m", 2: "%m", 3: "%b"}.get(count, "%B")
    if letter == "y":
        return "%y" if count == 2 else "%Y"
    if letter == "E":
        return "%A" if count >= 4 else "%a"
    simple = {"d": "%d", "D": "%j", "H": "%H", "h": "%I", "m": "%M", "s": "%S", "a": "%p"}
    if letter in simple:
        return simple[letter]
    if letter == "S" and count == 3:
        return "%g"
    raise InvalidExpressionError(
        f"unix_timestamp: pattern letter '{letter * count}' is not supported for parsing here "
        "(supported: y M d D H h m s SSS a E and literal text)"
    )


def parse_format(pattern: str) -> str:
    """The engine's ``strptime`` format reading what ``pattern`` writes."""
    out = []
    for run in pattern_runs(pattern):
        out.append(_parse_directive(*run) if isinstance(run, tuple) else run.replace("%", "%%"))
    return "".join(out)


def parse_prefix(pattern: str) -> str:
    """A regular expression matching the start of a text ``pattern`` parses: Java's
    ``DateFormat.parse`` reads a prefix and ignores what follows (``'2024-01-01 10:00:00.5'``
    with ``yyyy-MM-dd HH:mm:ss`` is 10:00:00).

    >>> re.match(parse_prefix("yyyy-MM-dd HH:mm:ss"), "2024-01-01 10:00:00.5").group()
    '2024-01-01 10:00:00'
    """
    out = ["^"]
    for run in pattern_runs(pattern):
        if not isinstance(run, tuple):
            out.append(re.escape(run))
            continue
        letter, count = run
        directive = _parse_directive(letter, count)
        if directive in ("%b", "%B", "%a", "%A", "%p"):
            out.append("[A-Za-z]+")
        else:
            width = {"%Y": 4, "%j": 3, "%g": 3}.get(directive, 2)
            out.append(f"\\d{{1,{width}}}")
    return "".join(out)


__all__ = ["format_expression", "parse_format", "parse_prefix", "pattern_runs"]
