"""SELECT on the embedded engine: snapshot scans of the tables a query names, then DuckDB.

:func:`run_query` rewrites every table reference of a Hive query to a relation name, plans one
scan of each table through the table API (under the statement's snapshot: only the columns the
query mentions, ``row__id`` when it mentions ``ROW__ID``, simple WHERE conjuncts pruning
partitions and stripes), and runs the rewritten query on the engine (which transpiles Hive to
DuckDB). Output columns are named as Hive prints them: the alias, else the column name, else
``_c<position>``.

:func:`stream_query` does the same without holding the whole of anything: a table the query
reads once reaches the engine as a ``RecordBatchReader`` (split by split, stripe by stripe) and
the result streams back as the engine computes it (:class:`~acid_platform.table.stream.RowStream`).
A table read more than once, or by a query with a ``WITH`` clause, is read whole first: an
engine may scan such a relation more than once, and a stream can be read only once.

``SELECT *`` never shows ``ROW__ID`` (it is a virtual column in Hive); ``SELECT row__id, *`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import InvalidExpressionError, SemanticError, UnknownColumnError
from acid_platform.format import ROW_ID_COLUMN
from acid_platform.sql.chars import char_literals
from acid_platform.sql.functions import hive_builtins
from acid_platform.sql.statements import TableName
from acid_platform.table.engine import Engine, StreamingEngine
from acid_platform.table.schema import has_wide_constant
from acid_platform.table.stream import RowStream

_RELATION_PREFIX = "__acid_rel_"


class Rows(Protocol):
    """A planned read of a relation: read once, whole or as a stream, then closed."""

    def to_arrow(self) -> pa.Table:
        """Every row (then the read is done)."""
        ...

    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as they are read (done when exhausted)."""
        ...

    def close(self) -> None:
        """Release what the read holds (a reader lease), read or not."""
        ...


@dataclass(frozen=True)
class ArrowRows:
    """:class:`Rows` already in memory (a temporary table)."""

    table: pa.Table

    def to_arrow(self) -> pa.Table:
        """The table."""
        return self.table

    def to_batches(self) -> pa.RecordBatchReader:
        """The table's batches."""
        return self.table.to_reader()

    def close(self) -> None:
        """Nothing to release."""


@dataclass(frozen=True)
class Relation:
    """A table the query can read: its columns (SQL order) and how to scan it.

    ``scan(columns, filter, with_row_id, wide)`` plans a read (:class:`Rows`); ``columns=None``
    means all; ``filter`` is a predicate (syntax tree) over unqualified column names (or None) the
    scan may use to skip partitions, stripes and rows — the query still applies its WHERE to what
    it reads; ``wide``: read timestamp columns at microseconds (the query holds a constant beyond
    the nanosecond range, which the engine cannot compare with nanoseconds).
    """

    name: str
    columns: tuple[str, ...]
    scan: Callable[[Sequence[str] | None, exp.Expr | None, bool, bool], Rows]
    has_row_id: bool = True
    #: the ``char(n)`` columns and their lengths (string constants compared with them are padded)
    char_lengths: Mapping[str, int] = field(default_factory=dict)


Resolver = Callable[[TableName], Relation]


@dataclass
class PlannedQuery:
    """A query rewritten over engine relations, with the planned read of each."""

    query: exp.Query
    scans: dict[str, Rows] = field(default_factory=dict)
    #: relation name -> the table it reads (for error messages)
    sources: dict[str, Relation] = field(default_factory=dict)
    #: relations the engine may read as a stream (each scanned once by the query)
    streamable: set[str] = field(default_factory=set)

    def close(self) -> None:
        """Release every scan (their reader leases)."""
        for rows in self.scans.values():
            rows.close()


def run_query(engine: Engine, query: exp.Query, resolve: Resolver) -> pa.Table:
    """Run a Hive query over snapshot scans of the tables it names; Hive-style column names."""
    planned = plan_query(query, resolve)
    try:
        relations = {alias: rows.to_arrow() for alias, rows in planned.scans.items()}
    finally:
        planned.close()
    try:
        result = engine.execute(planned.query, relations)
    except InvalidExpressionError as exc:
        raise _explain(exc, planned) from None
    return result.rename_columns(output_names(planned.query, result.schema))


def stream_query(engine: Engine, query: exp.Query, resolve: Resolver) -> RowStream:
    """:func:`run_query` as a stream (see module docs): the scans' snapshots are held until the
    stream is exhausted or closed. An engine that cannot stream computes the whole result."""
    planned = plan_query(query, resolve)
    try:
        streaming = isinstance(engine, StreamingEngine)
        relations = {
            alias: rows.to_batches()
            if streaming and alias in planned.streamable
            else rows.to_arrow()
            for alias, rows in planned.scans.items()
        }
        try:
            if isinstance(engine, StreamingEngine):
                result = engine.execute_batches(planned.query, relations)
            else:
                table = engine.execute(planned.query, relations)
                result = RowStream(table.schema, table.to_batches())
        except InvalidExpressionError as exc:
            raise _explain(exc, planned) from None
    except BaseException:
        planned.close()
        raise
    result.on_close(planned.close)
    names = output_names(planned.query, result.schema)
    schema = pa.schema([f.with_name(n) for f, n in zip(result.schema, names, strict=True)])
    renamed = (pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in result)
    return RowStream(schema, renamed, result.close)


def plan_query(query: exp.Query, resolve: Resolver) -> PlannedQuery:
    """Rewrite table references to relation names and plan one scan of each table."""
    query = hive_builtins(query.copy())
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    references: dict[str, list[exp.Table]] = {}
    relations: dict[str, Relation] = {}
    for table in list(query.find_all(exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function (UNNEST, VALUES …)
        if not table.db and table.name.lower() in ctes:
            continue
        relation = resolve(TableName(table.name.lower(), table.db.lower() if table.db else None))
        references.setdefault(relation.name, []).append(table)
        relations[relation.name] = relation
    char_literals(query, _char_lengths(relations.values()))
    wanted, everything = _referenced_names(query)
    planned = PlannedQuery(query)
    wide = has_wide_constant(query)
    for index, (qualified, tables) in enumerate(references.items()):
        relation = relations[qualified]
        columns = None if everything else [c for c in relation.columns if c in wanted]
        if columns is not None and not columns:
            columns = list(
                relation.columns[:1]
            )  # e.g. count(*): any one column gives the row count
        with_row_id = ROW_ID_COLUMN in wanted
        if with_row_id and not relation.has_row_id:
            raise SemanticError(f"{qualified} is not a transactional table: it has no ROW__ID")
        pushed = _pushdown(query, tables, relation) if len(tables) == 1 else None
        alias = f"{_RELATION_PREFIX}{index}"
        try:
            planned.scans[alias] = relation.scan(columns, pushed, with_row_id, wide)
        except BaseException:
            planned.close()
            raise
        planned.sources[alias] = relation
        if len(tables) == 1 and not ctes:
            planned.streamable.add(alias)
        for table in tables:
            _point_at(table, alias)
    if ROW_ID_COLUMN in wanted:
        _hide_row_id_from_stars(query, set(planned.scans))
    return planned


def _char_lengths(relations: Iterable[Relation]) -> dict[str, int]:
    """The char columns of the query's tables; a name some table has with another type (or
    another length) is left out: an unqualified name could mean either."""
    seen: dict[str, int | None] = {}
    clashes: set[str] = set()
    for relation in relations:
        for column in relation.columns:
            name = column.lower()
            length = relation.char_lengths.get(name)
            if name in seen and seen[name] != length:
                clashes.add(name)
            seen.setdefault(name, length)
    return {n: v for n, v in seen.items() if v is not None and n not in clashes}


def output_names(query: exp.Expr, result: pa.Schema) -> list[str]:
    """Column names as Hive prints them for the result (of schema ``result``) of ``query``."""
    select = _leftmost_select(query)
    if select is None:
        return [n.lower() for n in result.names]
    projections = select.expressions
    width = len(result.names)
    if len(projections) == 1 and isinstance(projections[0], exp.Posexplode) and width == 2:
        return ["pos", "val"]  # Hive's names for a bare posexplode
    stars = [p for p in projections if _is_star(p)]
    if (
        len(stars) > 1
        or (not stars and len(projections) != width)
        or len(projections) - len(stars) > width
    ):
        return [n.lower() for n in result.names]
    star_width = width - (len(projections) - len(stars))
    names: list[str] = []
    for projection in projections:
        if _is_star(projection):
            names.extend(n.lower() for n in result.names[len(names) : len(names) + star_width])
            continue
        names.append(_projection_name(projection, len(names)))
    return names


# --------------------------------------------------------------------------- helpers
_UNKNOWN_COLUMN = re.compile(
    r'Referenced column "([^"]+)" not found|does not have a column named "([^"]+)"'
)


def _explain(exc: InvalidExpressionError, planned: PlannedQuery) -> Exception:
    """The engine's complaint in the user's terms: table names instead of relation names."""
    text = str(exc).removeprefix("cannot run the statement: ")
    text = text.split("\n\nLINE ")[0].split("\nLINE ")[0]
    for alias, relation in planned.sources.items():
        text = text.replace(alias, relation.name)
    tables = "; ".join(f"{r.name}: {', '.join(r.columns)}" for r in planned.sources.values())
    missing = _UNKNOWN_COLUMN.search(text)
    if missing:
        column = missing.group(1) or missing.group(2)
        return UnknownColumnError(
            f"SELECT: unknown column {column!r} (columns of the tables read: {tables or 'none'})"
        )
    return InvalidExpressionError(f"SELECT: {' '.join(text.split())}")


def _projection_name(projection: exp.Expr, position: int) -> str:
    if isinstance(projection, exp.Alias):
        return projection.alias.lower()
    if isinstance(projection, exp.Column):
        return projection.name.lower()
    if isinstance(projection, exp.Dot):
        return projection.name.lower()
    return f"_c{position}"


def _leftmost_select(query: exp.Expr) -> exp.Select | None:
    node: exp.Expr | None = query
    while isinstance(node, exp.SetOperation | exp.Subquery):
        node = node.this if isinstance(node, exp.Subquery) else node.left
    return node if isinstance(node, exp.Select) else None


def _is_star(node: exp.Expr) -> bool:
    return isinstance(node, exp.Star) or (
        isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
    )


def _referenced_names(query: exp.Expr) -> tuple[set[str], bool]:
    """Lower-case names the query mentions (columns, qualifiers, USING lists); True if it has '*'."""
    names: set[str] = set()
    for column in query.find_all(exp.Column):
        for part in column.parts:
            if isinstance(part, exp.Identifier):
                names.add(part.name.lower())
    for join in query.find_all(exp.Join):
        for ident in join.args.get("using") or []:
            names.add(ident.name.lower())
    for dot in query.find_all(exp.Dot):
        for ident in dot.find_all(exp.Identifier):
            names.add(ident.name.lower())
    everything = any(not isinstance(star.parent, exp.Func) for star in query.find_all(exp.Star))
    return names, everything


def _point_at(table: exp.Table, relation: str) -> None:
    """Make ``table`` read ``relation``, keeping its alias (or its name as the alias)."""
    alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name.lower()))
    table.set("this", exp.to_identifier(relation))
    table.set("db", None)
    table.set("catalog", None)
    table.set("alias", alias)


def _hide_row_id_from_stars(query: exp.Expr, relations: set[str]) -> None:
    """``*`` over a scanned table must not show the virtual ROW__ID column."""
    for select in query.find_all(exp.Select):
        direct = _direct_tables(select)
        with_row_id = {alias for alias, rel in direct.items() if rel in relations}
        if not with_row_id:
            continue
        for projection in select.expressions:
            if isinstance(projection, exp.Star):
                projection.set("except_", [exp.column(ROW_ID_COLUMN)])
            elif (
                isinstance(projection, exp.Column)
                and isinstance(projection.this, exp.Star)
                and projection.table.lower() in with_row_id
            ):
                projection.this.set("except_", [exp.column(ROW_ID_COLUMN)])


def _direct_tables(select: exp.Select) -> dict[str, str]:
    """alias -> relation name for the tables in this SELECT's own FROM / JOIN clauses."""
    out: dict[str, str] = {}
    sources = [select.args.get("from_")] + list(select.args.get("joins") or [])
    for src in sources:
        if src is None:
            continue
        table = src.this
        if isinstance(table, exp.Table) and isinstance(table.this, exp.Identifier):
            out[table.alias_or_name.lower()] = table.name
    return out


_PUSHABLE = (
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.In,
    exp.Between,
    exp.Is,
    exp.Like,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Paren,
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Neg,
    exp.Tuple,
)


def _pushdown(query: exp.Expr, tables: list[exp.Table], relation: Relation) -> exp.Expr | None:
    """The simple WHERE conjuncts over only this table, for the scan to prune partitions/rows."""
    table = tables[0]
    select = table.parent.parent if isinstance(table.parent, exp.From) else None
    if (
        not isinstance(select, exp.Select)
        or select.args.get("joins")
        or select.args.get("laterals")
    ):
        return None
    where = select.args.get("where")
    if not isinstance(where, exp.Where):
        return None
    alias = table.alias_or_name.lower()
    parts = []
    for conjunct in _conjuncts(where.this):
        if not all(isinstance(node, _PUSHABLE) for node in conjunct.walk()):
            continue
        columns = list(conjunct.find_all(exp.Column))
        if not columns or any(
            c.name.lower() not in relation.columns
            or (c.table and c.table.lower() != alias)
            or c.args.get("db")
            for c in columns
        ):
            continue
        bare = conjunct.copy()
        for c in bare.find_all(exp.Column):
            c.set("table", None)
        parts.append(exp.paren(bare))
    return exp.and_(*parts) if parts else None


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]
