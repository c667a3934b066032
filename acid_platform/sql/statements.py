"""HiveQL statements as values: what the parser produces and the executor runs.

Expressions inside statements stay sqlglot ASTs (Hive dialect); the executor prints them back to
Hive SQL text for the table API, or plans them on the embedded engine. Every statement carries its
:class:`SqlSource` (text and position in the script) for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp


@dataclass(frozen=True)
class SqlSource:
    """Where a statement sits in its script: its text and 1-based line / column."""

    text: str = ""
    line: int = 1
    col: int = 1


@dataclass(frozen=True)
class TableName:
    """A table reference as written: ``name`` or ``database.name`` (lower-cased, as Hive stores it).

    >>> TableName("employee").qualified("default")
    'default.employee'
    """

    name: str
    database: str | None = None

    def qualified(self, current_database: str) -> str:
        """``database.name``, with the session's current database when none was written."""
        return f"{self.database or current_database}.{self.name}"

    def __str__(self) -> str:
        return f"{self.database}.{self.name}" if self.database else self.name


@dataclass(frozen=True)
class Statement:
    """Base of all statements."""

    source: SqlSource = field(default_factory=SqlSource, kw_only=True, compare=False, repr=False)


# --------------------------------------------------------------------------- DDL
@dataclass(frozen=True)
class CreateDatabase(Statement):
    """``CREATE DATABASE|SCHEMA [IF NOT EXISTS] name``."""

    name: str
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropDatabase(Statement):
    """``DROP DATABASE|SCHEMA [IF EXISTS] name [CASCADE]``."""

    name: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class UseDatabase(Statement):
    """``USE name``: the session's current database."""

    name: str


@dataclass(frozen=True)
class ColumnSpec:
    """One column of CREATE TABLE: name, Hive type text (``decimal(10,2)``), NOT NULL, comment."""

    name: str
    type: str
    not_null: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class CreateTable(Statement):
    """``CREATE [TEMPORARY] TABLE … [PARTITIONED BY …] [CLUSTERED BY … INTO n BUCKETS] … [AS SELECT]``.

    ``columns`` is empty for CTAS without a column list (the query decides them); ``like`` names the
    table of ``CREATE TABLE t LIKE s``. ``location`` and ``row_format`` are read and reported, never
    used: a managed ACID table lives under the warehouse, always as ORC.
    """

    table: TableName
    columns: tuple[ColumnSpec, ...] = ()
    partition_columns: tuple[ColumnSpec, ...] = ()
    bucket_columns: tuple[str, ...] = ()
    sorted_by: tuple[str, ...] = ()
    num_buckets: int = 0
    properties: tuple[tuple[str, str], ...] = ()
    stored_as: str | None = None
    location: str | None = None
    row_format: bool = False
    if_not_exists: bool = False
    temporary: bool = False
    external: bool = False
    query: exp.Query | None = None
    like: TableName | None = None


@dataclass(frozen=True)
class DropTable(Statement):
    """``DROP TABLE [IF EXISTS] name [PURGE]``."""

    table: TableName
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTable(Statement):
    """An ``ALTER TABLE`` other than COMPACT: ``SET LOCATION`` runs (``location``), the rest
    is parsed so scripts read and refused when run. ``partition`` is the spec as written."""

    table: TableName
    action: str
    partition: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class Describe(Statement):
    """``DESCRIBE [EXTENDED|FORMATTED] name``."""

    table: TableName
    style: str | None = None


# --------------------------------------------------------------------------- DML
@dataclass(frozen=True)
class Insert(Statement):
    """``INSERT INTO|OVERWRITE [TABLE] t [(cols)] [PARTITION (p='v', q)] VALUES …|SELECT …``.

    ``query`` is the row source (VALUES become ``SELECT * FROM (VALUES …)``). ``static_partition``
    holds ``p='v'`` pairs (values as Python scalars), ``dynamic_partition`` the names written without
    a value; a partitioned table with no PARTITION clause takes all partition columns dynamically.
    """

    table: TableName
    query: exp.Query
    columns: tuple[str, ...] | None = None
    static_partition: tuple[tuple[str, object], ...] = ()
    dynamic_partition: tuple[str, ...] = ()
    overwrite: bool = False
    has_partition_clause: bool = False


@dataclass(frozen=True)
class Update(Statement):
    """``UPDATE t SET c = expr, … [WHERE p]``."""

    table: TableName
    assignments: tuple[tuple[str, exp.Expr], ...]
    where: exp.Expr | None = None


@dataclass(frozen=True)
class Delete(Statement):
    """``DELETE FROM t [WHERE p]``."""

    table: TableName
    where: exp.Expr | None = None


@dataclass(frozen=True)
class Truncate(Statement):
    """``TRUNCATE TABLE t [PARTITION (p='v')]``: a DELETE of every row (of the partition)."""

    table: TableName
    partition: tuple[tuple[str, object], ...] = ()


MergeAction = Literal["update", "delete", "insert"]


@dataclass(frozen=True)
class WhenClause:
    """One ``WHEN [NOT] MATCHED [BY SOURCE] [AND cond] THEN …`` branch of MERGE."""

    action: MergeAction
    matched: bool
    by_source: bool = False
    condition: exp.Expr | None = None
    assignments: tuple[tuple[str, exp.Expr], ...] = ()
    insert_columns: tuple[str, ...] | None = None
    insert_values: tuple[exp.Expr, ...] = ()


@dataclass(frozen=True)
class Merge(Statement):
    """``MERGE INTO target [AS t] USING source [AS s] ON cond WHEN …``.

    ``using`` (the source) is a table name or a query; aliases default to the table names, as in Hive.
    """

    target: TableName
    target_alias: str
    using: TableName | exp.Query
    source_alias: str
    on: exp.Expr
    clauses: tuple[WhenClause, ...]


@dataclass(frozen=True)
class Select(Statement):
    """A query (SELECT, set operation, WITH …)."""

    query: exp.Query


# --------------------------------------------------------------------------- transactions
@dataclass(frozen=True)
class Begin(Statement):
    """``BEGIN`` / ``START TRANSACTION``."""


@dataclass(frozen=True)
class Commit(Statement):
    """``COMMIT [WORK]``."""


@dataclass(frozen=True)
class Rollback(Statement):
    """``ROLLBACK [WORK]``."""


@dataclass(frozen=True)
class AbortTransactions(Statement):
    """``ABORT TRANSACTIONS id id …``."""

    txn_ids: tuple[int, ...]


# --------------------------------------------------------------------------- admin
ShowWhat = Literal[
    "transactions",
    "locks",
    "tables",
    "databases",
    "columns",
    "tblproperties",
    "partitions",
    "table_status",
]


@dataclass(frozen=True)
class Show(Statement):
    """``SHOW TRANSACTIONS|LOCKS [t [PARTITION (…)]]|TABLES [IN db] [LIKE 'p']|DATABASES|COLUMNS IN t|…``;
    ``SHOW TABLE STATUS [IN db] [LIKE 'p']`` is the health report of each table."""

    what: ShowWhat
    database: str | None = None
    table: TableName | None = None
    pattern: str | None = None
    #: ``SHOW LOCKS t PARTITION (…)``: the partition spec.
    partition: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class ShowCompactions(Statement):
    """Hive 4's ``SHOW COMPACTIONS [id | DATABASE db | [db.]t [PARTITION (…)]] [POOL 'p']
    [TYPE 'minor'|'major'] [STATUS 's'] [ORDER BY key [ASC|DESC], …] [LIMIT n]``.

    ``order_by`` keys are Hive's (``compactionid``, ``enqueuetime``, …), lower-cased.
    """

    compaction_id: int | None = None
    database: str | None = None
    table: TableName | None = None
    partition: tuple[tuple[str, object], ...] = ()
    pool: str | None = None
    type: str | None = None
    status: str | None = None
    order_by: tuple[tuple[str, bool], ...] = ()  # (key, descending)
    limit: int | None = None


@dataclass(frozen=True)
class SetVariable(Statement):
    """``SET key=value`` (``hivevar:``/``hiveconf:`` prefixes kept in ``key``); ``SET`` / ``SET key`` show.

    ``value`` is None when the statement only shows; ``key`` is None for a bare ``SET``.
    """

    key: str | None = None
    value: str | None = None


CompactionKind = Literal["minor", "major", "rebalance"]


@dataclass(frozen=True)
class Compact(Statement):
    """``ALTER TABLE t [PARTITION (…)] COMPACT 'minor'|'major'|'rebalance'
    [CLUSTERED INTO n BUCKETS] [AND WAIT] [POOL 'p'] [WITH OVERWRITE TBLPROPERTIES ('k'='v', …)]
    [ORDER BY col [ASC|DESC], …]`` (Hive 4's order of the clauses).

    ``properties`` are stored with the queue entry: ``compactor.<key>`` overrides a compactor
    setting, ``tblprops.<key>`` a table property, for this compaction only.
    """

    table: TableName
    kind: CompactionKind
    partition: tuple[tuple[str, object], ...] = ()
    wait: bool = False
    pool: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    #: ``'rebalance'`` only: ``CLUSTERED INTO n BUCKETS`` and ``ORDER BY k [ASC|DESC], …``.
    number_of_buckets: int | None = None
    order_by: tuple[tuple[str, bool], ...] = ()  # (column, descending)
