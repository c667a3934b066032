"""Per-connection SQL state and the statement loop.

A :class:`SqlSession` belongs to one warehouse object (:func:`session_for` attaches it), and keeps
what Hive keeps per session: the current database (``USE``), ``hivevar`` variables, and
temporary tables (session-scoped Arrow tables, not transactional). An open ``BEGIN`` transaction
lives on the warehouse itself (``wh.begin()`` / ``wh.in_transaction``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import NoSuchObjectError, SemanticError
from acid_platform.sql.parser import parse_script
from acid_platform.sql.results import StatementResult
from acid_platform.sql.select import Relation, run_query
from acid_platform.sql.statements import Statement, TableName

#: The database a new session starts in.
DEFAULT_DATABASE = "default"

_SESSIONS: weakref.WeakKeyDictionary[Any, SqlSession] = weakref.WeakKeyDictionary()


@dataclass
class TempTable:
    """A ``CREATE TEMPORARY TABLE``: session-scoped rows with their Hive column types."""

    columns: tuple[tuple[str, str], ...]
    data: pa.Table


@dataclass
class SqlSession:
    """HiveQL on one warehouse: ``session.execute(text)`` runs a statement or a script.

    >>> # wh = Warehouse.open("/tmp/wh"); SqlSession(wh).execute("SELECT 1").to_pylist()
    """

    warehouse: Any
    database: str = DEFAULT_DATABASE
    hivevars: dict[str, str] = field(default_factory=dict)
    temp_tables: dict[str, TempTable] = field(default_factory=dict)

    def execute(self, text: str) -> pa.Table:
        """Run every statement of ``text``; return the last statement's rows."""
        results = self.execute_script(text)
        return results[-1].table if results else pa.table({})

    def execute_script(
        self, text: str, on_result: Callable[[StatementResult], None] | None = None
    ) -> list[StatementResult]:
        """Parse all of ``text`` (nothing runs on a syntax error), then run it statement by statement.

        ``on_result`` sees each result as soon as its statement finished (the CLI prints there).
        """
        statements = parse_script(text, self.hivevars, self._conf())
        return self.run_all(statements, on_result)

    def run_all(
        self,
        statements: Sequence[Statement],
        on_result: Callable[[StatementResult], None] | None = None,
    ) -> list[StatementResult]:
        """Run parsed statements in order; the first failure stops the script."""
        from acid_platform.sql.executor import execute_statement

        results = []
        for statement in statements:
            result = execute_statement(self, statement)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    # ------------------------------------------------------------------ helpers for executors
    def qualified(self, name: TableName) -> str:
        """``db.table`` with the current database filled in."""
        return name.qualified(self.database)

    def temp_table(self, name: TableName) -> TempTable | None:
        """The session's temporary table of that name (temporary tables shadow real ones)."""
        return self.temp_tables.get(self.qualified(name))

    def table(self, name: TableName) -> Any:
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
                columns: Sequence[str] | None, _filter: str | None, _row_id: bool
            ) -> pa.Table:
                return data if columns is None else data.select(list(columns))

            return Relation(
                qualified, tuple(c for c, _ in temp.columns), scan_temp, has_row_id=False
            )
        try:
            table = self.warehouse.table(qualified)
        except NoSuchObjectError as exc:
            raise NoSuchObjectError(f"Table not found: {qualified} ({exc})") from None
        spec = table.spec
        columns = tuple(c for c, _ in spec.columns) + tuple(c for c, _ in spec.partition_columns)

        def scan(cols: Sequence[str] | None, predicate: str | None, row_id: bool) -> pa.Table:
            return table.scan(
                columns=None if cols is None else list(cols), filter=predicate, with_row_id=row_id
            )

        return Relation(qualified, columns, scan)

    def query(self, query: exp.Query) -> pa.Table:
        """Run a Hive query (sqlglot AST) on the embedded engine under one snapshot.

        Inside ``BEGIN … COMMIT`` that is the transaction's snapshot. Otherwise a query reading
        two or more tables runs in a read-only transaction of its own, so that every table is
        read at the same point (Hive takes one ValidTxnList per query); a one-table query needs
        no transaction, its scan takes its own snapshot.
        """
        wh = self.warehouse
        if getattr(wh, "in_transaction", True) or len(_table_names(query)) < 2:
            return run_query(wh.engine, query, self.relation)
        wh.begin()
        try:
            result = run_query(wh.engine, query, self.relation)
        except BaseException:
            wh.rollback()
            raise
        wh.commit()
        return result

    def _conf(self) -> dict[str, object]:
        conf = getattr(self.warehouse, "conf", None)
        return dict(conf) if conf is not None else {}


def _table_names(query: exp.Query) -> set[str]:
    """Distinct table names a query reads (CTE names excluded)."""
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    return {
        f"{t.db}.{t.name}".lower()
        for t in query.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and (t.db or t.name.lower() not in ctes)
    }


def session_for(warehouse: Any) -> SqlSession:
    """The SQL session attached to ``warehouse`` (created on first use)."""
    session = getattr(warehouse, "_sql_session", None)
    if isinstance(session, SqlSession):
        return session
    session = _SESSIONS.get(warehouse) if _weakrefable(warehouse) else None
    if session is None:
        session = SqlSession(warehouse)
        try:
            warehouse._sql_session = session
        except AttributeError:
            _SESSIONS[warehouse] = session
    return session


def _weakrefable(obj: Any) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


__all__ = ["DEFAULT_DATABASE", "SqlSession", "StatementResult", "TempTable", "session_for"]
