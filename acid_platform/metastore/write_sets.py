"""The write set: first committer wins for update/delete of the same partition (Hive 4).

At commit, a txn that updated or deleted rows checks WRITE_SET for a txn that committed an
update/delete on an overlapping table/partition after this txn started (its commit id, the
highest txn id at its commit, is >= this txn's id) and that the txn's snapshot does not see, and
is aborted if it finds one; otherwise it publishes its own update/delete components. A writer
committed before the snapshot was taken is no conflict even when it committed after the txn
opened: an autocommit statement takes its snapshot once its locks are granted (as Hive's driver
does), so the writer it waited for is one it reads. A snapshot older than the txn (a Spark SQL
statement's scan, which Spark runs before it asks for the writer that opens the txn) moves the
start back to it: a writer that committed after the snapshot, before the txn opened, overlaps. Update+update, update+delete, delete+update and
delete+delete conflict; inserts never do. The caller holds the ``NEXT_TXN_ID`` mutex so no
concurrent commit can slip between the check and the publication.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, insert, or_, select
from sqlalchemy.engine import Connection, Row

from acid_platform.format.txn_list import ValidTxnList
from acid_platform.metastore.model import OperationType
from acid_platform.metastore.schema import txn_components, write_set

UPDATE_DELETE = (OperationType.UPDATE.code, OperationType.DELETE.code)


def find_conflict(
    conn: Connection, txn_id: int, snapshot: ValidTxnList | None = None
) -> Row[Any] | None:
    """A committed txn that overlapped ``txn_id`` and updated/deleted the same partition.

    Overlap: the committed txn's commit id >= our txn id (it committed after we started) — or
    >= the high watermark of an older ``snapshot`` — and, given the ``snapshot``, the snapshot
    does not see it (it committed after the snapshot). A table-level component (partition
    NULL) overlaps every partition of its table.
    """
    start = txn_id if snapshot is None else min(txn_id, snapshot.high_watermark)
    ws, tc = write_set, txn_components
    same_partition = or_(
        ws.c.ws_partition == tc.c.tc_partition,
        ws.c.ws_partition.is_(None),
        tc.c.tc_partition.is_(None),
    )
    candidates = conn.execute(
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
            ws.c.ws_commit_id >= start,
            ws.c.ws_operation_type.in_(UPDATE_DELETE),
        )
        .order_by(ws.c.ws_commit_id, ws.c.ws_txnid)
    )
    for row in candidates:
        if snapshot is None or not snapshot.is_txn_valid(row.ws_txnid):
            return row
    return None


def conflict_message(txn_id: int, commit_id: int, c: Row[Any]) -> str:
    partition = c.ws_partition if c.ws_partition is not None else c.tc_partition
    resource = f"{c.ws_database}/{c.ws_table}" + (f"/{partition}" if partition else "")
    ours = OperationType.from_code(c.tc_operation_type).value
    theirs = OperationType.from_code(c.ws_operation_type).value
    return (
        f"Aborting [{_txn_str(txn_id)},{commit_id}] due to a write conflict on {resource} "
        f"committed by [{_txn_str(c.ws_txnid)},{c.ws_commit_id}] {ours}/{theirs}. "
        "The other transaction committed first; retry this one against the new snapshot."
    )


def record(conn: Connection, txn_id: int, commit_id: int) -> None:
    """Publish the txn's update/delete components in WRITE_SET under ``commit_id``."""
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


def _txn_str(txn_id: int) -> str:
    return f"txnid:{txn_id}"
