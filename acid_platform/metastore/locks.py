"""Hive 4 locks: all-or-nothing requests queued by lock id, with Hive's compatibility matrix.

A request (one ``HL_LOCK_EXT_ID``, components numbered 1..n) is acquired only when none of
its components conflicts with a component of an *earlier* request (smaller ext id, acquired or
waiting) of another transaction (or with any earlier request when it has no txn) on an
overlapping object (same database; table NULL on either side or equal; partition NULL on
either side or equal). Conflicts (Hive 4 ``CheckLockFunction``), requested vs existing:

=============  ===========  ============  ==========  =========
request         SHARED_READ  SHARED_WRITE  EXCL_WRITE  EXCLUSIVE
=============  ===========  ============  ==========  =========
SHARED_READ     ok           ok            ok          wait [1]
SHARED_WRITE    ok           ok            wait        wait
EXCL_WRITE      ok           wait          wait        wait
EXCLUSIVE       wait [2]     wait          wait        wait
=============  ===========  ============  ==========  =========

[1] not when the existing lock is table/partition-level and the request is database-level;
[2] not when the existing lock is a database-level SHARED_READ and the request names a table.

A component that the same transaction already holds (acquired, on the same or a wider object,
with the same or a stronger type: ``r < w < x < e``) never waits: a multi-statement transaction
(beyond Hive) would otherwise queue its second statement behind other transactions' requests
that are themselves waiting for its first — a deadlock only the wait time-out would break.
Anything that conflicts with such a component conflicts with the held one too, so granting it
admits nothing the held lock does not already exclude.

Because a request only ever waits on smaller ids, there is no deadlock. Request ids are
allocated under the ``lock`` sequence row lock, held until the request's rows are committed,
so a request always sees every earlier one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, bindparam, delete, exists, insert, not_, or_, select, update
from sqlalchemy.engine import Connection, Row

from acid_platform.errors import NoSuchLockError, TxnOpenError
from acid_platform.metastore.model import LockComponent, LockResponse, LockState, LockType
from acid_platform.metastore.schema import hive_locks, txns
from acid_platform.metastore.store import Store
from acid_platform.metastore.txns import OPEN, heartbeat_txn, require_open, txn_str

ACQUIRED, WAITING = "a", "w"
NO_TXN = 0


def lock_str(ext_id: int, int_id: int | None = None) -> str:
    """Hive's ``JavaUtils.lockIdToString``-style id: ``lockid:5`` or ``5.2``."""
    return f"lockid:{ext_id}" if int_id is None else f"{ext_id}.{int_id}"


def enqueue_and_check(
    store: Store,
    conn: Connection,
    now: int,
    txn_id: int | None,
    components: Sequence[LockComponent],
    *,
    user: str | None,
    host: str | None,
    agent_info: str | None,
) -> LockResponse:
    """Queue a lock request and try to acquire it in the same transaction (Hive ``lock``)."""
    comps = list(components)
    if not comps:
        raise ValueError("a lock request needs at least one LockComponent")
    for c in comps:
        if not isinstance(c, LockComponent):
            raise TypeError(f"lock components must be LockComponent, not {type(c).__name__}")
    if txn_id is not None:
        require_open(conn, txn_id)
    ext_id = store.allocate(conn, "lock")
    conn.execute(
        insert(hive_locks),
        [
            {
                "hl_lock_ext_id": ext_id,
                "hl_lock_int_id": i,
                "hl_txnid": txn_id or NO_TXN,
                "hl_db": c.db,
                "hl_table": c.table,
                "hl_partition": c.partition,
                "hl_lock_state": WAITING,
                "hl_lock_type": c.lock_type.code,
                # A txn's locks live as long as the txn; only txn-less locks heartbeat.
                "hl_last_heartbeat": now if txn_id is None else 0,
                "hl_user": _clip(user),
                "hl_host": _clip(host),
                "hl_agent_info": _clip(agent_info),
                "hl_heartbeat_count": 0,
            }
            for i, c in enumerate(comps, start=1)
        ],
    )
    return _check(conn, now, ext_id, txnless=txn_id is None, acquired=False)


def check_lock(conn: Connection, now: int, ext_id: int) -> LockResponse:
    """Try again to acquire a waiting request (Hive ``checkLock``)."""
    rows = _request_rows(conn, ext_id)
    if not rows:
        raise NoSuchLockError(
            f"No such lock {lock_str(ext_id)} (released, expired, or its txn ended)"
        )
    txn_id = rows[0].hl_txnid
    if txn_id != NO_TXN:
        require_open(conn, txn_id)
        heartbeat_txn(conn, now, txn_id)  # a txn waiting for its locks is alive
    return _check(conn, now, ext_id, txnless=txn_id == NO_TXN, acquired=_all_acquired(rows))


FREE, BLOCKED, EXPIRED = "free", "blocked", "expired"


def probe(conn: Connection, now: int, ext_id: int, timeout_ms: int) -> str:
    """Read-only probe of a waiting request: :data:`FREE` (:func:`check_lock` would acquire
    it now), :data:`BLOCKED`, or :data:`EXPIRED` (its first blocker belongs to a txn, or is a
    txn-less lock, silent for longer than ``timeout_ms``: reap it, as Hive's lock check does)."""
    rows = _request_rows(conn, ext_id)
    if not rows:
        raise NoSuchLockError(f"No such lock {lock_str(ext_id)}")
    blocker = conn.execute(_BLOCKER, {"b_ext": ext_id}).first()
    if blocker is None:
        return FREE
    if blocker.hl_txnid == NO_TXN:
        last = blocker.hl_last_heartbeat or 0
    else:
        txn = conn.execute(_TXN_HEARTBEAT, {"b_txn_id": blocker.hl_txnid}).first()
        if txn is None or txn.txn_state != OPEN:
            return EXPIRED  # a lock its ended txn left behind: the reaper drops it
        last = txn.txn_last_heartbeat
    return EXPIRED if last < now - timeout_ms else BLOCKED


def cancel_if_waiting(conn: Connection, now: int, ext_id: int) -> LockResponse | None:
    """Last check at the end of a wait: acquire if possible, else remove the request.

    Returns the response if acquired, ``None`` if the request was removed.
    """
    rows = _request_rows(conn, ext_id)
    if not rows:
        raise NoSuchLockError(f"No such lock {lock_str(ext_id)}")
    txnless = rows[0].hl_txnid == NO_TXN
    response = _check(conn, now, ext_id, txnless=txnless, acquired=_all_acquired(rows))
    if response.state == LockState.ACQUIRED:
        return response
    conn.execute(_DELETE_REQUEST, {"b_ext": ext_id})
    return None


def blocker_of(conn: Connection, ext_id: int) -> str | None:
    """``ext.int`` of the lock a waiting request was last found blocked by."""
    row = conn.execute(
        select(hive_locks.c.hl_blockedby_ext_id, hive_locks.c.hl_blockedby_int_id)
        .where(hive_locks.c.hl_lock_ext_id == ext_id, hive_locks.c.hl_blockedby_ext_id.is_not(None))
        .limit(1)
    ).first()
    return None if row is None else lock_str(row[0], row[1])


def unlock(conn: Connection, ext_id: int) -> None:
    """Release a txn-less lock request (Hive ``unlock``); a txn's locks go at commit/abort."""
    rows = _request_rows(conn, ext_id)
    if not rows:
        raise NoSuchLockError(f"No such lock {lock_str(ext_id)}")
    txn_id = rows[0].hl_txnid
    if txn_id != NO_TXN:
        raise TxnOpenError(
            f"Unlocking locks associated with transaction not permitted. {lock_str(ext_id)} "
            f"is associated with {txn_str(txn_id)}; commit or abort the transaction instead."
        )
    conn.execute(_DELETE_REQUEST, {"b_ext": ext_id})


def heartbeat_lock(conn: Connection, now: int, ext_id: int) -> None:
    """Refresh a lock request's heartbeat (Hive ``heartbeatLock``)."""
    changed = conn.execute(_HEARTBEAT_REQUEST, {"b_ext": ext_id, "b_now": now}).rowcount
    if not changed:
        raise NoSuchLockError(f"No such lock {lock_str(ext_id)} (released or expired)")


# --------------------------------------------------------------------------- internals


def _request_rows(conn: Connection, ext_id: int) -> list[Row[Any]]:
    if isinstance(ext_id, bool) or not isinstance(ext_id, int):
        raise NoSuchLockError(f"No such lock {ext_id!r} (lock ids are ints)")
    return list(conn.execute(_REQUEST_ROWS, {"b_ext": ext_id}))


def _all_acquired(rows: list[Row[Any]]) -> bool:
    return all(r.hl_lock_state == ACQUIRED for r in rows)


def _check(
    conn: Connection, now: int, ext_id: int, *, txnless: bool, acquired: bool
) -> LockResponse:
    if acquired:
        if txnless:
            heartbeat_lock(conn, now, ext_id)
        return LockResponse(ext_id, LockState.ACQUIRED)
    blocker = conn.execute(_BLOCKER, {"b_ext": ext_id}).first()
    if blocker is not None:
        conn.execute(
            _SET_BLOCKED,
            {
                "b_ext": ext_id,
                "b_int": blocker.req_int_id,
                "b_by_ext": blocker.hl_lock_ext_id,
                "b_by_int": blocker.hl_lock_int_id,
            },
        )
        if txnless:
            conn.execute(_HEARTBEAT_REQUEST, {"b_ext": ext_id, "b_now": now})
        return LockResponse(ext_id, LockState.WAITING)
    conn.execute(_ACQUIRE_TXNLESS if txnless else _ACQUIRE, {"b_ext": ext_id, "b_now": now})
    return LockResponse(ext_id, LockState.ACQUIRED)


def _blocker_query() -> Any:
    """First earlier lock component that blocks any component of request ``:b_ext``."""
    ext_id: Any = bindparam("b_ext")
    ex = hive_locks.alias("ex")
    req = hive_locks.alias("req")
    r, w, x, e = (
        t.code
        for t in (
            LockType.SHARED_READ,
            LockType.SHARED_WRITE,
            LockType.EXCL_WRITE,
            LockType.EXCLUSIVE,
        )
    )
    overlap = and_(
        ex.c.hl_db == req.c.hl_db,
        or_(
            ex.c.hl_table.is_(None),
            req.c.hl_table.is_(None),
            and_(
                ex.c.hl_table == req.c.hl_table,
                or_(
                    ex.c.hl_partition.is_(None),
                    req.c.hl_partition.is_(None),
                    ex.c.hl_partition == req.c.hl_partition,
                ),
            ),
        ),
    )
    other_txn = or_(req.c.hl_txnid == NO_TXN, ex.c.hl_txnid != req.c.hl_txnid)
    conflict = or_(
        and_(
            req.c.hl_lock_type == r,
            ex.c.hl_lock_type == e,
            not_(and_(ex.c.hl_table.is_not(None), req.c.hl_table.is_(None))),
        ),
        and_(
            req.c.hl_lock_type == e,
            not_(
                and_(ex.c.hl_table.is_(None), ex.c.hl_lock_type == r, req.c.hl_table.is_not(None))
            ),
        ),
        and_(req.c.hl_lock_type == w, or_(ex.c.hl_lock_type == x, ex.c.hl_lock_type == e)),
        and_(req.c.hl_lock_type == x, ex.c.hl_lock_type != r),
    )
    # The request's txn already holds this component (same or wider object, same or stronger).
    held = hive_locks.alias("held")
    stronger = {r: (r, w, x, e), w: (w, x, e), x: (x, e), e: (e,)}
    already_held = exists().where(
        req.c.hl_txnid != NO_TXN,
        held.c.hl_txnid == req.c.hl_txnid,
        held.c.hl_lock_ext_id < req.c.hl_lock_ext_id,
        held.c.hl_lock_state == ACQUIRED,
        held.c.hl_db == req.c.hl_db,
        or_(
            held.c.hl_table.is_(None),
            and_(
                held.c.hl_table == req.c.hl_table,
                or_(held.c.hl_partition.is_(None), held.c.hl_partition == req.c.hl_partition),
            ),
        ),
        or_(
            *(
                and_(req.c.hl_lock_type == want, held.c.hl_lock_type.in_(codes))
                for want, codes in stronger.items()
            )
        ),
    )
    return (
        select(
            ex.c.hl_lock_ext_id,
            ex.c.hl_lock_int_id,
            ex.c.hl_txnid,
            ex.c.hl_last_heartbeat,
            req.c.hl_lock_int_id.label("req_int_id"),
        )
        .select_from(req.join(ex, overlap))
        .where(
            req.c.hl_lock_ext_id == ext_id,
            ex.c.hl_lock_ext_id < ext_id,
            other_txn,
            conflict,
            not_(already_held),
        )
        .order_by(ex.c.hl_lock_ext_id, ex.c.hl_lock_int_id)
        .limit(1)
    )


# Statements are built once: building SQLAlchemy constructs costs more than running them.
_hl = hive_locks
_mine = _hl.c.hl_lock_ext_id == bindparam("b_ext")
_BLOCKER = _blocker_query()
_REQUEST_ROWS = (
    select(_hl.c.hl_lock_int_id, _hl.c.hl_txnid, _hl.c.hl_lock_state)
    .where(_mine)
    .order_by(_hl.c.hl_lock_int_id)
)
_DELETE_REQUEST = delete(_hl).where(_mine)
_TXN_HEARTBEAT = select(txns.c.txn_state, txns.c.txn_last_heartbeat).where(
    txns.c.txn_id == bindparam("b_txn_id")
)
_HEARTBEAT_REQUEST = (
    update(_hl)
    .where(_mine)
    .values(hl_last_heartbeat=bindparam("b_now"), hl_heartbeat_count=_hl.c.hl_heartbeat_count + 1)
)
_SET_BLOCKED = (
    update(_hl)
    .where(_mine, _hl.c.hl_lock_int_id == bindparam("b_int"))
    .values(hl_blockedby_ext_id=bindparam("b_by_ext"), hl_blockedby_int_id=bindparam("b_by_int"))
)
_ACQUIRE = (
    update(_hl)
    .where(_mine)
    .values(
        hl_lock_state=ACQUIRED,
        hl_acquired_at=bindparam("b_now"),
        hl_blockedby_ext_id=None,
        hl_blockedby_int_id=None,
    )
)
_ACQUIRE_TXNLESS = _ACQUIRE.values(hl_last_heartbeat=bindparam("b_now"))


def _clip(value: str | None, limit: int = 128) -> str | None:
    return None if value is None else str(value)[:limit]
