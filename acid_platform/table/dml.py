"""THE one DML plan: UPDATE, DELETE and MERGE as one query with labelled output rows.

Hive rewrites MERGE into a multi-insert over ``target RIGHT OUTER JOIN source`` (INNER JOIN
without a WHEN NOT MATCHED clause); UPDATE and DELETE are the one-branch case without a source.
Here that rewrite is one sqlglot query (Hive dialect) over two relations:

* ``target`` — the snapshot's rows of the table, with their ROW__ID flattened to
  ``__acid_writeid``, ``__acid_bucketid``, ``__acid_rowid``, then the data columns, then the
  partition columns;
* ``source`` — the MERGE source (absent for UPDATE/DELETE).

Every output row carries its branch's action (``insert`` / ``update`` / ``delete``) in
``__acid_action``, the branch's statement id (relative to the statement's first) in
``__acid_stmt``, the target ROW__ID, the target values some branch uses or the partition needs
(``__t_<i>``; the others are left out, they are NULL), and the assigned values: a bare column
(``SET x = s.x``) is carried once as that column (``__s_<j>`` / ``__t_<i>``), shared by every
branch and column taking it; any other value is a column of its own (``__v_<branch>_<i>``),
computed only for rows of that branch (:attr:`PlannedBranch.assigned` names each). With
``hive.merge.cardinality.check`` the plan also flags target rows matched by more than one source
row (``__acid_violation``), which Hive turns into a run-time error before anything is written.

Branch rules are Hive's (MergeSemanticAnalyzer): at most one WHEN MATCHED UPDATE and one WHEN
MATCHED DELETE; when both are present the first must have an ``AND`` predicate and the second
gets ``AND NOT(<first predicate>)``. The same rule applies to the WHEN NOT MATCHED BY SOURCE
pair (an extension Hive lacks). Statement ids: each WHEN branch writes as its own statement; the
WHEN NOT MATCHED INSERT branches take the first ids, then the other branches in clause order —
what Hive 3 produced for the seed example (INSERT clause -> statement 0, UPDATE -> statement 1).
An UPDATE is a split update: its delete and insert events share the branch's statement id.
:func:`acid_platform.table.dml_output.assemble` turns the engine's result into delete and
insert rows per statement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from acid_platform.errors import (
    InsertOnlyTableError,
    InvalidExpressionError,
    NonTransactionalTableError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml_join import inner_query
from acid_platform.table.dml_terms import (
    ACTION,
    BRANCH,
    BUCKET_ID,
    MATCHES,
    PRESENT,
    ROW_ID,
    ROW_ID_COLUMNS,
    SOURCE_RELATION,
    STATEMENT,
    TARGET_RELATION,
    VIOLATION,
    WRITE_ID,
    Action,
    Clause,
    ClauseKind,
    MatchCount,
)
from acid_platform.table.expressions import Scope, and_all, quoted, resolve, to_expression
from acid_platform.table.schema import table_schema

__all__ = [
    "ACTION",
    "BUCKET_ID",
    "ROW_ID",
    "ROW_ID_COLUMNS",
    "SOURCE_RELATION",
    "STATEMENT",
    "TARGET_RELATION",
    "VIOLATION",
    "WRITE_ID",
    "Action",
    "Clause",
    "ClauseKind",
    "DmlPlan",
    "MatchCount",
    "PlannedBranch",
    "plan_delete",
    "plan_merge",
    "plan_update",
    "probe_query",
]


@dataclass(frozen=True)
class PlannedBranch:
    """A branch of the plan: action, statement offset and its value columns (table column ->
    output column)."""

    kind: ClauseKind
    action: Action
    statement: int
    assigned: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DmlPlan:
    """The query (Hive dialect AST) and how to read its output.

    ``probe``, ``probe_columns`` and ``read_columns`` say how little of the target an engine may
    read and still get the query's exact output (see :func:`probe_query`): the query only needs
    the target rows ``probe`` returns, and of their columns only ``read_columns`` (the others may
    be NULL). ``probe`` is ``None`` when every target row can produce output.
    """

    table: str
    query: exp.Select
    branches: tuple[PlannedBranch, ...]
    target_columns: tuple[str, ...]
    statement_count: int
    relations: tuple[str, ...]
    probe: exp.Select | None = None
    probe_columns: tuple[str, ...] = ()
    read_columns: tuple[str, ...] | None = None

    def sql(self, dialect: str = "hive") -> str:
        """The plan as SQL text."""
        return self.query.sql(dialect=dialect)


def plan_update(
    spec: TableSpec, assignments: Mapping[str, object], where: str | exp.Expr | None = None
) -> DmlPlan:
    """``UPDATE <table> SET … [WHERE …]`` as a one-branch plan over ``target``."""
    if not assignments:
        raise InvalidExpressionError(f"UPDATE {spec.full_name}: no SET assignments")
    clause = Clause(ClauseKind.MATCHED_UPDATE, where, tuple(assignments.items()))
    return _plan(f"UPDATE {spec.full_name}", spec, [clause], None, None, (spec.name, ""), False)


def plan_delete(spec: TableSpec, where: str | exp.Expr | None = None) -> DmlPlan:
    """``DELETE FROM <table> [WHERE …]`` as a one-branch plan over ``target``."""
    return _plan(
        f"DELETE FROM {spec.full_name}",
        spec,
        [Clause(ClauseKind.MATCHED_DELETE, where)],
        None,
        None,
        (spec.name, ""),
        False,
    )


def plan_merge(
    spec: TableSpec,
    source_columns: Sequence[str],
    on: str | exp.Expr | None,
    clauses: Sequence[Clause],
    *,
    target_alias: str = "t",
    source_alias: str = "s",
    check_cardinality: bool = True,
    match_count: MatchCount = MatchCount.JOIN,
) -> DmlPlan:
    """``MERGE INTO <table> AS t USING source AS s ON … WHEN …`` as one plan (``match_count``:
    the form of the cardinality check, see :class:`MatchCount`)."""
    if not clauses:
        raise InvalidExpressionError(f"MERGE INTO {spec.full_name}: no WHEN clause")
    if on is None:
        raise InvalidExpressionError(f"MERGE INTO {spec.full_name}: an ON condition is required")
    _check_clause_rules(spec, clauses)
    return _plan(
        f"MERGE INTO {spec.full_name}",
        spec,
        list(clauses),
        list(source_columns),
        on,
        (target_alias, source_alias),
        check_cardinality,
        match_count,
    )


# --------------------------------------------------------------------------- building


def _check_clause_rules(spec: TableSpec, clauses: Sequence[Clause]) -> None:
    for first, second in (
        (ClauseKind.MATCHED_UPDATE, ClauseKind.MATCHED_DELETE),
        (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE),
    ):
        for kind in (first, second):
            if sum(c.kind is kind for c in clauses) > 1:
                raise InvalidExpressionError(
                    f"MERGE INTO {spec.full_name}: more than one '{kind}' clause (Hive allows one)"
                )
        pair = [c for c in clauses if c.kind in (first, second)]
        if len(pair) == 2 and pair[0].where is None:
            raise InvalidExpressionError(
                f"MERGE INTO {spec.full_name}: with both '{first}' and '{second}' clauses the first "
                f"one ('{pair[0].kind}') must have an AND <condition>"
            )


def require_transactional(spec: TableSpec) -> None:
    """Refuse row-level DML (UPDATE, DELETE, MERGE) on a non-transactional table or an
    insert-only one, with Hive's messages (``ErrorMsg.ACID_OP_ON_NONACID_TABLE``,
    ``ACID_OP_ON_INSERTONLYTRAN_TABLE``)."""
    if not spec.is_transactional:
        raise NonTransactionalTableError(
            f"Attempt to do update or delete on table {spec.full_name} that is not transactional"
        )
    if spec.is_insert_only:
        raise InsertOnlyTableError(
            f"Attempt to do update or delete on table {spec.full_name} that is insert-only "
            "transactional"
        )


def _plan(
    label: str,
    spec: TableSpec,
    clauses: list[Clause],
    source_columns: list[str] | None,
    on: object,
    aliases: tuple[str, str],
    check_cardinality: bool,
    match_count: MatchCount = MatchCount.JOIN,
) -> DmlPlan:
    target_cols = tuple(table_schema(spec).names)
    t_alias, s_alias = aliases
    target = Scope(t_alias, target_cols, (spec.name, spec.full_name), f"table {spec.full_name}")
    source = None
    if source_columns is not None:
        lowered = [c.lower() for c in source_columns]
        if len(set(lowered)) != len(lowered):
            raise InvalidExpressionError(
                f"MERGE INTO {spec.full_name}: source has duplicate column names {source_columns}"
            )
        if t_alias.lower() == s_alias.lower():
            raise InvalidExpressionError(
                f"MERGE INTO {spec.full_name}: target and source alias are both {t_alias!r}"
            )
        source = Scope(s_alias, tuple(lowered), (), f"source {s_alias}")
    t_index = {c: i for i, c in enumerate(target_cols)}
    s_index = {c: i for i, c in enumerate(source.columns)} if source else {}
    used: set[str] = set(spec.partition_column_names)  # target columns whose values matter

    def inner_ref(scope: Scope, col: str) -> exp.Expr:
        if scope is target:
            used.add(col)
        return exp.column(quoted(col), table=quoted(scope.alias))

    def flat_ref(scope: Scope, col: str) -> exp.Expr:
        if scope is target:
            used.add(col)
        name = f"__t_{t_index[col]}" if scope is target else f"__s_{s_index[col]}"
        return exp.column(quoted(name))

    statements = _statement_offsets(clauses)
    branches: list[PlannedBranch] = []
    passed: dict[str, None] = {}  # flattened columns the branches take as they are, in order
    value_columns: list[exp.Expr] = []
    conditions: list[exp.Expr] = []
    first_predicate: dict[str, exp.Expr | None] = {}
    for b, clause in enumerate(clauses):
        what = f"{label} ({clause.kind})" if source is not None else label
        scopes = _scopes_for(clause.kind, target, source)
        parts = [_class_condition(clause.kind, source is not None)]
        predicate = None
        if clause.where is not None:
            predicate = resolve(
                to_expression(clause.where, f"condition of {what}"), scopes, flat_ref, what
            )
            parts.append(exp.paren(predicate))
        group = _pair_group(clause.kind)
        if group is not None:
            if group in first_predicate:
                # Hive: the second clause of a pair gets AND NOT(<first clause's predicate>).
                first = first_predicate[group]
                if first is not None:
                    parts.append(exp.not_(exp.paren(first.copy())))
            else:
                first_predicate[group] = predicate
        conditions.append(and_all(parts))
        assigned: dict[str, str] = {}
        for col, value in _assignments(spec, clause, target_cols, t_alias, what):
            expr = resolve(
                to_expression(value, f"value of {col} in {what}"), scopes, flat_ref, what
            )
            if isinstance(expr, exp.Column):
                # A bare column: nothing to evaluate, so nothing to guard; the output carries
                # that column once, whichever branches and columns take it.
                assigned[col] = expr.name
                passed.setdefault(expr.name)
                continue
            name = f"__v_{b}_{t_index[col]}"
            guarded = exp.Case(ifs=[exp.If(this=_is_branch(b), true=expr)])
            value_columns.append(exp.alias_(guarded, quoted(name)))
            assigned[col] = name
        branches.append(PlannedBranch(clause.kind, clause.kind.action, statements[b], assigned))
        if clause.kind.action is Action.UPDATE:
            used.update(c for c in target_cols if c not in assigned)  # carried into new rows

    carried = set(used)  # target values the output carries (the ON clause adds read columns)
    inner = inner_query(
        spec, target, source, on, clauses, t_index, used, check_cardinality, match_count, inner_ref
    )
    with_branch = exp.select(
        exp.Star(),
        exp.alias_(
            exp.Case(
                ifs=[exp.If(this=c, true=exp.Literal.number(i)) for i, c in enumerate(conditions)]
            ),
            BRANCH,
        ),
    ).from_(inner.subquery("__acid_j"))
    has_violation = (
        check_cardinality
        and source is not None
        and any(c.kind in (ClauseKind.MATCHED_UPDATE, ClauseKind.MATCHED_DELETE) for c in clauses)
    )
    projections: list[exp.Expr] = [
        exp.alias_(_case_on_branch([exp.Literal.string(b.action.value) for b in branches]), ACTION),
        exp.alias_(_case_on_branch([exp.Literal.number(b.statement) for b in branches]), STATEMENT),
        *[exp.column(c) for c in ROW_ID_COLUMNS],
        # only the target values some branch or the partition uses: the others are NULL
        *[exp.column(quoted(f"__t_{i}")) for i, c in enumerate(target_cols) if c in carried],
        *[exp.column(quoted(n)) for n in passed if n.startswith("__s_")],
        *value_columns,
    ]
    where: exp.Expr = exp.Not(this=exp.Is(this=exp.column(BRANCH), expression=exp.Null()))
    if has_violation:
        violation = exp.and_(
            exp.GT(this=exp.column(MATCHES), expression=exp.Literal.number(1)),
            exp.Not(this=exp.Is(this=exp.column(ROW_ID), expression=exp.Null())),
            exp.Not(this=exp.Is(this=exp.column(PRESENT), expression=exp.Null())),
        )
        projections.append(exp.alias_(violation, VIOLATION))
        where = exp.or_(where, violation)
    query = exp.select(*projections).from_(with_branch.subquery("__acid_b")).where(where)
    relations = (TARGET_RELATION,) if source is None else (TARGET_RELATION, SOURCE_RELATION)
    probe_used: set[str] = set(spec.partition_column_names)

    def probe_ref(scope: Scope, col: str) -> exp.Expr:
        if scope is target:
            probe_used.add(col)
        return exp.column(quoted(col), table=quoted(scope.alias))

    probe = probe_query(target, source, on, clauses, probe_ref)
    return DmlPlan(
        spec.full_name,
        query,
        tuple(branches),
        target_cols,
        max(statements) + 1,
        relations,
        probe,
        tuple(c for c in target_cols if c in probe_used) if probe is not None else (),
        tuple(c for c in target_cols if c in used),
    )


def probe_query(
    target: Scope,
    source: Scope | None,
    on: object,
    clauses: Sequence[Clause],
    ref: Callable[[Scope, str], exp.Expr],
) -> exp.Select | None:
    """The target rows a plan can touch, as ``SELECT t.* FROM target t WHERE …`` (``None``: all).

    An engine runs it over a narrow ``target`` (ROW__ID, the probe's columns, partition columns),
    then gives the plan only the rows it returns — with their full values where the plan needs
    them. The plan's output is unchanged, because the rows left out produce none:

    * UPDATE / DELETE: rows whose WHERE is not TRUE are in no branch;
    * MERGE without WHEN NOT MATCHED BY SOURCE: a target row that matches no source row drops out
      of the (inner or right) join, while every row that matches one keeps all its matches — so
      the branches, the NOT MATCHED inserts and the cardinality check see the same pairs.

    With a WHEN NOT MATCHED BY SOURCE clause, or UPDATE / DELETE without WHERE, any row may
    produce output: ``None``.
    """
    t = quoted(target.alias)
    select = exp.select(exp.Column(this=exp.Star(), table=t)).from_(
        exp.to_table(TARGET_RELATION).as_(t)
    )
    if any(c.kind in (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE) for c in clauses):
        return None
    if source is None:
        conditions = [c.where for c in clauses]
        if not conditions or any(c is None for c in conditions):
            return None
        predicates = [
            exp.paren(resolve(to_expression(c, "WHERE clause"), [target], ref, "WHERE clause"))
            for c in conditions
        ]
        where: exp.Expr = predicates[0]
        for p in predicates[1:]:
            where = exp.or_(where, p)
        return select.where(where)
    what = "ON clause of MERGE"
    on_expr = resolve(to_expression(on, what), [target, source], ref, what)
    s = quoted(source.alias)
    matches = exp.select(exp.Literal.number(1)).from_(exp.to_table(SOURCE_RELATION).as_(s))
    return select.where(exp.Exists(this=matches.where(on_expr)))


def _statement_offsets(clauses: Sequence[Clause]) -> list[int]:
    order = [i for i, c in enumerate(clauses) if c.kind is ClauseKind.NOT_MATCHED_INSERT]
    order += [i for i, c in enumerate(clauses) if c.kind is not ClauseKind.NOT_MATCHED_INSERT]
    offsets = [0] * len(clauses)
    for stmt, i in enumerate(order):
        offsets[i] = stmt
    return offsets


def _scopes_for(kind: ClauseKind, target: Scope, source: Scope | None) -> list[Scope]:
    if source is None or kind in (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE):
        return [target]
    if kind is ClauseKind.NOT_MATCHED_INSERT:
        return [source]
    return [target, source]


def _class_condition(kind: ClauseKind, has_source: bool) -> exp.Expr:
    target_present = exp.Not(this=exp.Is(this=exp.column(ROW_ID), expression=exp.Null()))
    if not has_source:
        return target_present
    source_present = exp.Not(this=exp.Is(this=exp.column(PRESENT), expression=exp.Null()))
    if kind is ClauseKind.NOT_MATCHED_INSERT:
        return exp.and_(exp.Is(this=exp.column(ROW_ID), expression=exp.Null()), source_present)
    if kind in (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE):
        return exp.and_(target_present, exp.Is(this=exp.column(PRESENT), expression=exp.Null()))
    return exp.and_(target_present, source_present)


def _assignments(
    spec: TableSpec, clause: Clause, target_cols: Sequence[str], t_alias: str, what: str
) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    seen: set[str] = set()
    for key, value in clause.values:
        col = _target_column(key, spec, t_alias, what)
        if col not in target_cols:
            raise UnknownColumnError(
                f"{what}: table {spec.full_name} has no column {key!r}; its columns are {list(target_cols)}"
            )
        if col in seen:
            raise InvalidExpressionError(f"{what}: column {col!r} is assigned twice")
        seen.add(col)
        if clause.kind.action is Action.UPDATE:
            if col in spec.partition_column_names:
                raise UnsupportedOperationError(
                    f"{what}: cannot update partition column {col!r} of {spec.full_name} "
                    "(Hive: updating values of partition columns is not supported; delete and insert instead)"
                )
            if col in spec.bucket_columns:
                raise UnsupportedOperationError(
                    f"{what}: cannot update bucketing column {col!r} of {spec.full_name} "
                    "(Hive: updating values of bucketing columns is not supported)"
                )
        out.append((col, value))
    return out


def _target_column(key: str, spec: TableSpec, t_alias: str, what: str) -> str:
    if not isinstance(key, str):
        raise InvalidExpressionError(f"{what}: column name {key!r} is not a string")
    name = key.strip().strip("`").lower()
    qualifier, dot, rest = name.rpartition(".")
    if dot:
        if qualifier not in (t_alias.lower(), spec.name, spec.full_name):
            raise UnknownColumnError(f"{what}: {key!r} does not name a column of {spec.full_name}")
        name = rest.strip("`")
    return name


def _case_on_branch(values: Sequence[exp.Expr]) -> exp.Expr:
    return exp.Case(ifs=[exp.If(this=_is_branch(i), true=v) for i, v in enumerate(values)])


def _is_branch(b: int) -> exp.Expr:
    return exp.EQ(this=exp.column(BRANCH), expression=exp.Literal.number(b))


def _pair_group(kind: ClauseKind) -> str | None:
    if kind in (ClauseKind.MATCHED_UPDATE, ClauseKind.MATCHED_DELETE):
        return "matched"
    if kind in (ClauseKind.BY_SOURCE_UPDATE, ClauseKind.BY_SOURCE_DELETE):
        return "by source"
    return None
