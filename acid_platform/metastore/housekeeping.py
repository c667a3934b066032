"""Housekeeping of transactions: batch heartbeats, the time-out reaper, history purge.

Hive's AcidHouseKeeperService (``hive.txn.timeout``, default 300 s) and AcidTxnCleanerService.
Run :func:`reap_timed_out` every ``timeout / 2`` or so from any process; it is idempotent and
safe to run from several processes at once.
"""

from __future__ import annotations

from sqlalchemy import delete, exists, select, update
from sqlalchemy.engine import Connection

from acid_platform.metastore.schema import hive_locks, txns, write_set
from acid_platform.metastore.store import Store, tuples
from acid_platform.metastore.txns import (
    ABORTED,
    COMMITTED,
    OPEN,
    abort_locked,
    chunks,
    empty_aborted,
    min_open_txn,
    purged_state,
)


def heartbeat_txn_range(
    conn: Connection, now: int, min_txn: int, max_txn: int
) -> tuple[list[int], list[int]]:
    """Heartbeat every open txn in ``[min_txn, max_txn]``; returns (aborted, no such) ids."""
    if max_txn < min_txn:
        raise ValueError(f"txn range [{min_txn}, {max_txn}] is empty")
    conn.execute(
        update(txns)
        .where(txns.c.txn_id.between(min_txn, max_txn), txns.c.txn_state == OPEN)
        .values(txn_last_heartbeat=now, txn_heartbeat_count=txns.c.txn_heartbeat_count + 1)
    )
    states: dict[int, str] = {
        tid: state
        for tid, state in tuples(
            conn.execute(
                select(txns.c.txn_id, txns.c.txn_state).where(
                    txns.c.txn_id.between(min_txn, max_txn)
                )
            )
        )
    }
    for t in range(min_txn, max_txn + 1):
        if t not in states:
            state = purged_state(conn, t)  # an empty txn's abort purged its row
            if state is not None:
                states[t] = state
    aborted = [t for t in range(min_txn, max_txn + 1) if states.get(t) == ABORTED]
    nosuch = [t for t in range(min_txn, max_txn + 1) if states.get(t) in (None, COMMITTED)]
    return aborted, nosuch


def reap_timed_out(conn: Connection, now: int, timeout_ms: int) -> list[int]:
    """Abort open txns whose last heartbeat is older than the time-out; expire txn-less locks."""
    cutoff = now - timeout_ms
    stale = [
        r[0]
        for r in conn.execute(
            select(txns.c.txn_id).where(
                txns.c.txn_state == OPEN, txns.c.txn_last_heartbeat < cutoff
            )
        )
    ]
    aborted: list[int] = []
    for chunk in chunks(sorted(stale)):
        # Re-check under the row lock: a heartbeat or commit may have raced us.
        locked = [
            r[0]
            for r in conn.execute(
                select(txns.c.txn_id)
                .where(
                    txns.c.txn_id.in_(chunk),
                    txns.c.txn_state == OPEN,
                    txns.c.txn_last_heartbeat < cutoff,
                )
                .order_by(txns.c.txn_id)
                .with_for_update()
            )
        ]
        abort_locked(conn, locked)
        aborted.extend(locked)
    conn.execute(
        delete(hive_locks).where(
            hive_locks.c.hl_txnid == 0, hive_locks.c.hl_last_heartbeat < cutoff
        )
    )
    # Safety net: a lock whose txn is no longer open (a client that enqueued a lock while
    # the same txn was being committed) would otherwise block others forever.
    conn.execute(
        delete(hive_locks).where(
            hive_locks.c.hl_txnid != 0,
            ~exists().where(txns.c.txn_id == hive_locks.c.hl_txnid, txns.c.txn_state == OPEN),
        )
    )
    return aborted


def purge_txn_history(store: Store, conn: Connection) -> dict[str, int]:
    """Drop metadata no transaction can need any more (Hive's AcidTxnCleaner/WriteSet reaper).

    * committed TXNS rows below the lowest open txn;
    * WRITE_SET rows committed before the lowest open txn (no open txn overlaps them);
    * aborted txns that left nothing behind (no components, no write ids, not a compactor).
    """
    low = min_open_txn(conn)
    if low is None:
        low = store.peek_sequence(conn, "txn")
    committed = conn.execute(
        delete(txns).where(txns.c.txn_state == COMMITTED, txns.c.txn_id < low)
    ).rowcount
    ws = conn.execute(delete(write_set).where(write_set.c.ws_commit_id < low)).rowcount
    # Aborts purge their empty txns at once; this catches those emptied since (the cleaner
    # removed their components) and rows left by older versions.
    empty = conn.execute(delete(txns).where(empty_aborted())).rowcount
    return {"committed_txns": committed, "write_set": ws, "empty_aborted_txns": empty}
