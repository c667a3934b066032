"""Transactions: open, commit (with the write-set check), abort, heartbeat, time-out reaper.

Every function runs inside a unit of work of :class:`~acid_platform.metastore.store.Store` and
takes the connection, the current time in epoch ms and its arguments. Row locks are taken in
the store's global order: txn rows by ascending id, then ``acid_sequences`` rows.

Rows of ``TXNS`` stay after commit with state ``c`` (as in Hive 4) until
:func:`purge_txn_history` removes those no snapshot can still ask about; aborted rows stay until
the cleaner has removed what they wrote (their write ids must remain "aborted" until then).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, delete, exists, func, insert, literal, or_, select, update
from sqlalchemy.engine import Connection, Row

from acid_platform.errors import (
    NoSuchTxnError,
    TooManyOpenTxnsError,
    TxnAbortedError,
    WriteConflictError,
)
from acid_platform.format.snapshots import ValidTxnList
from acid_platform.metastore.model import OperationType, TxnState, TxnType
from acid_platform.metastore.schema import (
    completed_txn_components,
    hive_locks,
    txn_components,
    txn_to_write_id,
    txns,
    write_set,
)
from acid_platform.metastore.store import CommitAndRaise, Store, tuples

OPEN, ABORTED, COMMITTED = "o", "a", "c"
_STATE_NAMES = {OPEN: TxnState.OPEN, ABORTED: TxnState.ABORTED, COMMITTED: TxnState.COMMITTED}
UPDATE_DELETE = (OperationType.UPDATE.code, OperationType.DELETE.code)
_BATCH = 500


def txn_str(txn_id: int) -> str:
    """Hive's spelling of a txn id in messages (``JavaUtils.txnIdToString``)."""
    return f"txnid:{txn_id}"


# --------------------------------------------------------------------------- open


class OpenTxnCounter:
    """The open-txn count behind ``max_open_txns`` (Hive's AcidOpenTxnsCounterService).

    Counting costs a query, so like Hive it is refreshed at most once a second, except when
    the last count plus what this process opened since comes within half of the cap: then it
    is counted on every open and the cap is exact.
    """

    def __init__(self, max_open: int, interval_ms: int = 1000) -> None:
        self.max_open = max_open
        self.interval_ms = interval_ms
        self._count: int | None = None
        self._counted_at = 0
        self._opened_since = 0

    def check(self, conn: Connection, now: int, n: int) -> None:
        stale = self._count is None or now - self._counted_at >= self.interval_ms
        near = (self._count or 0) + self._opened_since + n >= self.max_open // 2
        if stale or near:
            self._count = conn.execute(
                select(func.count()).select_from(txns).where(txns.c.txn_state == OPEN)
            ).scalar_one()
            self._counted_at, self._opened_since = now, 0
        assert self._count is not None
        if self._count + self._opened_since >= self.max_open:
            raise TooManyOpenTxnsError(
                f"Maximum allowed number of open transactions ({self.max_open}) has been "
                f"reached; {self._count + self._opened_since} are open. Commit or abort some, "
                "or raise max_open_txns (hive.max.open.txns)."
            )

    def opened(self, n: int) -> None:
        self._opened_since += n


def open_txns(
    store: Store,
    conn: Connection,
    now: int,
    n: int,
    *,
    user: str | None,
    host: str | None,
    agent_info: str | None,
    txn_type: TxnType,
    counter: OpenTxnCounter,
) -> list[int]:
    """Open ``n`` transactions with consecutive ids (Hive ``openTxns``).

    Call :meth:`OpenTxnCounter.opened` once the surrounding transaction has committed.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of transactions to open must be a positive int, not {n!r}")
    counter.check(conn, now, n)
    first = store.allocate(conn, "txn", n)
    ids = list(range(first, first + n))
    rows = [
        {
            "txn_id": txn_id,
            "txn_state": OPEN,
            "txn_started": now,
            "txn_last_heartbeat": now,
            "txn_user": _clip(user),
            "txn_host": _clip(host),
            "txn_agent_info": _clip(agent_info),
            "txn_heartbeat_count": 0,
            "txn_type": int(txn_type),
        }
        for txn_id in ids
    ]
    for start in range(0, len(rows), _BATCH):
        conn.execute(insert(txns), rows[start : start + _BATCH])
    return ids


# --------------------------------------------------------------------------- state checks


def lock_txn(conn: Connection, txn_id: int) -> Row[Any] | None:
    """``SELECT ... FOR UPDATE`` of one TXNS row (state and type)."""
    _check_txn_id(txn_id)
    return conn.execute(_LOCK_TXN, {"b_txn_id": txn_id}).first()


def require_open(conn: Connection, txn_id: int) -> Row[Any]:
    """Lock the txn row and return it if open; otherwise raise Hive's typed error."""
    row = lock_txn(conn, txn_id)
    if row is None or row.txn_state != OPEN:
        raise_unexpected_state(txn_id, None if row is None else row.txn_state)
    assert row is not None
    return row


def raise_unexpected_state(txn_id: int, state: str | None) -> None:
    """Hive's ``TxnUtils.raiseTxnUnexpectedState``."""
    if state == ABORTED:
        raise TxnAbortedError(f"Transaction {txn_str(txn_id)} already aborted")
    if state == COMMITTED:
        raise NoSuchTxnError(f"Transaction {txn_str(txn_id)} is already committed.")
    raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")


def get_txn_state(conn: Connection, txn_id: int) -> TxnState:
    """State of a txn; committed txns whose TXNS row was purged are found by their writes."""
    _check_txn_id(txn_id)
    state = conn.execute(select(txns.c.txn_state).where(txns.c.txn_id == txn_id)).scalar()
    if state is not None:
        return _STATE_NAMES[state]
    wrote = conn.execute(
        select(literal(1)).where(completed_txn_components.c.ctc_txnid == txn_id).limit(1)
    ).first()
    if wrote is not None:
        return TxnState.COMMITTED
    raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")


# --------------------------------------------------------------------------- commit


def commit_txn(store: Store, conn: Connection, now: int, txn_id: int) -> int | None:
    """Commit; first committer wins for update/delete on the same partition.

    Returns the commit id (``NEXT_TXN_ID - 1`` under the txn mutex) for write-set and
    compactor txns, ``None`` for the rest.
    """
    _check_txn_id(txn_id)
    probe = conn.execute(_COMMIT_PROBE, {"b_txn_id": txn_id}).first()
    if probe is None or probe.txn_state != OPEN:
        raise_unexpected_state(txn_id, None if probe is None else probe.txn_state)
    assert probe is not None
    txn_type = TxnType(probe.txn_type)
    commit_id: int | None = None
    if txn_type == TxnType.COMPACTION:
        commit_id = store.lock_sequence(conn, "txn") - 1
    elif txn_type != TxnType.READ_ONLY and probe.has_update_delete:
        # Mutex with openTxns and other update/delete commits (Hive's S4U on NEXT_TXN_ID), so
        # every committed write set is visible to the check below.
        commit_id = store.lock_sequence(conn, "txn") - 1
        conflict = _find_write_conflict(conn, txn_id)
        if conflict is not None:
            abort_locked(conn, [txn_id])
            raise CommitAndRaise(WriteConflictError(_conflict_message(txn_id, commit_id, conflict)))
        _record_write_set(conn, txn_id, commit_id)
    if probe.has_components:
        if txn_type not in (TxnType.READ_ONLY, TxnType.COMPACTION):
            _move_components_to_completed(conn, now, txn_id, update_delete=commit_id is not None)
        conn.execute(delete(txn_components).where(txn_components.c.tc_txnid == txn_id))
    if probe.has_locks:
        conn.execute(delete(hive_locks).where(hive_locks.c.hl_txnid == txn_id))
    conn.execute(_MARK_COMMITTED, {"b_txn_id": txn_id, "b_now": now})
    return commit_id


def _build_commit_probe() -> Any:
    """One round trip: lock the txn row and learn what commit has to do."""
    tc, hl = txn_components, hive_locks
    txn_id: Any = bindparam("b_txn_id")
    return (
        select(
            txns.c.txn_state,
            txns.c.txn_type,
            exists()
            .where(tc.c.tc_txnid == txn_id, tc.c.tc_operation_type.in_(UPDATE_DELETE))
            .label("has_update_delete"),
            exists().where(tc.c.tc_txnid == txn_id).label("has_components"),
            exists().where(hl.c.hl_txnid == txn_id).label("has_locks"),
        )
        .where(txns.c.txn_id == txn_id)
        .with_for_update()
    )


# Hot statements are built once; executing them only binds values.
_COMMIT_PROBE = _build_commit_probe()
_MARK_COMMITTED = (
    update(txns)
    .where(txns.c.txn_id == bindparam("b_txn_id"))
    .values(txn_state=COMMITTED, txn_last_heartbeat=bindparam("b_now"))
)
_LOCK_TXN = (
    select(txns.c.txn_id, txns.c.txn_state, txns.c.txn_type)
    .where(txns.c.txn_id == bindparam("b_txn_id"))
    .with_for_update()
)
_TXN_STATE = select(txns.c.txn_state).where(txns.c.txn_id == bindparam("b_txn_id"))
_HEARTBEAT_TXN = (
    update(txns)
    .where(txns.c.txn_id == bindparam("b_txn_id"), txns.c.txn_state == OPEN)
    .values(
        txn_last_heartbeat=bindparam("b_now"),
        txn_heartbeat_count=txns.c.txn_heartbeat_count + 1,
    )
)
_EXCEPTIONS = (
    select(txns.c.txn_id, txns.c.txn_state)
    .where(
        txns.c.txn_state.in_((OPEN, ABORTED)),
        txns.c.txn_type != int(TxnType.READ_ONLY),
        txns.c.txn_id <= bindparam("b_hwm"),
        txns.c.txn_id < bindparam("b_below"),
    )
    .order_by(txns.c.txn_id)
)


def _find_write_conflict(conn: Connection, txn_id: int) -> Row[Any] | None:
    """A committed txn that overlapped ``txn_id`` and updated/deleted the same partition.

    Overlap: the committed txn's commit id >= our txn id (it committed after we started).
    A table-level component (partition NULL) overlaps every partition of its table.
    """
    ws, tc = write_set, txn_components
    same_partition = or_(
        ws.c.ws_partition == tc.c.tc_partition,
        ws.c.ws_partition.is_(None),
        tc.c.tc_partition.is_(None),
    )
    return conn.execute(
        select(
            ws.c.ws_txnid,
            ws.c.ws_commit_id,
            ws.c.ws_database,
            ws.c.ws_table,
            ws.c.ws_partition,
            ws.c.ws_operation_type,
            tc.c.tc_partition,
            tc.c.tc_operation_type,
        )
        .select_from(
            ws.join(
                tc,
                and_(
                    ws.c.ws_database == tc.c.tc_database,
                    ws.c.ws_table == tc.c.tc_table,
                    same_partition,
                ),
            )
        )
        .where(
            tc.c.tc_txnid == txn_id,
            tc.c.tc_operation_type.in_(UPDATE_DELETE),
            ws.c.ws_txnid != txn_id,
            ws.c.ws_commit_id >= txn_id,
            ws.c.ws_operation_type.in_(UPDATE_DELETE),
        )
        .order_by(ws.c.ws_commit_id, ws.c.ws_txnid)
        .limit(1)
    ).first()


def _conflict_message(txn_id: int, commit_id: int, c: Row[Any]) -> str:
    partition = c.ws_partition if c.ws_partition is not None else c.tc_partition
    resource = f"{c.ws_database}/{c.ws_table}" + (f"/{partition}" if partition else "")
    ours = OperationType.from_code(c.tc_operation_type).value
    theirs = OperationType.from_code(c.ws_operation_type).value
    return (
        f"Aborting [{txn_str(txn_id)},{commit_id}] due to a write conflict on {resource} "
        f"committed by [{txn_str(c.ws_txnid)},{c.ws_commit_id}] {ours}/{theirs}. "
        "The other transaction committed first; retry this one against the new snapshot."
    )


def _record_write_set(conn: Connection, txn_id: int, commit_id: int) -> None:
    tc = txn_components
    rows = conn.execute(
        select(tc.c.tc_database, tc.c.tc_table, tc.c.tc_partition, tc.c.tc_operation_type)
        .where(tc.c.tc_txnid == txn_id, tc.c.tc_operation_type.in_(UPDATE_DELETE))
        .distinct()
    ).all()
    conn.execute(
        insert(write_set),
        [
            {
                "ws_database": r.tc_database,
                "ws_table": r.tc_table,
                "ws_partition": r.tc_partition,
                "ws_txnid": txn_id,
                "ws_commit_id": commit_id,
                "ws_operation_type": r.tc_operation_type,
            }
            for r in rows
        ],
    )


def _move_components_to_completed(
    conn: Connection, now: int, txn_id: int, *, update_delete: bool
) -> None:
    tc = txn_components
    source = select(
        tc.c.tc_txnid,
        tc.c.tc_database,
        tc.c.tc_table,
        tc.c.tc_partition,
        literal(now),
        tc.c.tc_writeid,
        literal("Y" if update_delete else "N"),
    ).where(tc.c.tc_txnid == txn_id)
    ctc = completed_txn_components
    conn.execute(
        insert(ctc).from_select(
            [
                ctc.c.ctc_txnid,
                ctc.c.ctc_database,
                ctc.c.ctc_table,
                ctc.c.ctc_partition,
                ctc.c.ctc_timestamp,
                ctc.c.ctc_writeid,
                ctc.c.ctc_update_delete,
            ],
            source,
        )
    )


# --------------------------------------------------------------------------- abort


def abort_txns(conn: Connection, txn_ids: Iterable[int]) -> list[int]:
    """Abort open txns (Hive ``abortTxns``); already aborted ones are left as they are.

    Unknown or committed ids raise before anything changes. Returns the ids aborted now.
    """
    ids = sorted(set(txn_ids))
    for txn_id in ids:
        _check_txn_id(txn_id)
    found: dict[int, str] = {}
    for chunk in _chunks(ids):
        for row in conn.execute(
            select(txns.c.txn_id, txns.c.txn_state)
            .where(txns.c.txn_id.in_(chunk))
            .order_by(txns.c.txn_id)
            .with_for_update()
        ):
            found[row.txn_id] = row.txn_state
    for txn_id in ids:
        state = found.get(txn_id)
        if state is None or state == COMMITTED:
            raise_unexpected_state(txn_id, state)
    to_abort = [t for t in ids if found[t] == OPEN]
    abort_locked(conn, to_abort)
    return to_abort


def abort_locked(conn: Connection, txn_ids: Sequence[int]) -> None:
    """Mark (already locked, open) txns aborted and release their locks.

    TXN_COMPONENTS stay: readers and the compactor need to know which writes to ignore.
    """
    for chunk in _chunks(list(txn_ids)):
        conn.execute(
            update(txns)
            .where(txns.c.txn_id.in_(chunk), txns.c.txn_state == OPEN)
            .values(txn_state=ABORTED)
        )
        conn.execute(delete(hive_locks).where(hive_locks.c.hl_txnid.in_(chunk)))


# --------------------------------------------------------------------------- heartbeats


def heartbeat_txn(conn: Connection, now: int, txn_id: int) -> None:
    """Refresh the txn's last heartbeat (Hive ``heartbeatTxn``)."""
    _check_txn_id(txn_id)
    changed = conn.execute(_HEARTBEAT_TXN, {"b_txn_id": txn_id, "b_now": now}).rowcount
    if changed != 1:
        state = conn.execute(_TXN_STATE, {"b_txn_id": txn_id}).scalar()
        raise_unexpected_state(txn_id, state)


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
    for chunk in _chunks(sorted(stale)):
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
        delete(hive_locks).where(hive_locks.c.hl_txnid == 0, hive_locks.c.hl_last_heartbeat < cutoff)
    )
    return aborted


# --------------------------------------------------------------------------- snapshots


def valid_txns(store: Store, conn: Connection, txn_id: int | None = None) -> ValidTxnList:
    """The global snapshot; for a txn, Hive's ``createValidReadTxnList(…, txn_id)``.

    Read-only txns are left out of the exception list (they write nothing), as Hive 4 does.
    For an open txn the high watermark is the txn itself and only txns below it are listed,
    so it sees its own writes and nothing newer (snapshot isolation).
    """
    hwm = store.peek_sequence(conn, "txn") - 1
    below = hwm + 1
    if txn_id is not None:
        _check_txn_id(txn_id)
        state = conn.execute(_TXN_STATE, {"b_txn_id": txn_id}).scalar()
        if state is None:
            raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")
        hwm = min(hwm, txn_id)
        below = txn_id
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    for tid, state in tuples(conn.execute(_EXCEPTIONS, {"b_hwm": hwm, "b_below": below})):
        (open_ids if state == OPEN else aborted_ids).append(tid)
    return ValidTxnList(hwm, open_ids, aborted_ids, min(open_ids) if open_ids else None)


def min_open_txn(conn: Connection) -> int | None:
    """Lowest open txn id of any type (Hive's min open txn watermark), or ``None``."""
    value = conn.execute(select(func.min(txns.c.txn_id)).where(txns.c.txn_state == OPEN)).scalar()
    return None if value is None else int(value)


# --------------------------------------------------------------------------- housekeeping


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
    empty_aborted = conn.execute(
        delete(txns).where(
            txns.c.txn_state == ABORTED,
            txns.c.txn_type != int(TxnType.COMPACTION),
            ~exists().where(txn_components.c.tc_txnid == txns.c.txn_id),
            ~exists().where(txn_to_write_id.c.t2w_txnid == txns.c.txn_id),
        )
    ).rowcount
    return {"committed_txns": committed, "write_set": ws, "empty_aborted_txns": empty_aborted}


# --------------------------------------------------------------------------- helpers


def _check_txn_id(txn_id: object) -> None:
    if isinstance(txn_id, bool) or not isinstance(txn_id, int):
        raise NoSuchTxnError(f"No such transaction {txn_id!r} (txn ids are ints)")
    if txn_id <= 0:
        raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")


def _chunks(ids: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), _BATCH):
        yield ids[start : start + _BATCH]


def _clip(value: str | None, limit: int = 128) -> str | None:
    return None if value is None else str(value)[:limit]
