"""What a SQL session keeps, and what statement handlers use of it.

:class:`SessionState` is what Hive keeps per session: the warehouse it talks to, the current
database (``USE``), ``hivevar`` variables and temporary tables (session-scoped Arrow tables, not
transactional). An open ``BEGIN`` transaction lives on the warehouse itself (``wh.transaction()`` /
``wh.in_transaction``). The handlers (:mod:`.ddl`, :mod:`.dml`, :mod:`.admin`) take a
``SessionState``; :class:`~acid_platform.sql.session.SqlSession` adds the statement loop on top,
so the modules import one way: state <- handlers <- executor <- session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import NoSuchObjectError, SemanticError
from acid_platform.metastore.names import DEFAULT_DATABASE, choices_text, normalize_identifier
from acid_platform.sql.chars import char_lengths
from acid_platform.sql.select import ArrowRows, Relation, Rows, run_query, stream_query
from acid_platform.sql.statements import TableName
from acid_platform.table.stream import RowStream
from acid_platform.table.table import Table, plan_table_scan
from acid_platform.table.warehouse import TableWarehouse


@dataclass
class TempTable:
    """A ``CREATE TEMPORARY TABLE``: session-scoped rows with their Hive column types."""

    columns: tuple[tuple[str, str], ...]
    data: pa.Table


@dataclass
class SessionState:
    """One session's state on ``warehouse``, and the look-ups statements share."""

    warehouse: TableWarehouse
    database: str = DEFAULT_DATABASE
    hivevars: dict[str, str] = field(default_factory=dict)
    temp_tables: dict[str, TempTable] = field(default_factory=dict)
    #: SELECT results stream (:attr:`StatementResult.stream`) instead of being built whole;
    #: set while a caller that consumes each result at once runs statements (the CLI).
    stream_queries: bool = False

    def use(self, database: str) -> str:
        """Make ``database`` the current one (``USE``): a valid name of a database that exists;
        returns it lower-cased."""
        name = normalize_identifier(database, "database name")
        if not self.warehouse.database_exists(name):
            raise NoSuchObjectError(
                f"Database does not exist: {name}"
                + choices_text(name, self.warehouse.list_databases(), "databases")
            )
        self.database = name
        return name

    def qualified(self, name: TableName) -> str:
        """``db.table`` with the current database filled in."""
        return name.qualified(self.database)

    def temp_table(self, name: TableName) -> TempTable | None:
        """The session's temporary table of that name (temporary tables shadow real ones)."""
        return self.temp_tables.get(self.qualified(name))

    def table(self, name: TableName) -> Table:
        """The warehouse table (raises the table layer's NoSuchObjectError when unknown)."""
        if self.temp_table(name) is not None:
            raise SemanticError(
                f"{self.qualified(name)} is a temporary table: it supports SELECT only"
            )
        return self.warehouse.table(self.qualified(name))

    def relation(self, name: TableName) -> Relation:
        """How the SELECT planner reads ``name`` (temporary table or ACID snapshot scan)."""
        qualified = self.qualified(name)
        temp = self.temp_table(name)
        if temp is not None:
            data = temp.data

            def scan_temp(
                columns: Sequence[str] | None, _filter: exp.Expr | None, _row_id: bool, _w: bool
            ) -> Rows:
                return ArrowRows(data if columns is None else data.select(list(columns)))

            return Relation(
                qualified, tuple(c for c, _ in temp.columns), scan_temp, has_row_id=False
            )
        table = self.warehouse.table(qualified)
        spec = table.spec
        columns = tuple(c for c, _ in spec.columns) + tuple(c for c, _ in spec.partition_columns)

        def scan(
            cols: Sequence[str] | None, predicate: exp.Expr | None, row_id: bool, wide: bool
        ) -> Rows:
            return plan_table_scan(
                table,
                None if cols is None else list(cols),
                predicate,
                with_row_id=row_id,
                exact_where=False,  # the query applies its WHERE itself
                force_wide=wide,
            )

        return Relation(qualified, columns, scan, char_lengths=char_lengths(spec.columns))

    def query(self, query: exp.Query) -> pa.Table:
        """Run a Hive query (sqlglot AST) on the embedded engine under one snapshot.

        Inside ``BEGIN … COMMIT`` that is the transaction's snapshot. Otherwise a query reading
        two or more tables runs in a read-only transaction of its own, so that every table is
        read at the same point (Hive takes one ValidTxnList per query); a one-table query needs
        no transaction, its scan takes its own snapshot.
        """
        end = self._own_transaction(query)
        try:
            result = run_query(self.warehouse.engine, query, self.relation)
        except BaseException:
            end(False)
            raise
        end(True)
        return result

    def stream(self, query: exp.Query) -> RowStream:
        """:meth:`query` as a stream (:func:`~acid_platform.sql.select.stream_query`): the
        snapshot (or the query's own read-only transaction) is held until the stream is
        exhausted or closed."""
        end = self._own_transaction(query)
        try:
            rows = stream_query(self.warehouse.engine, query, self.relation)
        except BaseException:
            end(False)
            raise
        rows.on_close(lambda: end(True))
        return rows

    def _own_transaction(self, query: exp.Query) -> Callable[[bool], None]:
        """Open the read-only transaction a query of two or more tables runs in outside
        ``BEGIN … COMMIT`` (see :meth:`query`); returns how to end it (commit or roll back)."""
        wh = self.warehouse
        if wh.in_transaction or len(_table_names(query)) < 2 or wh.metastore.read_only:
            return lambda _ok: None  # read-only: nothing can commit meanwhile, through here
        txn = wh.transaction()

        def end(ok: bool) -> None:
            if wh.current_transaction is not txn:
                return
            if ok:
                wh.commit()
            else:
                wh.rollback()

        return end


def _table_names(query: exp.Query) -> set[str]:
    """Distinct table names a query reads (CTE names excluded)."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    return {
        f"{t.db}.{t.name}".lower()
        for t in query.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and (t.db or t.name.lower() not in ctes)
    }


__all__ = ["SessionState", "TempTable"]
