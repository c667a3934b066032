"""SHOW COMPACTIONS as Hive 4 prints it: Hive 4.0's columns in its order, ``---`` for an absent
value, times as UTC timestamps (``2026-01-02 03:04:05.678``), and Hive 4's filters
(``id | DATABASE db | t [PARTITION (…)]``, ``POOL``, ``TYPE``, ``STATUS``, ``ORDER BY``, ``LIMIT``).

Rows come from the metastore (:func:`acid_platform.metastore.Metastore.show_compactions`: Python
values, epoch-millisecond times); this module filters, orders and formats them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from acid_platform.errors import SemanticError
from acid_platform.metastore.model import CompactionState
from acid_platform.metastore.show import SHOW_COMPACTIONS_COLUMNS, SHOW_COMPACTIONS_TIMES
from acid_platform.sql import statements as st
from acid_platform.sql.results import StatementResult, rows_result
from acid_platform.sql.state import SessionState
from acid_platform.table.partitions import make_partition_name

NO_VAL = "---"  # Hive's MetaStoreUtils.NO_VAL

#: Hive's ShowCompactionsAnalyzer.CompactionColumn keys (and CC_<KEY> columns), by shown column.
ORDER_KEYS = {
    "compactionid": "CompactionId",
    "dbname": "Database",
    "tabname": "Table",
    "partname": "Partition",
    "type": "Type",
    "state": "State",
    "workerhost": "Worker host",
    "workerid": "Worker",
    "enqueuetime": "Enqueue Time",
    "starttime": "Start Time",
    "duration": "Duration(ms)",
    "hadoopjobid": "HadoopJobId",
    "poolname": "Pool name",
    "txnid": "TxnId",
    "nexttxnid": "Next TxnId",
    "committime": "Commit Time",
    "highestwriteid": "Highest WriteId",
}


def show_compactions(session: SessionState, stmt: st.ShowCompactions) -> StatementResult:
    """``SHOW COMPACTIONS …``: the filtered, ordered, limited rows as Hive 4 prints them."""
    rows = [r for r in session.warehouse.show_compactions() if _matches(r, _filters(session, stmt))]
    for key, descending in reversed(stmt.order_by):
        column = ORDER_KEYS.get(key)
        if column is None:
            raise SemanticError(
                f"SHOW COMPACTIONS ORDER BY {key}: not a column; one of {', '.join(ORDER_KEYS)}"
            )
        present = [r for r in rows if r[column] is not None]
        absent = [r for r in rows if r[column] is None]
        present.sort(key=lambda r, c=column: r[c], reverse=descending)  # type: ignore[misc]
        rows = absent + present if descending else present + absent  # PostgreSQL's NULL order
    if stmt.limit is not None:
        rows = rows[: stmt.limit]
    return rows_result(stmt, [_shown(r) for r in rows], SHOW_COMPACTIONS_COLUMNS)


def spec_partition_name(
    session: SessionState,
    table: st.TableName,
    items: tuple[tuple[str, object], ...],
    statement: str,
) -> str:
    """The partition name (``ds=2024-01-01/h=3``, escaped as Hive's ``makePartName``) of a
    ``PARTITION (…)`` spec that gives every partition column of ``table``."""
    columns = [c for c, _ in session.table(table).spec.partition_columns]
    given = {k.lower(): v for k, v in items}
    if sorted(given) != sorted(columns):
        raise SemanticError(
            f"{statement} … PARTITION: give every partition column ({', '.join(columns)})"
        )
    return make_partition_name(columns, [given[c] for c in columns])


def utc_millis_text(value: int) -> str:
    """An epoch-millisecond time as a UTC timestamp, ``2026-01-02 03:04:05.678``."""
    return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _filters(session: SessionState, stmt: st.ShowCompactions) -> dict[str, object]:
    wanted: dict[str, object] = {}
    if stmt.compaction_id is not None:
        wanted["CompactionId"] = stmt.compaction_id
    if stmt.database is not None:
        wanted["Database"] = stmt.database
    if stmt.table is not None:
        wanted["Database"] = stmt.table.database or session.database
        wanted["Table"] = stmt.table.name
        if stmt.partition:
            wanted["Partition"] = spec_partition_name(
                session, stmt.table, stmt.partition, "SHOW COMPACTIONS"
            )
    if stmt.pool is not None:
        wanted["Pool name"] = stmt.pool
    if stmt.type is not None:
        if stmt.type not in ("minor", "major", "rebalance"):
            raise SemanticError(
                f"SHOW COMPACTIONS TYPE '{stmt.type}': expected 'minor', 'major' or 'rebalance'"
            )
        wanted["Type"] = stmt.type.upper()
    if stmt.status is not None:
        states = [s.value for s in CompactionState]
        if stmt.status not in states:
            raise SemanticError(
                f"SHOW COMPACTIONS STATUS '{stmt.status}': expected one of {', '.join(states)}"
            )
        wanted["State"] = stmt.status
    return wanted


def _matches(row: dict[str, Any], wanted: dict[str, object]) -> bool:
    return all(row[column] == value for column, value in wanted.items())


def _shown(row: dict[str, Any]) -> dict[str, str]:
    out = {}
    for column in SHOW_COMPACTIONS_COLUMNS:
        value = row[column]
        if value is None:
            out[column] = NO_VAL
        elif column in SHOW_COMPACTIONS_TIMES:
            out[column] = utc_millis_text(value)
        else:
            out[column] = str(value)
    return out
