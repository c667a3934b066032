"""Reader leases (beyond Hive): a long read registers its snapshot so the cleaner waits for it.

Hive protects readers through their open transaction. A reader that runs outside a txn (or
wants to keep a snapshot longer than one) opens a lease holding its ``ValidTxnList`` and
heartbeats it; the cleaner does not clean a compaction whose commit the lease's snapshot may
not see (snapshot high watermark < ``CQ_NEXT_TXN_ID``). A crashed reader stops heartbeating and
its lease expires after its time-to-live.

The cleaner's rule for leases: an entry is held while some live lease's snapshot does not
count the compactor's txn (``CQ_TXN_ID``) as committed, i.e. the reader still selects the
pre-compaction files. (Equivalent to "snapshot high watermark < CQ_NEXT_TXN_ID" except that a
snapshot taken after the compaction committed never holds it.)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection

from acid_platform.errors import NoSuchLockError
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.metastore import txns
from acid_platform.metastore.schema import read_leases
from acid_platform.metastore.store import Store


def open_lease(
    store: Store,
    conn: Connection,
    now: int,
    valid_txns: ValidTxnList,
    ttl_ms: int,
    *,
    user: str | None,
    host: str | None,
    agent_info: str | None,
) -> int:
    if not isinstance(valid_txns, ValidTxnList):
        raise TypeError(f"a read lease needs a ValidTxnList, not {type(valid_txns).__name__}")
    if ttl_ms <= 0:
        raise ValueError(f"read lease time-to-live must be positive, not {ttl_ms / 1000}s")
    lease_id = store.allocate(conn, "lease")
    conn.execute(
        insert(read_leases).values(
            rl_id=lease_id,
            rl_valid_txns=str(valid_txns),
            rl_txn_hwm=valid_txns.high_watermark,
            rl_created=now,
            rl_last_heartbeat=now,
            rl_ttl_ms=ttl_ms,
            rl_expires_at=now + ttl_ms,
            rl_user=None if user is None else user[:128],
            rl_host=None if host is None else host[:128],
            rl_agent_info=None if agent_info is None else agent_info[:128],
        )
    )
    return lease_id


def shared_lease(
    store: Store,
    conn: Connection,
    now: int,
    key: str,
    ttl_ms: int,
    *,
    user: str | None,
    host: str | None,
) -> tuple[int, ValidTxnList]:
    """The live lease registered under ``key`` (its agent info), extended by its time-to-live;
    else a new one on the snapshot taken now. Openers queue on the lease sequence, so every
    caller with one key gets the first caller's lease and snapshot."""
    key = key[:128]
    store.lock_sequence(conn, "lease")
    found = find_shared_lease(conn, now, key)
    if found is not None:
        return found
    valid_txns = txns.valid_txns(store, conn)
    lease_id = open_lease(
        store, conn, now, valid_txns, ttl_ms, user=user, host=host, agent_info=key
    )
    return lease_id, valid_txns


def find_shared_lease(conn: Connection, now: int, key: str) -> tuple[int, ValidTxnList] | None:
    """The live lease registered under ``key``, extended by its time-to-live, or ``None``
    (none was opened, or it expired): a statement asking which snapshot its query read."""
    rl = read_leases
    row = conn.execute(
        select(rl.c.rl_id, rl.c.rl_valid_txns)
        .where(rl.c.rl_agent_info == key[:128], rl.c.rl_expires_at >= now)
        .order_by(rl.c.rl_id)
        .limit(1)
    ).first()
    if row is None:
        return None
    heartbeat_lease(conn, now, int(row[0]))
    return int(row[0]), ValidTxnList.parse(str(row[1]))


def heartbeat_lease(conn: Connection, now: int, lease_id: int) -> None:
    """Extend a live lease by its time-to-live; an expired or unknown lease is an error."""
    rl = read_leases
    changed = conn.execute(
        update(rl)
        .where(rl.c.rl_id == lease_id, rl.c.rl_expires_at >= now)
        .values(rl_last_heartbeat=now, rl_expires_at=now + rl.c.rl_ttl_ms)
    ).rowcount
    if not changed:
        raise NoSuchLockError(
            f"No such read lease {lease_id} (closed, or expired: heartbeat more often than its "
            "time-to-live); take a new snapshot"
        )


def close_lease(conn: Connection, lease_id: int) -> bool:
    """Remove a lease; closing one that is gone already is not an error (returns False)."""
    return bool(conn.execute(delete(read_leases).where(read_leases.c.rl_id == lease_id)).rowcount)


def expire_leases(conn: Connection, now: int) -> int:
    return int(conn.execute(delete(read_leases).where(read_leases.c.rl_expires_at < now)).rowcount)


def live_snapshots(conn: Connection, now: int) -> list[ValidTxnList]:
    """Snapshots of the live leases (expired ones are ignored)."""
    return [
        ValidTxnList.parse(str(row[0]))
        for row in conn.execute(
            select(read_leases.c.rl_valid_txns).where(read_leases.c.rl_expires_at >= now)
        )
    ]


def holds(snapshot: ValidTxnList, compactor_txn_id: int | None, next_txn_id: int | None) -> bool:
    """Whether a reader with ``snapshot`` may still read what a compaction made obsolete."""
    if compactor_txn_id is not None:
        return not snapshot.is_txn_valid(compactor_txn_id)
    return next_txn_id is None or snapshot.high_watermark < next_txn_id


def list_leases(conn: Connection, now: int) -> list[dict[str, Any]]:
    rl = read_leases
    return [
        {
            "Lease ID": r.rl_id,
            "Valid Txns": r.rl_valid_txns,
            "Created": r.rl_created,
            "Last Heartbeat": r.rl_last_heartbeat,
            "Expires At": r.rl_expires_at,
            "User": r.rl_user,
            "Hostname": r.rl_host,
            "Agent Info": r.rl_agent_info,
        }
        for r in conn.execute(select(rl).where(rl.c.rl_expires_at >= now).order_by(rl.c.rl_id))
    ]
