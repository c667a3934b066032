"""SQL expressions given to the table API: parsing, literals and column resolution.

A ``str`` handed to ``update``/``delete``/``merge``/``scan`` is a Hive SQL expression
(``"salary * 2"``, ``"ds = '2024-01-01' AND id > 3"``), parsed once when the statement starts;
a sqlglot syntax tree (what the SQL layer hands over) is used as it is; any other value is a
literal. To store a
string literal, wrap it: ``lit("Tom")`` (``"Tom"`` alone would be read as a column name).

Column references are resolved against the relations in scope (the target table, and for MERGE
the source) the way Hive does: ``alias.col`` or ``table.col`` picks a relation; a bare ``col``
must belong to exactly one of them. Unknown and ambiguous names are typed errors naming the
column and the relations searched.

>>> to_expression("salary * 2").sql(dialect="hive")
'salary * 2'
>>> to_expression(lit("Tom")).sql(dialect="hive")
"'Tom'"
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import sqlglot
from sqlglot import exp

from acid_platform.errors import (
    InvalidExpressionError,
    UnknownColumnError,
    UnsupportedOperationError,
)

DIALECT = "hive"
#: Base class of sqlglot nodes (``Expr`` since sqlglot 30, ``Expression`` before).
_NODE: type = getattr(exp, "Expr", exp.Expression)


@dataclass(frozen=True)
class Literal:
    """A literal value for the table API (see :func:`lit`)."""

    value: Any


def lit(value: Any) -> Literal:
    """Mark ``value`` as a literal, e.g. ``t.update({"name": lit("Tom")})``.

    >>> lit(3)
    Literal(value=3)
    """
    return Literal(value)


def parse(text: str, what: str = "expression") -> exp.Expr:
    """Parse one Hive SQL expression (or predicate)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidExpressionError(f"{what} is empty")
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except sqlglot.errors.SqlglotError as exc:
        raise InvalidExpressionError(f"{what} {text!r} does not parse as Hive SQL: {exc}") from exc
    if tree is None:
        raise InvalidExpressionError(f"{what} {text!r} is empty")
    if isinstance(tree, exp.Query | exp.Command) or tree.find(exp.Query) is not None:
        raise UnsupportedOperationError(f"{what} {text!r}: sub-queries are not supported here")
    if tree.find(exp.Star) is not None:
        raise InvalidExpressionError(f"{what} {text!r}: '*' is not an expression")
    return tree


def to_expression(value: Any, what: str = "expression") -> exp.Expr:
    """An expression from a SQL string, a :class:`Literal`, a sqlglot node or a Python value."""
    if isinstance(value, _NODE):
        return cast("exp.Expr", value).copy()
    if isinstance(value, str):
        return parse(value, what)
    if isinstance(value, Literal):
        return literal_expression(value.value)
    return literal_expression(value)


def expression_or_none(value: str | exp.Expr | None, what: str) -> exp.Expr | None:
    """A predicate of a statement as a syntax tree: text is parsed (the one time it is: the
    statement hands the tree on), a tree is copied, ``None`` stays ``None``."""
    return None if value is None else to_expression(value, what)


def literal_expression(value: Any) -> exp.Expr:
    """The SQL literal for a Python value (typed with a CAST where SQL has no literal form)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return exp.Literal.number(repr(value))
    if isinstance(value, decimal.Decimal):
        return exp.cast(exp.Literal.string(format(value, "f")), _decimal_type(value))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    raise InvalidExpressionError(
        f"cannot use a {type(value).__name__} value ({value!r}) as a SQL literal"
    )


@dataclass(frozen=True)
class Scope:
    """A relation whose columns an expression may reference."""

    alias: str
    columns: tuple[str, ...]
    qualifiers: tuple[str, ...] = ()
    description: str = ""

    def accepts(self, qualifier: str) -> bool:
        """Whether ``qualifier`` (alias, table or db.table) names this relation."""
        q = qualifier.lower()
        return q == self.alias.lower() or q in (x.lower() for x in self.qualifiers)

    def has(self, column: str) -> bool:
        """Whether the relation has ``column`` (case-insensitive)."""
        return column.lower() in self.columns


Resolver = Callable[[Scope, str], exp.Expr]


def resolve(expr: exp.Expr, scopes: Sequence[Scope], to: Resolver, what: str) -> exp.Expr:
    """Replace every column reference in ``expr`` by ``to(scope, column)``.

    Raises :class:`UnknownColumnError` / :class:`InvalidExpressionError` (ambiguous) naming the
    column and ``what`` (e.g. "SET clause of UPDATE default.t").
    """

    def replace(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Column):
            return node
        scope, column = find_column(node, scopes, what)
        return to(scope, column)

    return expr.copy().transform(replace)


def find_column(node: exp.Column, scopes: Sequence[Scope], what: str) -> tuple[Scope, str]:
    """The scope and (lower-case) column a column reference names."""
    column = node.name.lower()
    parts = [
        p.name for p in (node.args.get("catalog"), node.args.get("db"), node.args.get("table")) if p
    ]
    qualifier = ".".join(parts)
    if qualifier:
        matching = [s for s in scopes if s.accepts(qualifier)]
        if not matching:
            names = sorted({s.alias for s in scopes})
            raise UnknownColumnError(
                f"{what}: {qualifier}.{column}: no table or alias {qualifier!r} (in scope: {names})"
            )
        scope = matching[0]
        if not scope.has(column):
            raise UnknownColumnError(  # Hive's words first (ErrorMsg.INVALID_COLUMN)
                f"{what}: Invalid column reference {column!r}: "
                f"{scope.description or scope.alias} has no column {column!r}; "
                f"its columns are {list(scope.columns)}"
            )
        return scope, column
    owners = [s for s in scopes if s.has(column)]
    if not owners:
        searched = ", ".join(s.description or s.alias for s in scopes)
        raise UnknownColumnError(f"{what}: unknown column {column!r} (searched {searched})")
    if len(owners) > 1:
        raise InvalidExpressionError(
            f"{what}: column {column!r} is ambiguous; qualify it as "
            + " or ".join(f"{s.alias}.{column}" for s in owners)
        )
    return owners[0], column


def column_refs(expr: exp.Expr) -> list[exp.Column]:
    """The column references in ``expr``."""
    return list(expr.find_all(exp.Column))


def conjuncts(expr: exp.Expr) -> list[exp.Expr]:
    """``a AND b AND c`` -> ``[a, b, c]``."""
    if isinstance(expr, exp.And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    if isinstance(expr, exp.Paren):
        return conjuncts(expr.this)
    return [expr]


def and_all(parts: Sequence[exp.Expr]) -> exp.Expr:
    """``parts[0] AND parts[1] AND …`` (``TRUE`` for none)."""
    if not parts:
        return exp.true()
    out = parts[0]
    for p in parts[1:]:
        out = exp.and_(out, p)
    return out


def quoted(name: str) -> exp.Identifier:
    """A quoted identifier (column names are used as given, whatever they contain)."""
    return exp.to_identifier(name, quoted=True)


def _decimal_type(value: decimal.Decimal) -> str:
    sign, digits, exponent = value.as_tuple()
    scale = max(-int(exponent), 0) if isinstance(exponent, int) else 0
    precision = max(len(digits), scale, 1)
    return f"DECIMAL({min(max(precision, scale + 1), 38)},{min(scale, 37)})"
