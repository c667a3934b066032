"""Taking compactions back from workers that died or ran too long (Hive's
``revokeTimedoutWorkers``, and the housekeeper's reaping of a dead worker's txn).

A worker heartbeats its compactor txn; once the reaper aborts that txn (the worker is silent
for ``hive.txn.timeout``), :func:`requeue_dead_workers` puts its entry back to ``initiated``
for the next worker. :func:`revoke_timed_out_workers` does the same for entries working
longer than ``hive.compactor.worker.timeout``, aborting their txns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.engine import Connection

from acid_platform.metastore import txns
from acid_platform.metastore.model import CompactionState
from acid_platform.metastore.schema import compaction_queue as cq

_I, _W = CompactionState.INITIATED.code, CompactionState.WORKING.code


def revoke_timed_out_workers(conn: Connection, now: int, timeout_ms: int) -> list[int]:
    """Put entries whose worker started too long ago back to ``initiated``; abort their txns."""
    stale: Sequence[tuple[Any, ...]] = conn.execute(
        select(cq.c.cq_id, cq.c.cq_txn_id)
        .where(cq.c.cq_state == _W, cq.c.cq_start < now - timeout_ms)
        .order_by(cq.c.cq_txn_id)
    ).all()
    revoked = []
    for cq_id, txn_id in stale:
        if txn_id is not None:
            txn_id = int(txn_id)
            row = txns.lock_txn(conn, txn_id)
            if row is not None and row.txn_state == txns.OPEN:
                txns.abort_locked(conn, [txn_id])
        changed = conn.execute(
            update(cq)
            .where(cq.c.cq_id == cq_id, cq.c.cq_state == _W, cq.c.cq_start < now - timeout_ms)
            .values(cq_state=_I, cq_worker_id=None, cq_start=None, cq_txn_id=None)
        ).rowcount
        if changed:
            revoked.append(int(cq_id))
    return revoked


def requeue_dead_workers(conn: Connection) -> list[int]:
    """Put ``working`` entries whose compactor txn is no longer open (the reaper aborted it:
    the worker died) back to ``initiated``, so the next worker takes them."""
    t = txns.txns
    alive = select(t.c.txn_id).where(t.c.txn_id == cq.c.cq_txn_id, t.c.txn_state == txns.OPEN)
    dead = and_(cq.c.cq_state == _W, ~alive.exists())
    ids = [int(r[0]) for r in conn.execute(select(cq.c.cq_id).where(dead).order_by(cq.c.cq_id))]
    if ids:
        conn.execute(
            update(cq)
            .where(cq.c.cq_id.in_(ids), dead)
            .values(cq_state=_I, cq_worker_id=None, cq_start=None, cq_txn_id=None)
        )
    return ids
