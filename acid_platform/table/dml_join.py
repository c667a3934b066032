"""The join at the heart of a MERGE plan (:mod:`.dml`): ``target [RIGHT|LEFT|FULL] JOIN source``
with flattened columns, and the two forms of Hive's cardinality check over it
(:class:`~.dml_terms.MatchCount`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml_terms import (
    COUNTS,
    MATCHES,
    PRESENT,
    ROW_ID,
    ROW_ID_COLUMNS,
    SOURCE_RELATION,
    TARGET_RELATION,
    Clause,
    ClauseKind,
    MatchCount,
)
from acid_platform.table.expressions import Scope, and_all, quoted, resolve, to_expression


def inner_query(
    spec: TableSpec,
    target: Scope,
    source: Scope | None,
    on: object,
    clauses: Sequence[Clause],
    t_index: Mapping[str, int],
    used: set[str],
    check_cardinality: bool,
    match_count: MatchCount,
    inner_ref: object,
) -> exp.Select:
    """``target [JOIN source ON …]`` with flattened columns. ``used``: the target columns the
    branches read so far (the ON clause adds its own); the others are NULL here, so an engine
    never carries them through the join (``DmlPlan.read_columns``)."""
    t = quoted(target.alias)
    target_rel = exp.to_table(TARGET_RELATION).as_(t)
    on_expr = None
    if source is not None:
        what = f"ON clause of MERGE INTO {spec.full_name}"
        on_expr = resolve(to_expression(on, what), [target, source], inner_ref, what)  # type: ignore[arg-type]
    cols: list[exp.Expr] = [exp.alias_(exp.column(c, table=t), c) for c in ROW_ID_COLUMNS]
    cols += [
        exp.alias_(exp.column(quoted(c), table=t) if c in used else exp.Null(), quoted(f"__t_{i}"))
        for c, i in t_index.items()
    ]
    if source is None or on_expr is None:
        return exp.select(*cols).from_(target_rel)
    s = quoted(source.alias)
    cols += [
        exp.alias_(exp.column(quoted(c), table=s), quoted(f"__s_{i}"))
        for i, c in enumerate(source.columns)
    ]
    cols.append(exp.alias_(exp.column(PRESENT, table=s), PRESENT))
    check = check_cardinality and any(
        c.kind in (ClauseKind.MATCHED_UPDATE, ClauseKind.MATCHED_DELETE) for c in clauses
    )
    if check and match_count is MatchCount.WINDOW:
        cols.append(exp.alias_(_match_window(spec, t, s, on_expr), MATCHES))
    elif check:
        cols.append(exp.alias_(exp.column(MATCHES, table=quoted(COUNTS)), MATCHES))
    source_rel = (
        exp.select(exp.Star(), exp.alias_(exp.true(), PRESENT)).from_(SOURCE_RELATION).subquery(s)
    )
    has_insert = any(c.kind is ClauseKind.NOT_MATCHED_INSERT for c in clauses)
    has_by_source = any(
        c.kind in (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE) for c in clauses
    )
    side = {
        (True, True): "FULL",
        (True, False): "RIGHT",
        (False, True): "LEFT",
        (False, False): None,
    }[(has_insert, has_by_source)]
    join = exp.Join(this=source_rel, on=on_expr, side=side, kind=None if side else "INNER")
    query = exp.select(*cols).from_(target_rel).join(join)
    if check and match_count is MatchCount.JOIN:
        query = query.join(_match_counts(spec, t, s, on_expr))
    return query


def _match_window(spec: TableSpec, t: exp.Identifier, s: exp.Identifier, on: exp.Expr) -> exp.Expr:
    """``count(s.present) OVER (PARTITION BY t.ROW__ID, t.<partition cols>, <spread>)``: per
    matched target row, the number of source rows it pairs with in the join. Rows without a
    target row (NOT MATCHED) all have a NULL ROW__ID; ``<spread>`` — a hash of the source
    columns the ON clause compares, only for them — keeps them from piling into one window
    partition (their count is unused)."""
    keys: list[exp.Expr] = [exp.column(c, table=t) for c in ROW_ID_COLUMNS]
    keys += [exp.column(quoted(c), table=t) for c in spec.partition_column_names]
    no_target = exp.Is(this=exp.column(ROW_ID, table=t), expression=exp.Null())
    compared = {
        c.name: c.copy() for c in on.find_all(exp.Column) if c.table.lower() == s.name.lower()
    }
    values: list[exp.Expr] = [*compared.values()] or [exp.Literal.number(0)]
    spread = exp.Case(ifs=[exp.If(this=no_target, true=exp.func("hash", *values))])
    return exp.Window(
        this=exp.Count(this=exp.column(PRESENT, table=s)), partition_by=[*keys, spread]
    )


def _match_counts(spec: TableSpec, t: exp.Identifier, s: exp.Identifier, on: exp.Expr) -> exp.Join:
    """``LEFT JOIN`` of the number of source rows each matched target row pairs with — Hive's
    cardinality check (``GROUP BY ROW__ID HAVING count(*) > 1``) over the narrow join, instead of
    a window that would carry every column of the wide join through a sort."""
    keys: list[exp.Expr] = [exp.column(c, table=t) for c in ROW_ID_COLUMNS]
    keys += [exp.column(quoted(c), table=t) for c in spec.partition_column_names]
    names = [f"__acid_k{i}" for i in range(len(keys))]
    counts = (
        exp.select(
            *[exp.alias_(k.copy(), n) for k, n in zip(keys, names, strict=True)],
            exp.alias_(exp.Count(this=exp.Star()), MATCHES),
        )
        .from_(exp.to_table(TARGET_RELATION).as_(t))
        .join(exp.Join(this=exp.to_table(SOURCE_RELATION).as_(s), on=on.copy(), kind="INNER"))
        .group_by(*[k.copy() for k in keys])
    )
    m = quoted(COUNTS)
    row_id_keys = len(ROW_ID_COLUMNS)
    conditions: list[exp.Expr] = []
    for i, (k, n) in enumerate(zip(keys, names, strict=True)):
        left = exp.column(n, table=m)
        # ROW__ID parts are never NULL on a target row; partition values may be.
        cond = (
            exp.EQ(this=left, expression=k.copy())
            if i < row_id_keys
            else exp.NullSafeEQ(this=left, expression=k.copy())
        )
        conditions.append(cond)
    return exp.Join(this=counts.subquery(m), on=and_all(conditions), side="LEFT")
