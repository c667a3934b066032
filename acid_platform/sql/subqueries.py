"""Uncorrelated sub-queries in UPDATE / DELETE / MERGE conditions, evaluated up front.

The table API takes predicates over the target (and MERGE source) only. Hive also accepts
``WHERE id IN (SELECT id FROM other)``; such a sub-query does not depend on the target row, so
it is run first (under the same session snapshot rules as any SELECT) and replaced by its value:
an ``IN`` list, ``TRUE``/``FALSE`` for ``EXISTS``, a literal (or NULL) for a scalar sub-query.
A correlated sub-query cannot run alone and is refused with a hint to use MERGE.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import InvalidExpressionError, SemanticError, UnsupportedOperationError
from acid_platform.table.expressions import literal_expression

Runner = Callable[[exp.Query], pa.Table]


def inline_subqueries(node: exp.Expr, run: Runner) -> exp.Expr:
    """``node`` with every uncorrelated sub-query replaced by its result."""
    if node.find(exp.Query) is None:
        return node
    holder = exp.Paren(this=node.copy())  # so that the root itself can be replaced
    node = holder
    for in_ in list(node.find_all(exp.In)):
        query = in_.args.get("query")
        if query is None:
            continue
        values = _single_column(_run(run, query.this if isinstance(query, exp.Subquery) else query))
        if not values:
            in_.replace(exp.false())
            continue
        in_.set("query", None)
        in_.set("expressions", [literal_expression(v) for v in dict.fromkeys(values)])
    for exists in list(node.find_all(exp.Exists)):
        exists.replace(exp.Boolean(this=_run(run, exists.this).num_rows > 0))
    for sub in list(node.find_all(exp.Subquery)):
        values = _single_column(_run(run, sub.this))
        if len(values) > 1:
            raise SemanticError(
                f"scalar sub-query returned {len(values)} rows: {sub.sql(dialect='hive')}"
            )
        sub.replace(literal_expression(values[0]) if values else exp.Null())
    return holder.this


def _run(run: Runner, query: exp.Expr) -> pa.Table:
    if not isinstance(query, exp.Query):
        raise SemanticError(f"expected a sub-query, found {query.sql(dialect='hive')!r}")
    try:
        return run(query)
    except InvalidExpressionError as exc:
        raise UnsupportedOperationError(
            f"sub-query {query.sql(dialect='hive')!r} cannot run on its own (correlated?): {exc}; "
            "rewrite the statement as MERGE … USING (query) ON …"
        ) from None


def _single_column(rows: pa.Table) -> list[object]:
    if rows.num_columns != 1:
        raise SemanticError(f"sub-query must return one column, it returns {rows.num_columns}")
    return rows.column(0).to_pylist()
