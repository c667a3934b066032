"""The compaction queue (Hive's COMPACTION_QUEUE / COMPLETED_COMPACTIONS, Hive 4 semantics).

Life of an entry: ``initiated`` (enqueued, deduplicated while another entry for the same
partition is initiated or working) -> ``working`` (claimed by a worker, which gets its own
compactor txn) -> ``ready for cleaning`` (the compactor txn committed; ``CQ_NEXT_TXN_ID`` = the
next txn id at that moment) -> ``succeeded`` once cleaned; or ``failed``. The initiator may
record ``did not initiate``. Finished entries move to the history, trimmed per partition.

Lock order: compactor txn row, then ``acid_sequences``, then the queue row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from acid_platform.errors import MetastoreError, NoSuchObjectError
from acid_platform.metastore import catalog, leases, partition_stats, txns
from acid_platform.metastore.model import (
    CompactionInfo,
    CompactionState,
    CompactionType,
    OperationType,
    TxnType,
)
from acid_platform.metastore.names import normalize_partition_name
from acid_platform.metastore.schema import (
    compaction_queue,
    completed_compactions,
    completed_txn_components,
    txn_components,
    txn_to_write_id,
)
from acid_platform.metastore.store import Store

cq, cc = compaction_queue, completed_compactions
_I, _W, _R = (
    s.code
    for s in (
        CompactionState.INITIATED,
        CompactionState.WORKING,
        CompactionState.READY_FOR_CLEANING,
    )
)
_F, _S, _A = (
    s.code
    for s in (CompactionState.FAILED, CompactionState.SUCCEEDED, CompactionState.DID_NOT_INITIATE)
)


def enqueue(
    store: Store,
    conn: Connection,
    now: int,
    db: str,
    table: str,
    partition: str | None,
    compaction_type: CompactionType,
    *,
    initiator_id: str | None,
    properties: Mapping[str, str] | None,
    run_as: str | None,
    pool_name: str | None,
    order_by: str | None = None,
    number_of_buckets: int | None = None,
) -> int | None:
    """Queue a compaction; ``None`` if one for the same partition is initiated or working.
    A rebalance's ``order_by`` / ``number_of_buckets`` are kept in ``CQ_META_INFO`` (JSON)."""
    spec, partition = resolve(conn, db, table, partition)
    compaction_type = CompactionType(compaction_type)
    store.lock_sequence(conn, "compaction")  # serialises enqueues: no duplicate can slip in
    dup = conn.execute(
        select(cq.c.cq_id).where(
            same_partition(
                cq.c.cq_database, cq.c.cq_table, cq.c.cq_partition, spec.db, spec.name, partition
            ),
            cq.c.cq_state.in_((_I, _W)),
        )
    ).first()
    if dup is not None:
        return None
    cq_id = store.allocate(conn, "compaction")
    conn.execute(
        insert(cq).values(
            cq_id=cq_id,
            cq_database=spec.db,
            cq_table=spec.name,
            cq_partition=partition,
            cq_state=_I,
            cq_type=compaction_type.code,
            cq_tblproperties=json.dumps(dict(properties)) if properties else None,
            cq_enqueue_time=now,
            cq_initiator_id=initiator_id,
            cq_run_as=run_as,
            cq_pool_name=pool_name,
            cq_meta_info=_rebalance_meta(order_by, number_of_buckets),
        )
    )
    return cq_id


def _rebalance_meta(order_by: str | None, number_of_buckets: int | None) -> str | None:
    if order_by is None and not number_of_buckets:
        return None
    return json.dumps({"orderBy": order_by, "numberOfBuckets": number_of_buckets or None})


def claim(
    store: Store,
    conn: Connection,
    now: int,
    worker_id: str,
    *,
    worker_version: str | None,
    counter: txns.OpenTxnCounter,
    cq_id: int | None = None,
) -> CompactionInfo | None:
    """Give the oldest initiated entry (or entry ``cq_id``, if it is still initiated) to
    ``worker_id`` and open its compactor txn; ``None`` when there is no such entry."""
    if not isinstance(worker_id, str) or not worker_id:
        raise ValueError(f"worker id must be a non-empty string, not {worker_id!r}")
    wanted = cq.c.cq_state == _I
    if cq_id is not None:
        wanted = and_(wanted, cq.c.cq_id == cq_id)
    row = conn.execute(
        select(cq).where(wanted).order_by(cq.c.cq_id).limit(1).with_for_update(skip_locked=True)
    ).first()
    if row is None:
        return None
    host, _, _ = worker_id.rpartition("-")
    (txn_id,) = txns.open_txns(
        store,
        conn,
        now,
        1,
        user=row.cq_run_as or "compactor",
        host=host or worker_id,
        agent_info=f"compactor:{worker_id}",
        txn_type=TxnType.COMPACTION,
        counter=counter,
    )
    conn.execute(
        update(cq)
        .where(cq.c.cq_id == row.cq_id)
        .values(
            cq_state=_W,
            cq_worker_id=worker_id,
            cq_start=now,
            cq_txn_id=txn_id,
            cq_worker_version=worker_version,
        )
    )
    # Where the compactor txn writes (no write id): if it dies, the aborted txn is remembered
    # on its partition, so the cleaner sweeps its partial output and a later compaction's
    # cleaning retires the txn (commit removes the row).
    conn.execute(
        insert(txn_components).values(
            tc_txnid=txn_id,
            tc_database=row.cq_database,
            tc_table=row.cq_table,
            tc_partition=row.cq_partition,
            tc_operation_type=OperationType.INSERT.code,
            tc_writeid=None,
        )
    )
    return get_info(conn, row.cq_id)


def mark_compacted(
    store: Store,
    conn: Connection,
    now: int,
    cq_id: int,
    highest_write_id: int,
    replaced: Sequence[str] = (),
) -> CompactionInfo:
    """The worker is done: commit its txn, record the highest write id -> ready for cleaning.
    ``replaced``: the directories (names) its output made obsolete, taken away from the
    partition's statistics (:func:`.partition_stats.forget_replaced`)."""
    info = _queued(conn, cq_id)
    if info.state != CompactionState.WORKING or info.txn_id is None:
        raise MetastoreError(f"compaction {cq_id} is {info.state.value}, not working")
    txns.require_open(conn, info.txn_id)  # aborted by the reaper -> TxnAbortedError
    _lock_entry(conn, cq_id, info.txn_id)
    next_txn_id = store.lock_sequence(conn, "txn")
    txns.commit_txn(store, conn, now, info.txn_id)
    partition_stats.forget_replaced(conn, now, info.db, info.table, info.partition or "", replaced)
    conn.execute(
        update(cq)
        .where(cq.c.cq_id == cq_id)
        .values(
            cq_state=_R,
            cq_highest_write_id=highest_write_id,
            cq_next_txn_id=next_txn_id,
            cq_commit_time=now,
        )
    )
    return get_info(conn, cq_id)


def mark_failed(conn: Connection, now: int, cq_id: int, message: str) -> None:
    """The compaction failed: abort its txn and move it to the history as ``failed``."""
    info = _queued(conn, cq_id)
    if info.txn_id is not None:
        row = txns.lock_txn(conn, info.txn_id)
        if row is not None and row.txn_state == txns.OPEN:
            txns.abort_locked(conn, [info.txn_id])
    _lock_entry(conn, cq_id, info.txn_id)
    _move_to_history(conn, cq_id, _F, now, error_message=message)


def mark_did_not_initiate(
    store: Store,
    conn: Connection,
    now: int,
    db: str,
    table: str,
    partition: str | None,
    message: str,
    compaction_type: CompactionType | None,
    initiator_id: str | None,
) -> int:
    """Record that the initiator decided not to queue a compaction (history only)."""
    spec, partition = resolve(conn, db, table, partition)
    cc_id = store.allocate(conn, "compaction")
    conn.execute(
        insert(cc).values(
            cc_id=cc_id,
            cc_database=spec.db,
            cc_table=spec.name,
            cc_partition=partition,
            cc_state=_A,
            cc_type=None if compaction_type is None else CompactionType(compaction_type).code,
            cc_enqueue_time=now,
            cc_start=now,
            cc_end=now,
            cc_error_message=message,
            cc_initiator_id=initiator_id,
        )
    )
    return cc_id


def find_ready_to_clean(conn: Connection, now: int) -> list[CompactionInfo]:
    """Entries whose obsolete files no reader can still need (Hive 4 cleaner rule + leases).

    Ready when no open txn has an id below ``CQ_NEXT_TXN_ID`` (Hive 4) and no live reader
    lease's snapshot misses the compactor's commit (see :mod:`leases`); per partition, only
    the entry with the lowest highest write id is offered (Hive's ReadyToClean query).
    """
    low_open = txns.min_open_txn(conn)
    snapshots = leases.live_snapshots(conn, now)
    rows = conn.execute(select(cq).where(cq.c.cq_state == _R).order_by(cq.c.cq_id)).all()
    lowest: dict[tuple[str, str, str | None], int] = {}
    for r in rows:
        key = (r.cq_database, r.cq_table, r.cq_partition)
        hw = r.cq_highest_write_id or 0
        lowest[key] = min(lowest.get(key, hw), hw)
    out = []
    for r in rows:
        if (r.cq_highest_write_id or 0) != lowest[(r.cq_database, r.cq_table, r.cq_partition)]:
            continue
        nxt = r.cq_next_txn_id
        if nxt is not None and low_open is not None and low_open < nxt:
            continue
        if any(leases.holds(snap, r.cq_txn_id, nxt) for snap in snapshots):
            continue
        out.append(to_info(r._mapping, "cq_"))
    return out


def mark_cleaned(conn: Connection, now: int, cq_id: int) -> None:
    """The cleaner removed the obsolete files: forget aborted writes up to the highest write id.

    Removes, for the entry's table/partition, TXN_COMPONENTS of aborted txns and
    COMPLETED_TXN_COMPONENTS with write id <= CQ_HIGHEST_WRITE_ID; aborted txns left with no
    components on the table lose their write id there (it reads as valid again: its files are
    gone), and aborted txns left with nothing at all are deleted, as are compactor txns of
    earlier failed attempts on the same partition. The entry becomes ``succeeded``.
    """
    info = _queued(conn, cq_id)
    if info.state != CompactionState.READY_FOR_CLEANING:
        raise MetastoreError(f"compaction {cq_id} is {info.state.value}, not ready for cleaning")
    _lock_entry(conn, cq_id, None)
    hwid = info.highest_write_id or 0
    tc, ctc = txn_components, completed_txn_components
    where_tc = and_(
        same_partition(
            tc.c.tc_database, tc.c.tc_table, tc.c.tc_partition, info.db, info.table, info.partition
        ),
        tc.c.tc_writeid <= hwid,
        tc.c.tc_txnid.in_(select(txns.txns.c.txn_id).where(txns.txns.c.txn_state == txns.ABORTED)),
    )
    touched = [r[0] for r in conn.execute(select(tc.c.tc_txnid).where(where_tc).distinct())]
    conn.execute(delete(tc).where(where_tc))
    conn.execute(
        delete(ctc).where(
            same_partition(
                ctc.c.ctc_database,
                ctc.c.ctc_table,
                ctc.c.ctc_partition,
                info.db,
                info.table,
                info.partition,
            ),
            ctc.c.ctc_writeid <= hwid,
        )
    )
    for txn_id in touched:
        left = conn.execute(
            select(func.count())
            .select_from(tc)
            .where(
                tc.c.tc_txnid == txn_id, tc.c.tc_database == info.db, tc.c.tc_table == info.table
            )
        ).scalar_one()
        if not left:
            conn.execute(
                delete(txn_to_write_id).where(
                    txn_to_write_id.c.t2w_txnid == txn_id,
                    txn_to_write_id.c.t2w_database == info.db,
                    txn_to_write_id.c.t2w_table == info.table,
                )
            )
    # Compactor txns that died or failed here before this compaction ran: their output was
    # just removed with the rest of the aborted directories.
    tc_part = same_partition(
        tc.c.tc_database, tc.c.tc_table, tc.c.tc_partition, info.db, info.table, info.partition
    )
    dead_compactors = [
        r[0]
        for r in conn.execute(
            select(tc.c.tc_txnid)
            .where(
                tc_part,
                tc.c.tc_writeid.is_(None),
                tc.c.tc_txnid < (info.txn_id or 0),
                tc.c.tc_txnid.in_(
                    select(txns.txns.c.txn_id).where(
                        txns.txns.c.txn_state == txns.ABORTED,
                        txns.txns.c.txn_type == int(TxnType.COMPACTION),
                    )
                ),
            )
            .distinct()
        )
    ]
    for chunk in txns.chunks(dead_compactors):
        conn.execute(delete(tc).where(tc_part, tc.c.tc_txnid.in_(chunk)))
    failed_txns = dead_compactors + [
        r[0]
        for r in conn.execute(
            select(cc.c.cc_txn_id).where(
                same_partition(
                    cc.c.cc_database,
                    cc.c.cc_table,
                    cc.c.cc_partition,
                    info.db,
                    info.table,
                    info.partition,
                ),
                cc.c.cc_state == _F,
                cc.c.cc_txn_id.is_not(None),
                cc.c.cc_txn_id < (info.txn_id or 0),
            )
        )
    ]
    _delete_finished_aborted(conn, touched, failed_txns)
    _move_to_history(conn, cq_id, _S, now)


def get_info(conn: Connection, cq_id: int) -> CompactionInfo:
    """A queue entry, or its history entry once finished."""
    row = conn.execute(select(cq).where(cq.c.cq_id == cq_id)).first()
    if row is not None:
        return to_info(row._mapping, "cq_")
    row = conn.execute(select(cc).where(cc.c.cc_id == cq_id)).first()
    if row is not None:
        return to_info(row._mapping, "cc_")
    raise NoSuchObjectError(f"no compaction with id {cq_id}")


def queued(conn: Connection, states: Sequence[CompactionState]) -> list[CompactionInfo]:
    """Queue entries (not the history) in ``states``, by id."""
    codes = [s.code for s in states]
    rows = conn.execute(select(cq).where(cq.c.cq_state.in_(codes)).order_by(cq.c.cq_id))
    return [to_info(r._mapping, "cq_") for r in rows]


def all_entries(conn: Connection) -> list[CompactionInfo]:
    """Queue then history, each by id (what SHOW COMPACTIONS lists)."""
    out = [to_info(r._mapping, "cq_") for r in conn.execute(select(cq).order_by(cq.c.cq_id))]
    out += [to_info(r._mapping, "cc_") for r in conn.execute(select(cc).order_by(cc.c.cc_id))]
    return out


# --------------------------------------------------------------------------- helpers


def resolve(conn: Connection, db: str, table: str, partition: str | None) -> tuple[Any, str | None]:
    spec = catalog.get_table(conn, db, table)
    if partition is not None:
        if not spec.is_partitioned:
            raise MetastoreError(
                f"table {spec.full_name} is not partitioned; no partition {partition!r}"
            )
        partition = normalize_partition_name(partition, spec.partition_column_names)
    return spec, partition


def same_partition(
    db_col: Any, table_col: Any, part_col: Any, db: str, table: str, partition: str | None
) -> ColumnElement[bool]:
    part = part_col.is_(None) if partition is None else part_col == partition
    return and_(db_col == db, table_col == table, part)


def _queued(conn: Connection, cq_id: int) -> CompactionInfo:
    row = conn.execute(select(cq).where(cq.c.cq_id == cq_id)).first()
    if row is None:
        done = conn.execute(select(cc.c.cc_state).where(cc.c.cc_id == cq_id)).scalar()
        if done is not None:
            raise MetastoreError(
                f"compaction {cq_id} already finished ({CompactionState.from_code(done).value})"
            )
        raise NoSuchObjectError(f"no compaction with id {cq_id}")
    return to_info(row._mapping, "cq_")


def _lock_entry(conn: Connection, cq_id: int, txn_id: int | None) -> None:
    row = conn.execute(select(cq.c.cq_txn_id).where(cq.c.cq_id == cq_id).with_for_update()).first()
    if row is None or (txn_id is not None and row.cq_txn_id != txn_id):
        raise MetastoreError(f"compaction {cq_id} changed under us (revoked or finished)")


def _move_to_history(
    conn: Connection, cq_id: int, state: str, now: int, error_message: str | None = None
) -> None:
    row = conn.execute(select(cq).where(cq.c.cq_id == cq_id)).first()
    assert row is not None
    values = {f"cc_{k[3:]}": v for k, v in row._mapping.items()}
    values.update(cc_state=state, cc_end=now)
    if error_message is not None:
        values["cc_error_message"] = error_message
    conn.execute(insert(cc).values(**values))
    conn.execute(delete(cq).where(cq.c.cq_id == cq_id))


def _delete_finished_aborted(
    conn: Connection, touched: list[int], compactor_txns: list[int]
) -> None:
    t = txns.txns
    candidates = sorted(set(touched) | set(compactor_txns))
    for start in range(0, len(candidates), 500):
        chunk = candidates[start : start + 500]
        conn.execute(
            delete(t).where(
                t.c.txn_id.in_(chunk),
                t.c.txn_state == txns.ABORTED,
                ~select(txn_components.c.tc_txnid)
                .where(txn_components.c.tc_txnid == t.c.txn_id)
                .exists(),
                ~select(txn_to_write_id.c.t2w_txnid)
                .where(txn_to_write_id.c.t2w_txnid == t.c.txn_id)
                .exists(),
            )
        )


def to_info(m: Any, prefix: str) -> CompactionInfo:
    def g(name: str) -> Any:
        return m.get(prefix + name)

    props = g("tblproperties")
    ctype = g("type")
    meta = json.loads(g("meta_info") or "{}")
    return CompactionInfo(
        id=int(g("id")),
        db=g("database"),
        table=g("table"),
        partition=g("partition"),
        type=None if ctype is None else CompactionType.from_code(ctype),
        state=CompactionState.from_code(g("state")),
        properties=json.loads(props) if props else {},
        worker_id=g("worker_id"),
        enqueue_time=g("enqueue_time"),
        start=g("start"),
        end=m.get("cc_end"),
        highest_write_id=g("highest_write_id"),
        txn_id=g("txn_id"),
        next_txn_id=g("next_txn_id"),
        commit_time=g("commit_time"),
        initiator_id=g("initiator_id"),
        error_message=g("error_message"),
        run_as=g("run_as"),
        pool_name=g("pool_name"),
        order_by=meta.get("orderBy"),
        number_of_buckets=meta.get("numberOfBuckets"),
    )
