"""Statements to warehouse / table API calls: :func:`execute_statement` dispatches by kind.

The handlers live by concern: :mod:`.ddl` (databases, tables), :mod:`.dml` (INSERT, UPDATE,
DELETE, MERGE, SELECT), :mod:`.admin` (transactions, SHOW, SET, compaction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acid_platform.errors import UnsupportedOperationError
from acid_platform.sql import admin, ddl, dml, show_compactions
from acid_platform.sql import statements as st
from acid_platform.sql.results import StatementResult
from acid_platform.sql.state import SessionState

Handler = Callable[[SessionState, Any], StatementResult]

_HANDLERS: dict[type[st.Statement], Handler] = {
    st.CreateDatabase: ddl.create_database,
    st.DropDatabase: ddl.drop_database,
    st.UseDatabase: ddl.use_database,
    st.CreateTable: ddl.create_table,
    st.DropTable: ddl.drop_table,
    st.AlterTable: ddl.alter_table,
    st.Describe: ddl.describe,
    st.Insert: dml.insert,
    st.Update: dml.update,
    st.Delete: dml.delete,
    st.Truncate: dml.truncate,
    st.Merge: dml.merge,
    st.Select: dml.select,
    st.Begin: admin.begin,
    st.Commit: admin.commit,
    st.Rollback: admin.rollback,
    st.AbortTransactions: admin.abort_transactions,
    st.Show: admin.show,
    st.ShowCompactions: show_compactions.show_compactions,
    st.SetVariable: admin.set_variable,
    st.Compact: admin.compact,
}


def execute_statement(session: SessionState, statement: st.Statement) -> StatementResult:
    """Run one statement in ``session``."""
    handler = _HANDLERS.get(type(statement))
    if handler is None:
        raise UnsupportedOperationError(f"no executor for {type(statement).__name__}")
    return handler(session, statement)
