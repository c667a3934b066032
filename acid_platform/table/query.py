"""Hive SELECT queries over warehouse tables (the MERGE source, ``TableWarehouse.query``).

A query is bound once: every table it names (``t`` in ``default``, or ``db.t``; CTE names are
left alone) is looked up in the catalog and replaced by a relation the engine is given — the
table's rows in the statement's snapshot. Binding against empty relations gives the result's
columns before any data is read.

>>> # wh.query("SELECT dept, count(*) AS n FROM emp GROUP BY dept")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import sqlglot
from sqlglot import exp

from acid_platform.errors import InvalidExpressionError
from acid_platform.metastore.model import LockComponent, LockType, TableSpec
from acid_platform.table.expressions import DIALECT
from acid_platform.table.schema import table_schema

if TYPE_CHECKING:
    from acid_platform.table.engine import Engine


class QueryHost(Protocol):
    """What a query needs of the warehouse session (a ``QueryHost`` is one): declared
    here, so this module does not import the warehouse, which imports it."""

    @property
    def engine(self) -> Engine: ...

    @property
    def default_database(self) -> str: ...

    def table_spec(self, db: str, table: str) -> TableSpec: ...


@dataclass(frozen=True)
class BoundQuery:
    """A parsed query whose table references point at engine relations."""

    tree: exp.Query
    relations: Mapping[str, TableSpec]

    @property
    def tables(self) -> list[TableSpec]:
        """The warehouse tables the query reads (each once)."""
        return list({s.full_name: s for s in self.relations.values()}.values())

    def read_locks(self) -> list[LockComponent]:
        """SHARED_READ on every table read (Hive's lock for a query's inputs)."""
        return [LockComponent(LockType.SHARED_READ, s.db, s.name) for s in self.tables]

    def columns(self, warehouse: QueryHost) -> list[str]:
        """The result's column names (the query run over empty relations)."""
        empty = {name: table_schema(spec).empty_table() for name, spec in self.relations.items()}
        return list(warehouse.engine.execute(self.tree, empty).column_names)

    def run(self, warehouse: QueryHost, read: Callable[[TableSpec], pa.Table]) -> pa.Table:
        """Run the query; ``read`` gives each table's rows in the statement's snapshot."""
        cache: dict[str, pa.Table] = {}
        data = {}
        for name, spec in self.relations.items():
            if spec.full_name not in cache:
                cache[spec.full_name] = read(spec)
            data[name] = cache[spec.full_name]
        return warehouse.engine.execute(self.tree, data)


def bind_query(warehouse: QueryHost, sql: str | exp.Query, what: str = "query") -> BoundQuery:
    """Parse a Hive SELECT (text; a syntax tree is copied) and resolve the tables it reads."""
    if isinstance(sql, exp.Query):
        tree: exp.Expr = sql.copy()
    else:
        try:
            tree = sqlglot.parse_one(sql, read=DIALECT)
        except sqlglot.errors.SqlglotError as exc:
            raise InvalidExpressionError(
                f"{what}: {sql!r} does not parse as Hive SQL: {exc}"
            ) from exc
    if not isinstance(tree, exp.Query):
        raise InvalidExpressionError(f"{what}: {sql!r} is not a query")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    relations: dict[str, TableSpec] = {}
    for i, ref in enumerate(list(tree.find_all(exp.Table))):
        if not ref.args.get("db") and ref.name.lower() in ctes:
            continue
        spec = warehouse.table_spec(ref.db or warehouse.default_database, ref.name)
        name = f"__acid_rel_{i}"
        relations[name] = spec
        alias = exp.to_identifier(ref.alias_or_name, quoted=True)
        ref.replace(exp.to_table(name).as_(alias))
    return BoundQuery(tree, relations)
