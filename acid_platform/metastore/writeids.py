"""Per-table write ids, ValidWriteIdLists and the components a transaction wrote.

Write ids are allocated per table, consecutively, at most one per (txn, table), first is 1
(Hive ``allocateTableWriteIds``). ``NEXT_WRITE_ID`` is row-locked while allocating, after the
txn rows (the store's lock order).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, bindparam, delete, exists, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, NoResultFound

from acid_platform.errors import MetastoreError, NoSuchObjectError
from acid_platform.format.txn_list import ValidTxnList
from acid_platform.format.write_id_list import ValidWriteIdList
from acid_platform.metastore import catalog
from acid_platform.metastore.model import OperationType, TxnType
from acid_platform.metastore.names import normalize_identifier, normalize_partition_name
from acid_platform.metastore.schema import (
    acid_sequences,
    next_write_id,
    tbls,
    txn_components,
    txn_to_write_id,
)
from acid_platform.metastore.store import RetryTransaction, Store, tuples
from acid_platform.metastore.txns import require_open, txn_str


def allocate_write_ids(conn: Connection, txn_ids: Sequence[int], db: str, table: str) -> list[int]:
    """Write ids of ``txn_ids`` on ``db.table``, allocating consecutive ones where missing.

    Txns that already own a write id on the table keep it. Returned in the order of ``txn_ids``.
    """
    db = normalize_identifier(db, "database name")
    table = normalize_identifier(table, "table name")
    ordered = sorted(set(txn_ids))
    if not ordered:
        raise ValueError("allocate_write_ids needs at least one txn id")
    for txn_id in ordered:
        row = require_open(conn, txn_id)
        if row.txn_type in (int(TxnType.READ_ONLY), int(TxnType.COMPACTION)):
            kind = "read-only" if row.txn_type == int(TxnType.READ_ONLY) else "compactor"
            raise MetastoreError(
                f"{txn_str(txn_id)} is a {kind} transaction; it cannot allocate a write id "
                f"on {db}.{table}"
            )
    t2w = txn_to_write_id
    existing: dict[int, int] = {
        txn: wid
        for txn, wid in tuples(
            conn.execute(_WRITE_IDS_OF, {"b_db": db, "b_table": table, "b_txns": ordered})
        )
    }
    missing = [t for t in ordered if t not in existing]
    if missing:
        first = _take_write_ids(conn, db, table, len(missing))
        rows = [
            {"t2w_txnid": t, "t2w_database": db, "t2w_table": table, "t2w_writeid": first + i}
            for i, t in enumerate(missing)
        ]
        conn.execute(insert(t2w), rows)
        existing.update({t: first + i for i, t in enumerate(missing)})
    return [int(existing[t]) for t in txn_ids]


def write_id_of(conn: Connection, txn_id: int, db: str, table: str) -> int | None:
    """The write id ``txn_id`` holds on ``db.table``, if any."""
    t2w = txn_to_write_id
    value = conn.execute(
        select(t2w.c.t2w_writeid).where(
            t2w.c.t2w_txnid == txn_id, t2w.c.t2w_database == db, t2w.c.t2w_table == table
        )
    ).scalar()
    return None if value is None else int(value)


def writers_of(conn: Connection, db: str, table: str, write_ids: Sequence[int]) -> dict[int, int]:
    """Write id -> the txn that holds it on ``db.table`` (ids whose mapping is gone are left out)."""
    t2w = txn_to_write_id
    ids = sorted(set(write_ids))[:500]
    if not ids:
        return {}
    rows = conn.execute(
        select(t2w.c.t2w_writeid, t2w.c.t2w_txnid).where(
            t2w.c.t2w_database == db, t2w.c.t2w_table == table, t2w.c.t2w_writeid.in_(ids)
        )
    )
    return {int(w): int(t) for w, t in tuples(rows)}


def add_write_components(
    conn: Connection,
    txn_id: int,
    db: str,
    table: str,
    partitions: Sequence[str | None],
    operation: OperationType,
) -> int:
    """Record that ``txn_id`` inserted/updated/deleted in these partitions (TXN_COMPONENTS).

    ``None`` stands for the whole table (unpartitioned tables, or a partitioned table whose
    written partitions are not known). Allocates the txn's write id on the table if needed and
    returns it. Call it before writing files: an aborted txn's files are cleaned by partition.
    """
    return add_batch_write_components(conn, [txn_id], db, table, partitions, operation)[0]


def add_write_component_groups(
    conn: Connection,
    txn_id: int,
    db: str,
    table: str,
    groups: Sequence[tuple[OperationType, Sequence[str | None]]],
) -> int:
    """:func:`add_write_components` for each (operation, partitions) group; the write id."""
    if not groups:
        raise ValueError(f"write components of {db}.{table}: no operation given")
    ids = [add_write_components(conn, txn_id, db, table, parts, op) for op, parts in groups]
    return ids[-1]


def add_batch_write_components(
    conn: Connection,
    txn_ids: Sequence[int],
    db: str,
    table: str,
    partitions: Sequence[str | None],
    operation: OperationType,
) -> list[int]:
    """:func:`add_write_components` for each of ``txn_ids`` (a streaming batch), in a handful
    of statements rather than a handful per txn; returns their write ids, in order."""
    operation = OperationType(operation)
    spec = catalog.get_table(conn, db, table)
    names: list[str | None] = []
    for p in partitions:
        if p is None:
            names.append(None)
        elif not spec.is_partitioned:
            raise MetastoreError(
                f"table {spec.full_name} is not partitioned; write components must name no "
                f"partition, not {p!r}"
            )
        else:
            names.append(normalize_partition_name(p, spec.partition_column_names))
    if not names:
        raise ValueError(f"add_write_components for {spec.full_name} needs at least one partition")
    ids = list(txn_ids)
    write_ids = allocate_write_ids(conn, ids, spec.db, spec.name)
    have = {
        (r.tc_txnid, r.tc_partition, r.tc_operation_type)
        for r in conn.execute(
            _COMPONENTS_OF, {"b_txn_ids": sorted(set(ids)), "b_db": spec.db, "b_table": spec.name}
        )
    }
    rows = [
        {
            "tc_txnid": txn_id,
            "tc_database": spec.db,
            "tc_table": spec.name,
            "tc_partition": name,
            "tc_operation_type": operation.code,
            "tc_writeid": write_id,
        }
        for txn_id, write_id in dict.fromkeys(zip(ids, write_ids, strict=True))
        for name in dict.fromkeys(names)
        if (txn_id, name, operation.code) not in have
    ]
    if rows:
        conn.execute(insert(txn_components), rows)
    return write_ids


def valid_write_ids(
    conn: Connection, valid_txns: ValidTxnList, db: str, table: str
) -> ValidWriteIdList:
    """The table's ValidWriteIdList for a txn snapshot (Hive ``getValidWriteIdsForTable``).

    Write id high watermark: the highest write id allocated by a txn <= the snapshot's txn
    high watermark (else NEXT_WRITE_ID - 1). Below it, write ids of txns that are not valid in
    the snapshot are exceptions: aborted if the txn is aborted, open otherwise. A txn's own
    write id is valid to it because its snapshot counts it as committed.
    """
    db = normalize_identifier(db, "database name")
    table = normalize_identifier(table, "table name")
    key = {"b_db": db, "b_table": table}
    hwm = conn.execute(_MAX_WRITE_ID, {**key, "b_hwm": valid_txns.high_watermark}).scalar()
    if not hwm or hwm <= 0:
        nxt = conn.execute(_NEXT_WRITE_ID, key).scalar()
        hwm = 0 if nxt is None else int(nxt) - 1
    else:
        # Write ids right above it whose txn's row the cleaner has removed (aborted ones, their
        # data cleaned) are past: a base compacted over them (a streaming delta whose last
        # txns aborted) must stay valid to a later snapshot.
        above = conn.execute(_NEXT_ROW_ABOVE, {**key, "b_above": hwm}).scalar()
        if above is None:
            nxt = conn.execute(_NEXT_WRITE_ID, key).scalar()
            above = hwm + 1 if nxt is None else int(nxt)
        hwm = max(int(hwm), int(above) - 1)
    open_ids: list[int] = []
    aborted_ids: list[int] = []
    invalid: list[int] = []
    min_open: int | None = None
    found_valid = False
    rows = tuples(conn.execute(_WRITE_IDS_UPTO, {**key, "b_upto": hwm}))
    for txn_id, write_id in rows:
        if valid_txns.is_txn_valid(txn_id):
            found_valid = True
            continue
        invalid.append(write_id)
        if valid_txns.is_txn_aborted(txn_id):
            aborted_ids.append(write_id)
        else:
            open_ids.append(write_id)
            min_open = write_id if min_open is None else min(min_open, write_id)
    if not found_valid and invalid:
        # Hive: with no valid uncompacted write left, the lowest invalid id becomes the
        # watermark and the only exception.
        lowest = invalid[0]
        hwm = lowest
        is_open = lowest == min_open
        open_ids = [lowest] if is_open else []
        aborted_ids = [] if is_open else [lowest]
    return ValidWriteIdList(f"{db}.{table}", int(hwm), open_ids, aborted_ids, min_open)


def ensure_next_write_id(conn: Connection, db: str, table: str) -> None:
    """Create the table's NEXT_WRITE_ID row (first write id 1) if it is missing."""
    present = conn.execute(
        select(next_write_id.c.nwi_next).where(
            next_write_id.c.nwi_database == db, next_write_id.c.nwi_table == table
        )
    ).first()
    if present is None:
        conn.execute(insert(next_write_id).values(nwi_database=db, nwi_table=table, nwi_next=1))


def forget_table(conn: Connection, db: str, table: str) -> None:
    """Drop the write id state of a table (on DROP TABLE)."""
    conn.execute(
        delete(next_write_id).where(
            next_write_id.c.nwi_database == db, next_write_id.c.nwi_table == table
        )
    )
    conn.execute(
        delete(txn_to_write_id).where(
            txn_to_write_id.c.t2w_database == db, txn_to_write_id.c.t2w_table == table
        )
    )


def _take_write_ids(conn: Connection, db: str, table: str, n: int) -> int:
    nwi = next_write_id
    first = conn.execute(_LOCK_NEXT_WRITE_ID, {"b_db": db, "b_table": table}).scalar()
    if first is None:
        table_exists = conn.execute(
            select(exists().where(tbls.c.tbl_database == db, tbls.c.tbl_name == table))
        ).scalar()
        if not table_exists:
            raise NoSuchObjectError(f"table {db}.{table} does not exist; cannot allocate write ids")
        try:
            with conn.begin_nested():
                conn.execute(insert(nwi).values(nwi_database=db, nwi_table=table, nwi_next=1 + n))
        except IntegrityError:
            raise RetryTransaction() from None
        return 1
    conn.execute(_SET_NEXT_WRITE_ID, {"b_db": db, "b_table": table, "b_next": first + n})
    return int(first)


# Hot statements, built once.
_t2w, _nwi, _tc = txn_to_write_id, next_write_id, txn_components
_t2w_table = and_(
    _t2w.c.t2w_database == bindparam("b_db"), _t2w.c.t2w_table == bindparam("b_table")
)
_nwi_table = and_(
    _nwi.c.nwi_database == bindparam("b_db"), _nwi.c.nwi_table == bindparam("b_table")
)
_WRITE_IDS_OF = select(_t2w.c.t2w_txnid, _t2w.c.t2w_writeid).where(
    _t2w_table, _t2w.c.t2w_txnid.in_(bindparam("b_txns", expanding=True))
)
_COMPONENTS_OF = select(_tc.c.tc_txnid, _tc.c.tc_partition, _tc.c.tc_operation_type).where(
    _tc.c.tc_txnid.in_(bindparam("b_txn_ids", expanding=True)),
    _tc.c.tc_database == bindparam("b_db"),
    _tc.c.tc_table == bindparam("b_table"),
)
_MAX_WRITE_ID = select(func.max(_t2w.c.t2w_writeid)).where(
    _t2w_table, _t2w.c.t2w_txnid <= bindparam("b_hwm")
)
_NEXT_ROW_ABOVE = select(func.min(_t2w.c.t2w_writeid)).where(
    _t2w_table, _t2w.c.t2w_writeid > bindparam("b_above")
)
_WRITE_IDS_UPTO = (
    select(_t2w.c.t2w_txnid, _t2w.c.t2w_writeid)
    .where(_t2w_table, _t2w.c.t2w_writeid <= bindparam("b_upto"))
    .order_by(_t2w.c.t2w_writeid)
)
_NEXT_WRITE_ID = select(_nwi.c.nwi_next).where(_nwi_table)
_LOCK_NEXT_WRITE_ID = _NEXT_WRITE_ID.with_for_update()
_SET_NEXT_WRITE_ID = update(_nwi).where(_nwi_table).values(nwi_next=bindparam("b_next"))


# --------------------------------------------------------------------------- statement ids
# A transaction whose statements run in several processes (``wh.transaction()`` shared with
# Spark SQL, whose writers plan in Spark's Python workers) takes its statement ids from one
# counter, a row ``stmt:<txn>`` of ``acid_sequences``: per transaction, as Hive's
# ``DbTxnManager`` numbers its statements (across its tables).


def statement_sequence(txn_id: int) -> str:
    """The ``acid_sequences`` row of ``txn_id``'s statement ids."""
    return f"stmt:{int(txn_id)}"


def share_statement_ids(conn: Connection, txn_id: int, first: int) -> None:
    """Start the statement id counter of open txn ``txn_id`` at ``first`` (or keep it, if
    it is already there and past ``first``)."""
    require_open(conn, txn_id)
    seq = acid_sequences
    name = statement_sequence(txn_id)
    current = conn.execute(select(seq.c.next_val).where(seq.c.seq_name == name)).scalar()
    if current is None:
        conn.execute(insert(seq).values(seq_name=name, next_val=int(first)))
    elif current < first:
        conn.execute(update(seq).where(seq.c.seq_name == name).values(next_val=int(first)))


def reserve_statement_ids(conn: Connection, store: Store, txn_id: int, count: int) -> int:
    """Reserve ``count`` statement ids of open txn ``txn_id`` (shared by
    :func:`share_statement_ids` first); returns the first."""
    require_open(conn, txn_id)
    try:
        return store.allocate(conn, statement_sequence(txn_id), count)
    except NoResultFound:
        raise MetastoreError(
            f"{txn_str(txn_id)} does not share its statement ids (only a transaction of "
            "wh.transaction() on a warehouse registered with Spark does)"
        ) from None


def release_statement_ids(conn: Connection, txn_id: int) -> None:
    """Forget the statement id counter of ``txn_id`` (it ended)."""
    seq = acid_sequences
    conn.execute(delete(seq).where(seq.c.seq_name == statement_sequence(txn_id)))
