"""Transaction control, SHOW, SET, ABORT TRANSACTIONS and ALTER TABLE … COMPACT.

SHOW TRANSACTIONS / LOCKS print the metastore's rows under Hive's column names
(in Hive's order, also when there are no rows). ``SET k=v`` writes ``wh.conf`` (``hiveconf``),
``SET hivevar:k=v`` the session's variables; both feed ``${…}`` substitution. A Hive key without
effect here, or an unknown (misspelled) ``hive.*`` key, gets a note (:mod:`.settings`).
SHOW COMPACTIONS is :mod:`.show_compactions`. ``SHOW TABLE STATUS [IN db] [LIKE 'p']`` prints the
health report (:mod:`acid_platform.compaction.health`) of each matching table, a row per
partition.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from acid_platform.compaction import compact_table
from acid_platform.compaction.health import STATUS_SCHEMA, health_report
from acid_platform.errors import UnsupportedOperationError
from acid_platform.metastore import TableSpec
from acid_platform.metastore.show import (
    SHOW_LOCKS_COLUMNS,
    SHOW_TRANSACTIONS_COLUMNS,
)
from acid_platform.sql import statements as st
from acid_platform.sql.results import StatementResult, empty_result, rows_result
from acid_platform.sql.settings import setting_notes
from acid_platform.sql.show_compactions import spec_partition_name, utc_millis_text
from acid_platform.sql.state import SessionState


def begin(session: SessionState, stmt: st.Begin) -> StatementResult:
    """``BEGIN`` / ``START TRANSACTION``."""
    txn = session.warehouse.transaction()
    return empty_result(stmt, f"transaction {txn.id} started")


def commit(session: SessionState, stmt: st.Commit) -> StatementResult:
    """``COMMIT``."""
    txn_id = _txn_id(session)
    session.warehouse.commit()
    return empty_result(stmt, f"transaction {txn_id} committed")


def rollback(session: SessionState, stmt: st.Rollback) -> StatementResult:
    """``ROLLBACK``."""
    txn_id = _txn_id(session)
    session.warehouse.rollback()
    return empty_result(stmt, f"transaction {txn_id} rolled back")


def abort_transactions(session: SessionState, stmt: st.AbortTransactions) -> StatementResult:
    """``ABORT TRANSACTIONS id …`` (open transactions of any session)."""
    aborted = session.warehouse.abort_transactions(stmt.txn_ids)
    ids = ", ".join(str(i) for i in aborted)
    return empty_result(stmt, f"aborted transaction(s) {ids}")


def show(session: SessionState, stmt: st.Show) -> StatementResult:
    """The SHOW family."""
    wh = session.warehouse
    if stmt.what == "transactions":
        return rows_result(stmt, wh.show_transactions(), SHOW_TRANSACTIONS_COLUMNS)
    if stmt.what == "locks":
        return rows_result(stmt, _locks(session, stmt, wh.show_locks()), SHOW_LOCKS_COLUMNS)
    if stmt.what == "databases":
        names = _like(wh.list_databases(), stmt.pattern)
        return rows_result(stmt, [{"database_name": n} for n in names], ("database_name",))
    if stmt.what == "table_status":
        database = stmt.database or session.database
        tables = [
            health_report(wh, f"{database}.{n}").to_arrow()
            for n in _like(sorted(wh.list_tables(database)), stmt.pattern)
        ]
        rows = pa.concat_tables(tables) if tables else STATUS_SCHEMA.empty_table()
        return StatementResult(stmt, rows)
    if stmt.what == "tables":
        database = stmt.database or session.database
        names = wh.list_tables(database)
        names += [
            q.partition(".")[2] for q in session.temp_tables if q.partition(".")[0] == database
        ]
        return rows_result(
            stmt, [{"tab_name": n} for n in _like(sorted(set(names)), stmt.pattern)], ("tab_name",)
        )
    assert stmt.table is not None
    if stmt.what == "columns":
        temp = session.temp_table(stmt.table)
        columns = temp.columns if temp is not None else _all_columns(session.table(stmt.table).spec)
        return rows_result(stmt, [{"field": c} for c, _ in columns], ("field",))
    table = session.table(stmt.table)
    if stmt.what == "tblproperties":
        props = sorted(table.spec.properties.items())
        rows = [{"prpt_name": k, "prpt_value": v} for k, v in props]
        return rows_result(stmt, rows, ("prpt_name", "prpt_value"))
    names = wh.list_partitions(table.name)
    return rows_result(stmt, [{"partition": n} for n in names], ("partition",))


def set_variable(session: SessionState, stmt: st.SetVariable) -> StatementResult:
    """``SET`` (list), ``SET k`` (show one), ``SET k=v`` / ``SET hivevar:k=v`` / ``SET hiveconf:k=v``."""
    conf = session.warehouse.conf
    if stmt.key is None:
        rows = [{"set": f"{k}={v}"} for k, v in sorted(conf.items())]
        rows += [{"set": f"hivevar:{k}={v}"} for k, v in sorted(session.hivevars.items())]
        return rows_result(stmt, rows, ("set",))
    scope, _, name = stmt.key.partition(":")
    if not name:
        scope, name = "hiveconf", stmt.key
    if scope not in ("hivevar", "hiveconf"):
        raise UnsupportedOperationError(
            f"SET {stmt.key}: only hiveconf: and hivevar: variables can be set"
        )
    store: dict[str, str] = session.hivevars if scope == "hivevar" else conf
    if stmt.value is None:
        value = store.get(name)
        text = f"{stmt.key} is undefined" if value is None else f"{stmt.key}={value}"
        return rows_result(stmt, [{"set": text}], ("set",))
    notes: tuple[str, ...] = ()
    if scope == "hiveconf":
        session.warehouse.set_conf(name, stmt.value)  # hive.txn.timeout reaches the metastore
        notes = setting_notes(name)
    else:
        store[name] = stmt.value
    return empty_result(stmt, f"{stmt.key}={stmt.value}", notes)


def compact(session: SessionState, stmt: st.Compact) -> StatementResult:
    """``ALTER TABLE t [PARTITION (…)] COMPACT 'minor'|'major' [AND WAIT] [POOL 'p']
    [WITH OVERWRITE TBLPROPERTIES (…)]``."""
    name = session.qualified(stmt.table)
    partition = dict(stmt.partition) or None
    said: list[str] = []  # what Hive's AlterTableCompactOperation prints, entry by entry

    def enqueued(cq_id: int, accepted: bool) -> None:
        if accepted:
            said.append(f"Compaction enqueued with id {cq_id}")
        else:
            state = session.warehouse.metastore.get_compaction(cq_id).state.value
            said.append(f"Compaction already enqueued with id {cq_id}; State is {state}")

    infos = compact_table(
        session.warehouse,
        name,
        partition,
        stmt.kind,
        stmt.wait,
        pool=stmt.pool,
        properties=dict(stmt.properties) or None,
        enqueued=enqueued,
        order_by=stmt.order_by,
        number_of_buckets=stmt.number_of_buckets,
    )
    if stmt.wait:
        said += [f"Compaction with id {i.id} finished with status: {i.state.value}" for i in infos]
    done = (
        "done" if stmt.wait else "queued" if any("already" not in s for s in said) else "not queued"
    )
    return empty_result(stmt, f"{stmt.kind} compaction of {name} {done}: " + "; ".join(said))


# --------------------------------------------------------------------------- helpers
def _txn_id(session: SessionState) -> int | str:
    txn = session.warehouse.current_transaction
    return txn.id if txn is not None else ""


def _lock_times(row: dict[str, Any]) -> dict[str, Any]:
    """Last Heartbeat and Acquired At as UTC timestamps (Hive prints epoch milliseconds)."""
    out = dict(row)
    for column in ("Last Heartbeat", "Acquired At"):
        if out.get(column):
            out[column] = utc_millis_text(out[column])
        else:
            out[column] = None
    return out


def _locks(
    session: SessionState, stmt: st.Show, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = [_lock_times(r) for r in rows]
    if stmt.table is not None:
        db = stmt.table.database or session.database
        if stmt.partition:  # Hive's request: exactly that partition's lock components
            name = spec_partition_name(session, stmt.table, stmt.partition, "SHOW LOCKS")
            return [
                r
                for r in rows
                if r.get("Database") == db
                and r.get("Table") == stmt.table.name
                and r.get("Partition") == name
            ]
        return [
            r for r in rows if r.get("Database") == db and r.get("Table") in (stmt.table.name, None)
        ]
    if stmt.database is not None:
        return [r for r in rows if r.get("Database") == stmt.database]
    return rows


def _like(names: Iterable[str], pattern: str | None) -> list[str]:
    """Hive's SHOW … LIKE: ``*`` any text, ``|`` alternatives, case-insensitive."""
    names = list(names)
    if not pattern:
        return names
    alternatives = [re.compile(fnmatch.translate(p.strip().lower())) for p in pattern.split("|")]
    return [n for n in names if any(a.match(n.lower()) for a in alternatives)]


def _all_columns(spec: TableSpec) -> list[tuple[str, str]]:
    return list(spec.columns) + list(spec.partition_columns)
