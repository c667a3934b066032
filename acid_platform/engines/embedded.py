"""The embedded engine: DuckDB over Arrow, in process, no JVM.

Relations are registered as DuckDB views over Arrow tables (zero copy); the Hive-dialect plan is
transpiled to DuckDB's dialect with sqlglot and its result fetched as Arrow. Each call runs on
its own cursor of the process's shared in-memory database, so registrations never leak between
calls (or engines) and one engine serves several threads.

The engine is sandboxed (:data:`SANDBOX`): it reads only the Arrow relations it is handed. File
and network access is off (``read_text``, ``read_csv``, ``COPY``, ``ATTACH``, ``http://`` …),
extensions are never installed or loaded, Python variables are not scanned by name, and the
configuration is locked, so no statement can turn any of this back on. What the sandbox refuses
is a :class:`~acid_platform.errors.SandboxError`.
:meth:`EmbeddedEngine.execute_batches` streams: relations may be ``RecordBatchReader`` s (each
scanned once, as read), and the result comes batch by batch as DuckDB computes it.

>>> import pyarrow as pa
>>> e = EmbeddedEngine()
>>> e.execute("SELECT concat(s, '!') AS s FROM r", {"r": pa.table({"s": ["hi"]})}).to_pylist()
[{'s': 'hi!'}]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from acid_platform.errors import EngineError, InvalidExpressionError, SandboxError
from acid_platform.table.engine import PLAN_DIALECT
from acid_platform.table.stream import RowStream

DIALECT = "duckdb"
#: Rows per batch of a streamed result.
BATCH_ROWS = 65_536
#: DuckDB settings of every connection: no files, no network, no extensions, no Python
#: replacement scans; ``lock_configuration`` (set last) freezes them for the connection's life.
#: Arrow relations registered on a cursor still work (they are not external access).
SANDBOX: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,
    "lock_configuration": True,
}


#: The process's in-memory DuckDB databases, one per (process, settings): a new database costs
#: ~12 ms, a cursor on it well under one. Every engine with the same settings runs its statements
#: on cursors of one database; a cursor's registrations and temporary objects are its own, so
#: engines (and warehouses) never see each other's relations. Keyed by process id too: a forked
#: child makes its own rather than using its parent's.
_DATABASES: dict[tuple[int, str], duckdb.DuckDBPyConnection] = {}
_DATABASES_LOCK = threading.Lock()


def _new_cursor(config: Mapping[str, Any]) -> duckdb.DuckDBPyConnection:
    """A new cursor of the shared sandboxed database of ``config`` in this process (made on
    first use); taken under the lock, as a connection is not thread-safe."""
    key = (os.getpid(), repr(config))  # in order: ``lock_configuration`` is set last
    with _DATABASES_LOCK:
        database = _DATABASES.get(key)
        if database is None:
            database = _DATABASES[key] = duckdb.connect(":memory:", config=dict(config))
        return database.cursor()


class EmbeddedEngine:
    """DuckDB engine over Arrow relations (the default engine of a warehouse)."""

    name = "embedded"

    def __init__(self, *, threads: int | None = None) -> None:
        self._config: dict[str, str | bool | int | float | list[str]] = (
            {"threads": threads} if threads else {}
        ) | SANDBOX
        # Connected on first use: a warehouse opened to read or write whole tables, as a Dagster
        # step or a sensor tick does, never asks the engine anything.
        self._connected = False
        # Load sqlglot's DuckDB dialect now (~0.3 s, once per process), not in the first statement.
        sqlglot.Dialect.get_or_raise(DIALECT)

    def transpile(self, plan: exp.Expr | str) -> str:
        """The DuckDB SQL for a Hive-dialect plan."""
        tree = _parse(plan) if isinstance(plan, str) else plan
        return tree.sql(dialect=DIALECT)

    def execute(self, plan: exp.Expr | str, relations: Mapping[str, Any]) -> pa.Table:
        """Run ``plan`` over Arrow ``relations`` and return the result as an Arrow table."""
        sql = self.transpile(plan)
        cursor = self._cursor(relations)
        try:
            result = _arrow(_run(cursor, sql))
            return result.read_all() if isinstance(result, pa.RecordBatchReader) else result
        finally:
            cursor.close()

    def execute_batches(self, plan: exp.Expr | str, relations: Mapping[str, Any]) -> RowStream:
        """Run ``plan`` and stream its rows (:data:`BATCH_ROWS` at a time). ``relations`` are
        Arrow tables or ``RecordBatchReader`` s, each read once as DuckDB consumes it; the
        cursor is released when the stream is done."""
        sql = self.transpile(plan)
        cursor = self._cursor(relations)
        try:
            result = _run(cursor, sql)
            try:
                reader = result.fetch_record_batch(BATCH_ROWS)
            except duckdb.Error as exc:
                raise EngineError(f"embedded engine failed: {exc}") from exc
        except BaseException:
            cursor.close()
            raise
        return RowStream(reader.schema, _batches(reader), cursor.close)

    def _cursor(self, relations: Mapping[str, Any]) -> duckdb.DuckDBPyConnection:
        """A cursor of its own with ``relations`` registered (closed by the caller)."""
        cursor = _new_cursor(self._config)
        self._connected = True
        try:
            for name, data in relations.items():
                cursor.register(name, _as_arrow(name, data))
        except BaseException:
            cursor.close()
            raise
        return cursor

    @property
    def connected(self) -> bool:
        """Whether the engine has used DuckDB (on its first statement)."""
        return self._connected

    def close(self) -> None:
        """Nothing to release: each statement's cursor is closed when it ends, and the
        process's shared database (:func:`_new_cursor`) outlives any one engine."""


def _run(cursor: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyConnection:
    try:
        return cursor.execute(sql)
    except duckdb.PermissionException as exc:
        raise SandboxError(f"the embedded engine's sandbox refused: {_first_line(exc)}") from exc
    except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as exc:
        raise InvalidExpressionError(f"cannot run the statement: {exc}") from exc
    except duckdb.Error as exc:
        raise EngineError(f"embedded engine failed: {exc}") from exc


def _first_line(exc: Exception) -> str:
    return str(exc).split("\n")[0].removeprefix("Permission Error: ")


def _arrow(cursor: duckdb.DuckDBPyConnection) -> pa.Table | pa.RecordBatchReader:
    try:
        return cursor.arrow()
    except duckdb.Error as exc:
        raise EngineError(f"embedded engine failed: {exc}") from exc


def _batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except (duckdb.Error, pa.ArrowException) as exc:
            raise EngineError(f"embedded engine failed: {exc}") from exc
        yield batch


def _parse(text: str) -> exp.Expr:
    try:
        return sqlglot.parse_one(text, read=PLAN_DIALECT)
    except sqlglot.errors.ParseError as exc:
        raise InvalidExpressionError(f"cannot parse plan: {exc}") from exc


def _as_arrow(name: str, data: Any) -> pa.Table | pa.RecordBatchReader:
    if isinstance(data, pa.Table | pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    raise TypeError(
        f"relation {name!r}: the embedded engine takes Arrow tables, not {type(data).__name__}"
    )
