"""A SQL session: its state (:mod:`.state`) plus the statement loop.

``acid_platform.Warehouse`` creates one :class:`SqlSession` for itself (``wh.sql_session``) and
runs ``wh.sql(text)`` through it, so ``USE``, ``SET hivevar:…`` and temporary tables persist
across calls, as in one Hive session. Any other caller makes its own:
``SqlSession(warehouse).execute(text)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from acid_platform.sql.executor import execute_statement
from acid_platform.sql.parser import parse_script
from acid_platform.sql.results import StatementResult
from acid_platform.sql.state import SessionState
from acid_platform.sql.statements import Statement


@dataclass
class SqlSession(SessionState):
    """HiveQL on one warehouse: ``session.execute(text)`` runs a statement or a script.

    >>> # wh = TableWarehouse.open("/tmp/wh", engine=...); SqlSession(wh).execute("SELECT 1")
    """

    def execute(self, text: str) -> pa.Table:
        """Run every statement of ``text``; return the last statement's rows.

        A syntax error anywhere raises :class:`~acid_platform.errors.SqlSyntaxError` before any
        statement runs; otherwise statements run in order and the first failure stops the script.
        """
        results = self.execute_script(text)
        return results[-1].table if results else pa.table({})

    def execute_script(
        self,
        text: str,
        on_result: Callable[[StatementResult], None] | None = None,
        *,
        stream: bool = False,
    ) -> list[StatementResult]:
        """Parse all of ``text`` (nothing runs on a syntax error), then run it statement by statement.

        ``on_result`` sees each result as soon as its statement finished (the CLI prints there).
        With ``stream`` (and ``on_result``), a SELECT's rows come as
        :attr:`StatementResult.stream`, read as ``on_result`` consumes them: no query result is
        ever held whole. The stream is closed when ``on_result`` returns.
        """
        statements = parse_script(text, self.hivevars, self.warehouse.conf)
        return self.run_all(statements, on_result, stream=stream)

    def run_all(
        self,
        statements: Sequence[Statement],
        on_result: Callable[[StatementResult], None] | None = None,
        *,
        stream: bool = False,
    ) -> list[StatementResult]:
        """Run parsed statements in order; the first failure stops the script."""
        results = []
        self.stream_queries = stream and on_result is not None
        try:
            for statement in statements:
                result = execute_statement(self, statement)
                results.append(result)
                try:
                    if on_result is not None:
                        on_result(result)
                finally:
                    if result.stream is not None:
                        result.stream.close()
        finally:
            self.stream_queries = False
        return results


__all__ = ["SqlSession"]
