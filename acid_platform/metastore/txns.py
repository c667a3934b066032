"""Transactions: open, commit (with the write-set check), abort, heartbeat, snapshots.

Every function runs inside a unit of work of :class:`~acid_platform.metastore.store.Store` and
takes the connection, the current time in epoch ms and its arguments. Row locks are taken in
the store's global order: txn rows by ascending id, then ``acid_sequences`` rows.

Rows of ``TXNS`` stay after commit with state ``c`` (as in Hive 4) until
:func:`~acid_platform.metastore.housekeeping.purge_txn_history` removes those no snapshot can
still ask about; aborted rows stay until the cleaner has removed what they wrote (their write
ids must remain "aborted" until then). An aborted txn that wrote nothing (no components, no
write id, not a compactor) is deleted by the abort itself, in the same metastore transaction:
no snapshot needs it (it owns no write id, so reading it as committed changes nothing), and
its row would only grow every snapshot's exception list. The time-out reaper lives in
``housekeeping``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Row

from acid_platform.errors import (
    DuplicateSourceError,
    MetastoreError,
    NoSuchTxnError,
    TooManyOpenTxnsError,
    TxnAbortedError,
    WriteConflictError,
)
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.metastore import file_records, partition_stats, sources, write_sets
from acid_platform.metastore.model import OperationType, TxnState, TxnType
from acid_platform.metastore.schema import (
    completed_txn_components,
    hive_locks,
    txn_components,
    txn_sources,
    txn_to_write_id,
    txns,
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
    autocommit: bool = False,
) -> list[int]:
    """Open ``n`` transactions with consecutive ids (Hive ``openTxns``).

    ``autocommit``: ``conn`` commits each statement as it runs (:meth:`Store.write_single`),
    so on PostgreSQL the open is one ``CALL``, durable when it returns; otherwise the rows are
    part of the surrounding transaction (a compactor's claim). Call
    :meth:`OpenTxnCounter.opened` once the txns are committed.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"number of transactions to open must be a positive int, not {n!r}")
    counter.check(conn, now, n)
    values = {
        "b_now": now,
        "b_user": _clip(user),
        "b_host": _clip(host),
        "b_agent": _clip(agent_info),
        "b_type": int(txn_type),
    }
    if autocommit and store.dialect == "postgresql":
        # One CALL, two transactions: the allocation, committed without waiting for the WAL
        # flush (the NEXT_TXN_ID row lock held only that long), then a synchronous commit
        # whose flush makes it durable before the ids are handed out (migration 0004). One
        # synchronous statement would hold the lock through the flush and serialise every
        # open on the disk's sync latency; a SEQUENCE would hold no lock, but breaks the
        # snapshot (an id taken, its row not yet visible, is below the high watermark and
        # read as committed) and the update/delete commit's mutex with open (see commit_txn).
        first, confirmed = tuples(
            conn.execute(_OPEN_TXNS_PG, {**values, "b_n": n, "b_state": OPEN})
        )[0]
        if confirmed != n:
            raise MetastoreError(
                f"transactions {txn_str(first)}..{first + n - 1} vanished while being opened; "
                "open new ones"
            )
        return list(range(first, first + n))
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
    check_txn_id(txn_id)
    return conn.execute(_LOCK_TXN, {"b_txn_id": txn_id}).first()


def require_open(conn: Connection, txn_id: int) -> Row[Any]:
    """Lock the txn row and return it if open; otherwise raise Hive's typed error."""
    row = lock_txn(conn, txn_id)
    if row is None or row.txn_state != OPEN:
        raise_unexpected_state(txn_id, None if row is None else row.txn_state, conn)
    assert row is not None
    return row


def raise_unexpected_state(txn_id: int, state: str | None, conn: Connection | None = None) -> None:
    """Hive's ``TxnUtils.raiseTxnUnexpectedState``; with ``conn``, a txn without a row is
    judged by :func:`purged_state`."""
    if state is None and conn is not None:
        state = purged_state(conn, txn_id)
    if state == ABORTED:
        raise TxnAbortedError(f"Transaction {txn_str(txn_id)} already aborted")
    if state == COMMITTED:
        raise NoSuchTxnError(f"Transaction {txn_str(txn_id)} is already committed.")
    raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")


def purged_state(conn: Connection, txn_id: int) -> str | None:
    """What a txn id without a TXNS row was: committed if its writes are on record; otherwise,
    if the id was handed out, aborted (an abort purges a txn that wrote nothing at once; a
    committed txn that wrote nothing and was purged is the same to everyone, as it left
    nothing); ``None`` for an id never handed out."""
    wrote = conn.execute(
        select(literal(1)).where(completed_txn_components.c.ctc_txnid == txn_id).limit(1)
    ).first()
    if wrote is not None:
        return COMMITTED
    return ABORTED if txn_id < Store.peek_sequence(conn, "txn") else None


def get_txn_state(conn: Connection, txn_id: int) -> TxnState:
    """State of a txn, also of one whose TXNS row was purged (see :func:`purged_state`)."""
    check_txn_id(txn_id)
    state = conn.execute(select(txns.c.txn_state).where(txns.c.txn_id == txn_id)).scalar()
    if state is None:
        state = purged_state(conn, txn_id)
    if state is None:
        raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")
    return _STATE_NAMES[state]


# --------------------------------------------------------------------------- commit


def commit_txn(
    store: Store, conn: Connection, now: int, txn_id: int, snapshot: ValidTxnList | None = None
) -> int | None:
    """Commit; first committer wins for update/delete on the same partition (a writer the
    txn's ``snapshot`` sees is no conflict: see :mod:`.write_sets`).

    Returns the commit id (``NEXT_TXN_ID - 1`` under the txn mutex) for write-set and
    compactor txns, ``None`` for the rest.
    """
    check_txn_id(txn_id)
    probe = conn.execute(_COMMIT_PROBE, {"b_txn_id": txn_id}).first()
    if probe is None or probe.txn_state != OPEN:
        raise_unexpected_state(txn_id, None if probe is None else probe.txn_state, conn)
    assert probe is not None
    txn_type = TxnType(probe.txn_type)
    commit_id: int | None = None
    if probe.has_sources:
        # Commits publishing sources run one at a time (the txn sequence mutex), so the
        # second of two loading the same source finds it committed (see ``sources``).
        store.lock_sequence(conn, "txn")
        clash = sources.first_committed(conn, txn_id)
        if clash is not None:
            abort_locked(conn, [txn_id])
            raise CommitAndRaise(DuplicateSourceError(sources.already_committed(clash, txn_id)))
    if txn_type == TxnType.COMPACTION:
        commit_id = store.lock_sequence(conn, "txn") - 1
    elif txn_type != TxnType.READ_ONLY and probe.has_update_delete:
        # Mutex with openTxns and other update/delete commits (Hive's S4U on NEXT_TXN_ID), so
        # every committed write set is visible to the check below, and the commit id is exact:
        # a txn opened after this commit id was read waits for the commit, so it gets a higher
        # id *and* a snapshot that sees this commit. Without the mutex a txn could take
        # commit_id + 1 and its snapshot before this commit is visible, update the same rows,
        # and pass its own check (commit_id < its id): a lost update.
        commit_id = store.lock_sequence(conn, "txn") - 1
        conflict = write_sets.find_conflict(conn, txn_id, snapshot)
        if conflict is not None:
            abort_locked(conn, [txn_id])
            raise CommitAndRaise(
                WriteConflictError(write_sets.conflict_message(txn_id, commit_id, conflict))
            )
        write_sets.record(conn, txn_id, commit_id)
    if probe.has_components:
        if txn_type not in (TxnType.READ_ONLY, TxnType.COMPACTION):
            conn.execute(
                move_to_completed(txn_id, literal(now), update_delete=commit_id is not None)
            )
        conn.execute(delete(txn_components).where(txn_components.c.tc_txnid == txn_id))
    partition_stats.apply_commit(conn, now, txn_id, compactor=txn_type == TxnType.COMPACTION)
    if probe.has_sources:
        sources.publish(conn, now, txn_id)
    if probe.has_locks:
        conn.execute(delete(hive_locks).where(hive_locks.c.hl_txnid == txn_id))
    conn.execute(_MARK_COMMITTED, {"b_txn_id": txn_id, "b_now": now})
    return commit_id


def move_to_completed(txn_id: Any, now: Any, *, update_delete: bool, when: Any = None) -> Any:
    """``INSERT INTO completed_txn_components SELECT … FROM txn_components`` of ``txn_id``
    (a value or a bound parameter), stamped ``now`` (an SQL expression), flagged ``Y`` if
    ``update_delete``; ``when``: a further condition (the one-statement commit's)."""
    tc = txn_components
    source = select(
        tc.c.tc_txnid,
        tc.c.tc_database,
        tc.c.tc_table,
        tc.c.tc_partition,
        now,
        tc.c.tc_writeid,
        literal("Y" if update_delete else "N"),
    ).where(tc.c.tc_txnid == txn_id, *([] if when is None else [when]))
    ctc = completed_txn_components
    return insert(ctc).from_select(
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


# --------------------------------------------------------------------------- abort


def abort_txns(conn: Connection, txn_ids: Iterable[int]) -> list[int]:
    """Abort open txns (Hive ``abortTxns``); already aborted ones are left as they are.

    Unknown or committed ids raise before anything changes. Returns the ids aborted now.
    """
    ids = sorted(set(txn_ids))
    for txn_id in ids:
        check_txn_id(txn_id)
    found: dict[int, str] = {}
    for chunk in chunks(ids):
        for row in conn.execute(
            select(txns.c.txn_id, txns.c.txn_state)
            .where(txns.c.txn_id.in_(chunk))
            .order_by(txns.c.txn_id)
            .with_for_update()
        ):
            found[row.txn_id] = row.txn_state
    for txn_id in ids:
        state = found.get(txn_id)
        if state is None:
            state = purged_state(conn, txn_id)  # aborted (and purged) already: a no-op
        if state is None or state == COMMITTED:
            raise_unexpected_state(txn_id, state)
    to_abort = [t for t in ids if found.get(t) == OPEN]
    abort_locked(conn, to_abort)
    return to_abort


def abort_locked(conn: Connection, txn_ids: Sequence[int]) -> None:
    """Mark (already locked, open) txns aborted and release their locks.

    TXN_COMPONENTS stay: readers and the compactor need to know which writes to ignore; the
    sources they recorded go (they were not loaded). Those that wrote nothing are purged at
    once (see :func:`empty_aborted`).
    """
    for chunk in chunks(list(txn_ids)):
        conn.execute(
            update(txns)
            .where(txns.c.txn_id.in_(chunk), txns.c.txn_state == OPEN)
            .values(txn_state=ABORTED)
        )
        conn.execute(delete(hive_locks).where(hive_locks.c.hl_txnid.in_(chunk)))
        sources.discard(conn, chunk)
        file_records.discard(conn, chunk)
        conn.execute(delete(txns).where(txns.c.txn_id.in_(chunk), empty_aborted()))


def empty_aborted() -> Any:
    """TXNS rows of aborted txns that left nothing behind: no components, no write id, not a
    compactor (whose ``_v<txn>`` directories are judged by its state). Nothing maps to such a
    txn, so a snapshot may read it as committed, and its row can go (Hive's
    ``cleanEmptyAbortedTxns``, done here at abort and by the housekeeper for older rows)."""
    return and_(
        txns.c.txn_state == ABORTED,
        txns.c.txn_type != int(TxnType.COMPACTION),
        ~exists().where(txn_components.c.tc_txnid == txns.c.txn_id),
        ~exists().where(txn_to_write_id.c.t2w_txnid == txns.c.txn_id),
    )


# --------------------------------------------------------------------------- heartbeats


def heartbeat_txn(conn: Connection, now: int, txn_id: int) -> None:
    """Refresh the txn's last heartbeat (Hive ``heartbeatTxn``)."""
    check_txn_id(txn_id)
    changed = conn.execute(_HEARTBEAT_TXN, {"b_txn_id": txn_id, "b_now": now}).rowcount
    if changed != 1:
        state = conn.execute(_TXN_STATE, {"b_txn_id": txn_id}).scalar()
        raise_unexpected_state(txn_id, state, conn)


# --------------------------------------------------------------------------- snapshots


def valid_txns(
    store: Store, conn: Connection, txn_id: int | None = None, *, latest: bool = False
) -> ValidTxnList:
    """The global snapshot; for a txn, Hive's ``createValidReadTxnList(…, txn_id)``.

    Read-only txns are left out of the exception list (they write nothing), as Hive 4 does.
    For an open txn the high watermark is the txn itself and only txns below it are listed,
    so it sees its own writes and nothing newer (snapshot isolation). With ``latest`` it is
    the global snapshot with the txn itself valid: every txn committed by now, a younger one
    included — the snapshot of an autocommit statement taken once its locks are granted.
    """
    hwm = store.peek_sequence(conn, "txn") - 1
    below = hwm + 1
    if txn_id is not None:
        check_txn_id(txn_id)
        state = conn.execute(_TXN_STATE, {"b_txn_id": txn_id}).scalar() or purged_state(
            conn, txn_id
        )
        if state is None:
            raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")
        if not latest:
            hwm = min(hwm, txn_id)
            below = txn_id
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    for tid, state in tuples(conn.execute(_EXCEPTIONS, {"b_hwm": hwm, "b_below": below})):
        if tid != txn_id:
            (open_ids if state == OPEN else aborted_ids).append(tid)
    return ValidTxnList(hwm, open_ids, aborted_ids, min(open_ids) if open_ids else None)


def min_open_txn(conn: Connection) -> int | None:
    """Lowest open txn id of any type (Hive's min open txn watermark), or ``None``."""
    value = conn.execute(select(func.min(txns.c.txn_id)).where(txns.c.txn_state == OPEN)).scalar()
    return None if value is None else int(value)


# --------------------------------------------------------------------------- helpers


def check_txn_id(txn_id: object) -> None:
    if isinstance(txn_id, bool) or not isinstance(txn_id, int):
        raise NoSuchTxnError(f"No such transaction {txn_id!r} (txn ids are ints)")
    if txn_id <= 0:
        raise NoSuchTxnError(f"No such transaction {txn_str(txn_id)}")


def chunks(ids: list[int]) -> Iterable[list[int]]:
    """``ids`` in slices small enough for an ``IN (...)`` list."""
    for start in range(0, len(ids), _BATCH):
        yield ids[start : start + _BATCH]


def _clip(value: str | None, limit: int = 128) -> str | None:
    return None if value is None else str(value)[:limit]


# --------------------------------------------------------------------------- statements
# Hot statements are built once: building SQLAlchemy constructs costs more than running them.


def is_update_delete(column: Any) -> Any:
    # Two equalities instead of IN: an IN list is re-expanded on every execution.
    return or_(column == UPDATE_DELETE[0], column == UPDATE_DELETE[1])


def _build_commit_probe() -> Any:
    """One round trip: lock the txn row and learn what commit has to do."""
    tc, hl, ts = txn_components, hive_locks, txn_sources
    txn_id: Any = bindparam("b_txn_id")
    return (
        select(
            txns.c.txn_state,
            txns.c.txn_type,
            exists()
            .where(tc.c.tc_txnid == txn_id, is_update_delete(tc.c.tc_operation_type))
            .label("has_update_delete"),
            exists().where(tc.c.tc_txnid == txn_id).label("has_components"),
            exists().where(hl.c.hl_txnid == txn_id).label("has_locks"),
            exists().where(ts.c.ts_txnid == txn_id).label("has_sources"),
        )
        .where(txns.c.txn_id == txn_id)
        .with_for_update()
    )


_COMMIT_PROBE = _build_commit_probe()
_MARK_COMMITTED = (
    update(txns)
    .where(txns.c.txn_id == bindparam("b_txn_id"))
    .values(txn_state=COMMITTED, txn_last_heartbeat=bindparam("b_now"))
)


# ``conn`` must be in autocommit mode: the procedure commits twice (see migration 0004).
_OPEN_TXNS_PG = text(
    "CALL acid_open_txns(CAST(:b_n AS BIGINT), CAST(:b_state AS VARCHAR), "
    "CAST(:b_now AS BIGINT), CAST(:b_user AS VARCHAR), CAST(:b_host AS VARCHAR), "
    "CAST(:b_agent AS VARCHAR), CAST(:b_type AS SMALLINT))"
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
        or_(txns.c.txn_state == OPEN, txns.c.txn_state == ABORTED),
        txns.c.txn_type != int(TxnType.READ_ONLY),
        txns.c.txn_id <= bindparam("b_hwm"),
        txns.c.txn_id < bindparam("b_below"),
    )
    .order_by(txns.c.txn_id)
)
