"""Comparisons with ``char(n)`` columns as Hive makes them.

A ``char(n)`` value is stored and returned padded with spaces to ``n`` (``format.types``), and
Hive compares it ignoring trailing spaces: a string constant compared with a char column is
converted to the column's type first, so ``c = 'ab'`` and ``c = 'ab   '`` both match ``'ab   '``.
Here the constant is given the column's padding (cut to ``n``, as Hive's conversion does) before
the engine compares: ``=``, ``<>``, ``<=>``, the orderings and ``IN``; in SELECT, UPDATE, DELETE
and a MERGE's ON and WHEN conditions (target columns, qualified by its alias).

>>> import sqlglot
>>> tree = sqlglot.parse_one("SELECT 1 FROM t WHERE c = 'ab' OR c IN ('x ', 'toolong')", read="hive")
>>> char_literals(tree, {"c": 5}).sql("hive")
"SELECT 1 FROM t WHERE c = 'ab   ' OR c IN ('x    ', 'toolo')"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from acid_platform.format.types import char_type, row_schema

_COMPARISONS = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def char_lengths(columns: Sequence[tuple[str, str]]) -> dict[str, int]:
    """The ``char(n)`` columns among ``(name, hive type)`` pairs, with their lengths.

    >>> char_lengths([("c", "char(5)"), ("v", "varchar(3)"), ("s", "string")])
    {'c': 5}
    """
    out = {}
    for f in row_schema(list(columns)):
        char = char_type(f)
        if char is not None and char[0] == "char":
            out[f.name.lower()] = char[1]
    return out


def char_literals(
    tree: exp.Expr, lengths: Mapping[str, int], *, qualifier: str | None = None
) -> exp.Expr:
    """``tree`` (changed in place) with string constants compared with a char column padded
    to the column's length; with ``qualifier``, only columns qualified by it count (a MERGE's
    target alias: its source may have columns of the same names).

    >>> import sqlglot
    >>> tree = sqlglot.parse_one("SELECT 1 FROM t WHERE t.c = 'a' AND s.c = 'a' AND c = 'a'")
    >>> char_literals(tree, {"c": 2}, qualifier="t").sql()
    "SELECT 1 FROM t WHERE t.c = 'a ' AND s.c = 'a' AND c = 'a'"
    """
    if not lengths:
        return tree
    if qualifier is not None:
        lengths = _Qualified(lengths, qualifier.lower())
    for node in list(tree.find_all(*_COMPARISONS)):
        left, right = node.left, node.right
        if _char_length(left, lengths) is not None and _is_string(right):
            right.replace(_padded(right, _char_length(left, lengths)))
        elif _char_length(right, lengths) is not None and _is_string(left):
            left.replace(_padded(left, _char_length(right, lengths)))
    for in_list in list(tree.find_all(exp.In)):
        length = _char_length(in_list.this, lengths)
        if length is None:
            continue
        for item in list(in_list.expressions):
            if _is_string(item):
                item.replace(_padded(item, length))
    return tree


def _char_length(node: exp.Expr, lengths: Mapping[str, int]) -> int | None:
    if not isinstance(node, exp.Column):
        return None
    if isinstance(lengths, _Qualified):
        return lengths.length(node)
    return lengths.get(node.name.lower())


class _Qualified(dict[str, int]):
    """Char lengths that count only for columns qualified by one table alias."""

    def __init__(self, lengths: Mapping[str, int], qualifier: str) -> None:
        super().__init__(lengths)
        self.qualifier = qualifier

    def length(self, column: exp.Column) -> int | None:
        if column.table.lower() != self.qualifier:
            return None
        return self.get(column.name.lower())


def _is_string(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _padded(literal: exp.Expr, length: int | None) -> exp.Expr:
    assert length is not None
    return exp.Literal.string(literal.name[:length].rstrip(" ").ljust(length))
