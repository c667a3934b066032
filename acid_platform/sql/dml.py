"""DML and queries: INSERT, UPDATE, DELETE, TRUNCATE, MERGE, SELECT.

Row sources (``VALUES``, ``SELECT``, a MERGE's ``USING``) are computed on the embedded engine
(:mod:`.select`) and handed to the table API as Arrow (a MERGE source over warehouse tables as
its query); predicates and assigned values go to the table API as the statement's own sqlglot
syntax trees, never as text to parse again: each is parsed once, with the statement, and the one
DML plan resolves and checks it. INSERT matches the
query's columns to the table by position, as Hive does: the data columns (or the listed ones),
then the dynamic partition columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope

from acid_platform.errors import (
    InvalidPartitionError,
    NonTransactionalTableError,
    SemanticError,
    UnknownColumnError,
)
from acid_platform.format import ROW_ID_COLUMN
from acid_platform.format.types import normalize_hive_type
from acid_platform.sql import statements as st
from acid_platform.sql.chars import char_lengths, char_literals
from acid_platform.sql.functions import hive_builtins
from acid_platform.sql.results import StatementResult, empty_result, metrics_result
from acid_platform.sql.state import SessionState
from acid_platform.sql.subqueries import inline_subqueries
from acid_platform.table import Table
from acid_platform.table.partitions import make_partition_name


def select(session: SessionState, stmt: st.Select) -> StatementResult:
    """A query: rows under the statement's (or the open transaction's) snapshot (streamed with
    :attr:`SessionState.stream_queries`)."""
    if session.stream_queries:
        stream = session.stream(stmt.query)
        # Table.from_batches, not Schema.empty_table: pyarrow loads pandas for the latter (to
        # look for pandas metadata), 0.15 s of an `acid sql -e 'SELECT 1'`.
        empty = pa.Table.from_batches([], schema=stream.schema)
        return StatementResult(stmt, empty, stream=stream)
    rows = session.query(stmt.query)
    return StatementResult(stmt, rows, f"{rows.num_rows} row(s)")


def insert(session: SessionState, stmt: st.Insert) -> StatementResult:
    """``INSERT INTO|OVERWRITE … VALUES|SELECT`` with static and dynamic partitions."""
    table = session.table(stmt.table)
    spec = table.spec
    name = session.qualified(stmt.table)
    data_columns = [c for c, _ in spec.columns]
    partition_columns = [c for c, _ in spec.partition_columns]
    static = dict(stmt.static_partition)
    if static and not partition_columns:
        raise InvalidPartitionError(f"table {name} is not partitioned; remove the PARTITION clause")
    unknown = [k for k in (*static, *stmt.dynamic_partition) if k not in partition_columns]
    if unknown:
        raise InvalidPartitionError(
            f"table {name} has no partition column(s) {unknown}; its partition columns are {partition_columns}"
        )
    dynamic = [c for c in partition_columns if c not in static]
    targets = list(stmt.columns) if stmt.columns is not None else list(data_columns)
    _check_insert_columns(name, targets, data_columns, partition_columns, static)
    expected = targets + [c for c in dynamic if c not in targets]
    rows = session.query(stmt.query)
    if rows.num_columns != len(expected):
        raise SemanticError(
            f"Cannot insert into target table because column number/types are different '{name}': "
            f"the table needs {len(expected)} column(s) {expected}, the query gives {rows.num_columns}"
        )
    _check_untyped_nulls(name, stmt.query, rows, expected, dict(spec.columns))
    rows = rows.rename_columns(expected)
    metrics = table.insert(rows, partition=static or None, overwrite=stmt.overwrite)
    verb = "overwrote" if stmt.overwrite else "inserted"
    return metrics_result(
        stmt,
        metrics,
        f"{verb} {metrics.rows_inserted} row(s) into {name}",
        spec.location,
    )


def _check_untyped_nulls(
    name: str, query: exp.Query, rows: pa.Table, targets: Sequence[str], types: Mapping[str, str]
) -> None:
    """Hive converts a query column to its target's type only when the target is primitive: an
    untyped ``NULL`` (Hive's ``void``) into a map, array or struct column is refused, as
    Hive's ``genConversionSelectOperator`` refuses it (``map(cast(null as …), …)`` gives a
    typed empty map instead)."""
    complex_targets = {
        i: hive_type
        for i, column in enumerate(targets)
        if (hive_type := normalize_hive_type(types.get(column, ""))).startswith(
            ("map<", "array<", "struct<", "uniontype<")
        )
        and rows.column(i).null_count == rows.num_rows
    }
    void = _void_columns(query) if complex_targets else []
    if len(void) != len(targets):
        return
    for i, hive_type in complex_targets.items():
        if void[i]:
            raise SemanticError(
                "Cannot insert into target table because column number/types are different "
                f"'{name}': Cannot convert column {i} from void to {hive_type}."
            )


def _void_columns(query: exp.Query) -> list[bool]:
    """For each output column of ``query``, whether it is a bare ``NULL`` (followed through
    CTEs and subqueries); ``[]`` when the columns cannot be told (``*`` over a table)."""
    try:
        root = build_scope(qualify(query.copy(), dialect="hive", validate_qualify_columns=False))
    except (SqlglotError, ValueError, KeyError, AttributeError, TypeError):
        return []
    if root is None or not isinstance(root.expression, exp.Select):
        return []
    if any(isinstance(s, exp.Star) or s.is_star for s in root.expression.selects):
        return []

    def is_void(node: exp.Expr, scope: Scope, depth: int) -> bool:
        while isinstance(node, exp.Alias | exp.Paren):
            node = node.this
        if isinstance(node, exp.Null):
            return True
        if isinstance(node, exp.Column) and depth < 32:
            source = scope.sources.get(node.table)
            if isinstance(source, Scope) and isinstance(source.expression, exp.Select):
                for projection in source.expression.selects:
                    if projection.alias_or_name == node.name:
                        return is_void(projection, source, depth + 1)
        return False

    return [is_void(s, root, 0) for s in root.expression.selects]


def update(session: SessionState, stmt: st.Update) -> StatementResult:
    """``UPDATE t SET … [WHERE …]`` (a split update: delete events + new row versions)."""
    table = session.table(stmt.table)
    assignments = {column: _tree(session, value) for column, value in stmt.assignments}
    where = _where(session, table.spec.columns, stmt.where)
    metrics = table.update(assignments, where)
    message = f"updated {metrics.rows_updated} row(s) in {session.qualified(stmt.table)}"
    return metrics_result(stmt, metrics, message, table.spec.location)


def delete(session: SessionState, stmt: st.Delete) -> StatementResult:
    """``DELETE FROM t [WHERE …]``."""
    table = session.table(stmt.table)
    where = _where(session, table.spec.columns, stmt.where)
    metrics = table.delete(where)
    message = f"deleted {metrics.rows_deleted} row(s) from {session.qualified(stmt.table)}"
    return metrics_result(stmt, metrics, message, table.spec.location)


def truncate(session: SessionState, stmt: st.Truncate) -> StatementResult:
    """``TRUNCATE TABLE t [PARTITION (…)]``: delete every row (of the partition)."""
    table = session.table(stmt.table)
    if not table.spec.is_transactional:  # Hive would delete its plain files; not done here
        raise NonTransactionalTableError(
            f"TRUNCATE TABLE {table.spec.full_name}: the table is not transactional, and only "
            "transactional tables are written here"
        )
    partition_columns = [c for c, _ in table.spec.partition_columns]
    unknown = [k for k, _ in stmt.partition if k not in partition_columns]
    if unknown:
        raise InvalidPartitionError(
            f"table {session.qualified(stmt.table)} has no partition column(s) {unknown}"
        )
    if table.spec.is_insert_only:  # no delete events: Hive writes empty bases
        return _truncate_insert_only(session, stmt, table)
    equalities = [exp.EQ(this=exp.column(k), expression=_literal(v)) for k, v in stmt.partition]
    metrics = table.delete(exp.and_(*equalities) if equalities else None)
    message = f"deleted {metrics.rows_deleted} row(s) from {session.qualified(stmt.table)}"
    return metrics_result(stmt, metrics, message, table.spec.location)


def _truncate_insert_only(
    session: SessionState, stmt: st.Truncate, table: Table
) -> StatementResult:
    """TRUNCATE of an insert-only table: one INSERT OVERWRITE of no rows, an empty ``base_w`` in
    the table or in each partition the PARTITION spec matches."""
    spec = table.spec
    targets: list[str | None] = [None]
    if spec.partition_columns:
        wanted = {make_partition_name([k], [v]) for k, v in stmt.partition}
        names = session.warehouse.metastore.list_partitions(spec.db, spec.name)
        targets = [n for n in names if wanted <= set(n.split("/"))]
    metrics = table.replace_partitions(table.schema.empty_table(), targets) if targets else None
    name = session.qualified(stmt.table)
    if metrics is None:
        return empty_result(stmt, f"no partition of {name} matches; nothing truncated")
    return metrics_result(stmt, metrics, f"truncated {name}", spec.location)


def merge(session: SessionState, stmt: st.Merge) -> StatementResult:
    """``MERGE INTO … USING … ON … WHEN …`` (clause rules are enforced by the table layer)."""
    table = session.table(stmt.target)
    spec = table.spec
    name = session.qualified(stmt.target)
    chars = char_lengths(spec.columns)
    merger = table.merge(
        _merge_source(session, stmt.using),
        char_literals(_tree(session, stmt.on), chars, qualifier=stmt.target_alias),
        source_alias=stmt.source_alias,
        target_alias=stmt.target_alias,
    )
    all_columns = [c for c, _ in spec.columns] + [c for c, _ in spec.partition_columns]
    for clause in stmt.clauses:
        condition = (
            char_literals(_tree(session, clause.condition), chars, qualifier=stmt.target_alias)
            if clause.condition is not None
            else None
        )
        if clause.action == "insert":
            merger.when_not_matched_insert(
                _insert_values(name, clause, all_columns, session), where=condition
            )
        elif clause.action == "update":
            assignments = {c: _tree(session, v) for c, v in clause.assignments}
            if clause.by_source:
                merger.when_not_matched_by_source_update(assignments, where=condition)
            else:
                merger.when_matched_update(assignments, where=condition)
        elif clause.by_source:
            merger.when_not_matched_by_source_delete(where=condition)
        else:
            merger.when_matched_delete(where=condition)
    metrics = merger.execute()
    counts = (
        f"{metrics.rows_inserted} inserted, {metrics.rows_updated} updated, "
        f"{metrics.rows_deleted} deleted"
    )
    return metrics_result(stmt, metrics, f"merged into {name} ({counts})", spec.location)


# --------------------------------------------------------------------------- helpers
def _merge_source(session: SessionState, using: st.TableName | exp.Query) -> exp.Query | pa.Table:
    """The MERGE source for the table API.

    Over warehouse tables only, it is the query's syntax tree with every table name qualified:
    the table layer then reads it in the MERGE's own snapshot, under SHARED_READ locks. A source that reads
    a temporary table (or uses ROW__ID) is computed here and handed over as Arrow.
    """
    query = (
        exp.select("*").from_(exp.table_(using.name, db=using.database))
        if isinstance(using, st.TableName)
        else using
    )
    query = query.copy()
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    local = False
    for ref in query.find_all(exp.Table):
        if not isinstance(ref.this, exp.Identifier) or (not ref.db and ref.name.lower() in ctes):
            continue
        name = st.TableName(ref.name.lower(), ref.db.lower() if ref.db else None)
        local = local or session.temp_table(name) is not None
        ref.set("db", exp.to_identifier(name.database or session.database))
    mentions_row_id = any(
        part.name.lower() == ROW_ID_COLUMN for c in query.find_all(exp.Column) for part in c.parts
    )
    if local or mentions_row_id:
        return session.query(using if isinstance(using, exp.Query) else query)
    return query


def _tree(session: SessionState, node: exp.Expr) -> exp.Expr:
    """The expression for the table API: the statement's own syntax tree (never text to parse
    again), uncorrelated sub-queries replaced by their values, Hive's built-ins rewritten as for
    a query (:func:`~acid_platform.sql.functions.hive_builtins`)."""
    holder = exp.Paren(this=inline_subqueries(node, session.query).copy())
    return hive_builtins(holder).this  # held, so that the root itself can be rewritten


def _where(
    session: SessionState, columns: Sequence[tuple[str, str]], where: exp.Expr | None
) -> exp.Expr | None:
    """A WHERE clause for the table API (:func:`_tree`), constants compared with the table's
    char columns padded as Hive compares them."""
    if where is None:
        return None
    return char_literals(_tree(session, where), char_lengths(columns))


def _literal(value: object) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def _check_insert_columns(
    name: str,
    targets: Sequence[str],
    data_columns: Sequence[str],
    partition_columns: Sequence[str],
    static: Mapping[str, object],
) -> None:
    seen: set[str] = set()
    for column in targets:
        if column in seen:
            raise SemanticError(f"INSERT INTO {name}: column {column!r} is listed twice")
        seen.add(column)
        if column in static:
            raise SemanticError(
                f"INSERT INTO {name}: {column!r} has a static partition value; do not list it"
            )
        if column not in data_columns and column not in partition_columns:
            raise UnknownColumnError(
                f"table {name} has no column {column!r}; its columns are {list(data_columns)}"
            )


def _insert_values(
    name: str, clause: st.WhenClause, all_columns: Sequence[str], session: SessionState
) -> dict[str, exp.Expr]:
    columns = (
        list(clause.insert_columns) if clause.insert_columns is not None else list(all_columns)
    )
    if len(columns) != len(clause.insert_values):
        raise SemanticError(
            f"MERGE INTO {name}: WHEN NOT MATCHED THEN INSERT has {len(clause.insert_values)} value(s) "
            f"for {len(columns)} column(s) {columns}"
        )
    return {c: _tree(session, v) for c, v in zip(columns, clause.insert_values, strict=True)}
