"""Rows for SHOW TRANSACTIONS, SHOW LOCKS and SHOW COMPACTIONS, keyed by Hive's column names.

Values are Python values (ints for ids and epoch-millisecond times, ``None`` where Hive prints
``---`` or ``NULL``); a front end formats them. Lock ids are Hive's ``ext.int`` strings.

SHOW COMPACTIONS' ``Duration(ms)`` is how long the compaction took: from ``Start Time`` (a worker
claimed it) to ``Commit Time`` (its compactor transaction committed). Hive 4 prints ``CC_END -
CC_START`` instead, and ``CC_END`` is when the entry left the queue — for a compaction that
succeeded, when the *cleaner* finished with it, often minutes after the commit (a 0.25 s
compaction showed ``137722``). An entry that never committed (failed, refused, not initiated)
lasted until it left the queue: ``end - start``, as in Hive; one still working or waiting has
none (``---``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from acid_platform.metastore import compaction_queue
from acid_platform.metastore.locks import ACQUIRED, NO_TXN, lock_str
from acid_platform.metastore.model import CompactionInfo, LockType
from acid_platform.metastore.schema import hive_locks, txns
from acid_platform.metastore.txns import ABORTED, OPEN

SHOW_TRANSACTIONS_COLUMNS = (
    "Transaction ID",
    "Transaction State",
    "Started Time",
    "Last Heartbeat Time",
    "User",
    "Hostname",
)
SHOW_LOCKS_COLUMNS = (
    "Lock ID",
    "Database",
    "Table",
    "Partition",
    "State",
    "Blocked By",
    "Type",
    "Transaction ID",
    "Last Heartbeat",
    "Acquired At",
    "User",
    "Hostname",
    "Agent Info",
)
SHOW_COMPACTIONS_COLUMNS = (  # Hive 4.0's ShowCompactionsOperation header, in its order
    "CompactionId",
    "Database",
    "Table",
    "Partition",
    "Type",
    "State",
    "Worker host",
    "Worker",
    "Enqueue Time",
    "Start Time",
    "Duration(ms)",
    "HadoopJobId",
    "Error message",
    "Initiator host",
    "Initiator",
    "Pool name",
    "TxnId",
    "Next TxnId",
    "Commit Time",
    "Highest WriteId",
)
# The time columns (epoch milliseconds here; SQL shows them as timestamps).
SHOW_COMPACTIONS_TIMES = ("Enqueue Time", "Start Time", "Commit Time")


def show_transactions(conn: Connection) -> list[dict[str, Any]]:
    """Open and aborted transactions, by id (committed ones are not shown, as in Hive)."""
    rows = conn.execute(
        select(txns).where(txns.c.txn_state.in_((OPEN, ABORTED))).order_by(txns.c.txn_id)
    )
    return [
        {
            "Transaction ID": r.txn_id,
            "Transaction State": "OPEN" if r.txn_state == OPEN else "ABORTED",
            "Started Time": r.txn_started,
            "Last Heartbeat Time": r.txn_last_heartbeat,
            "User": r.txn_user,
            "Hostname": r.txn_host,
        }
        for r in rows
    ]


def open_txns_by_agent(conn: Connection, agent_info: str) -> list[int]:
    """The open transactions opened with exactly ``agent_info`` (as stored: its first 128
    characters), by id."""
    rows = conn.execute(_OPEN_BY_AGENT, {"b_agent": agent_info[:128]})
    return [int(r.txn_id) for r in rows]


def show_locks(conn: Connection) -> list[dict[str, Any]]:
    """Every lock component, by (ext id, int id)."""
    hl = hive_locks
    rows = conn.execute(select(hl).order_by(hl.c.hl_lock_ext_id, hl.c.hl_lock_int_id))
    return [
        {
            "Lock ID": lock_str(r.hl_lock_ext_id, r.hl_lock_int_id),
            "Database": r.hl_db,
            "Table": r.hl_table,
            "Partition": r.hl_partition,
            "State": "ACQUIRED" if r.hl_lock_state == ACQUIRED else "WAITING",
            "Blocked By": None
            if r.hl_blockedby_ext_id is None
            else lock_str(r.hl_blockedby_ext_id, r.hl_blockedby_int_id),
            "Type": LockType.from_code(r.hl_lock_type).value,
            "Transaction ID": None if r.hl_txnid == NO_TXN else r.hl_txnid,
            "Last Heartbeat": r.hl_last_heartbeat,
            "Acquired At": r.hl_acquired_at,
            "User": r.hl_user,
            "Hostname": r.hl_host,
            "Agent Info": r.hl_agent_info,
        }
        for r in rows
    ]


def show_compactions(conn: Connection) -> list[dict[str, Any]]:
    """Queue entries then history entries (Hive lists both)."""
    out = []
    for ci in compaction_queue.all_entries(conn):
        host, worker = _split_id(ci.worker_id)
        ihost, initiator = _split_id(ci.initiator_id)
        duration = compaction_duration(ci)
        out.append(
            {
                "CompactionId": ci.id,
                "Database": ci.db,
                "Table": ci.table,
                "Partition": ci.partition,
                "Type": None if ci.type is None else ci.type.value.upper(),
                "State": ci.state.value,
                "Worker host": host,
                "Worker": worker,
                "Enqueue Time": ci.enqueue_time,
                "Start Time": ci.start,
                "Duration(ms)": duration,
                "HadoopJobId": None,
                "Error message": ci.error_message,
                "Initiator host": ihost,
                "Initiator": initiator,
                "Pool name": ci.pool_name,
                "TxnId": ci.txn_id,
                "Next TxnId": ci.next_txn_id,
                "Commit Time": ci.commit_time,
                "Highest WriteId": ci.highest_write_id,
            }
        )
    return out


def compaction_duration(ci: CompactionInfo) -> int | None:
    """Milliseconds from a compaction's start to its commit (or, uncommitted, to its end);
    ``None`` before it has either (see the module docs)."""
    if ci.start is None:
        return None
    finished = ci.commit_time if ci.commit_time is not None else ci.end
    return None if finished is None else finished - ci.start


def _split_id(worker_id: str | None) -> tuple[str | None, str | None]:
    """Hive's ``getHostFromId``/``getThreadIdFromId``: ``host-thread`` split at the last dash."""
    if worker_id is None:
        return None, None
    dash = worker_id.rfind("-")
    return (worker_id[:dash] if dash > -1 else worker_id), worker_id[dash + 1 :]


_OPEN_BY_AGENT = (
    select(txns.c.txn_id)
    .where(txns.c.txn_state == OPEN, txns.c.txn_agent_info == bindparam("b_agent"))
    .order_by(txns.c.txn_id)
)
