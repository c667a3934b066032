"""Compaction history and what the initiator reads: history entries, their retention,
recent failures, and the write activity that makes a partition a compaction candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from acid_platform.metastore import compaction_queue as cq
from acid_platform.metastore import txns
from acid_platform.metastore.model import CompactionInfo, CompactionState, PartitionActivity
from acid_platform.metastore.schema import (
    completed_compactions,
    completed_txn_components,
    txn_components,
)
from acid_platform.metastore.store import tuples

cc = completed_compactions
_F, _A = CompactionState.FAILED.code, CompactionState.DID_NOT_INITIATE.code


def history(conn: Connection, db: str, table: str, partition: str | None) -> list[CompactionInfo]:
    """Finished compactions (succeeded, failed, did not initiate) of one partition, by id."""
    spec, partition = cq.resolve(conn, db, table, partition)
    rows = conn.execute(
        select(cc)
        .where(
            cq.same_partition(
                cc.c.cc_database, cc.c.cc_table, cc.c.cc_partition, spec.db, spec.name, partition
            )
        )
        .order_by(cc.c.cc_id)
    )
    return [cq.to_info(r._mapping, "cc_") for r in rows]


def purge_history(conn: Connection, retention: Mapping[CompactionState, int]) -> int:
    """Keep the newest N history entries per partition and state (Hive 3/3/2); returns deleted."""
    keep = {state.code: n for state, n in retention.items()}
    seen: dict[tuple[Any, ...], int] = {}
    doomed: list[int] = []
    for r in conn.execute(
        select(
            cc.c.cc_id, cc.c.cc_database, cc.c.cc_table, cc.c.cc_partition, cc.c.cc_state
        ).order_by(cc.c.cc_id.desc())
    ):
        if r.cc_state not in keep:
            continue
        key = (r.cc_database, r.cc_table, r.cc_partition, r.cc_state)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > keep[r.cc_state]:
            doomed.append(int(r.cc_id))
    for start in range(0, len(doomed), 500):
        conn.execute(delete(cc).where(cc.c.cc_id.in_(doomed[start : start + 500])))
    return len(doomed)


def too_many_failures(
    conn: Connection,
    now: int,
    db: str,
    table: str,
    partition: str | None,
    threshold: int,
    retry_after_ms: int,
) -> bool:
    """Hive's ``checkFailedCompactions``: the last ``threshold`` attempts all failed, recently."""
    spec, partition = cq.resolve(conn, db, table, partition)
    rows = conn.execute(
        select(cc.c.cc_state, cc.c.cc_enqueue_time)
        .where(
            cq.same_partition(
                cc.c.cc_database, cc.c.cc_table, cc.c.cc_partition, spec.db, spec.name, partition
            ),
            cc.c.cc_state != _A,
        )
        .order_by(cc.c.cc_id.desc())
        .limit(threshold)
    ).all()
    failed = sum(1 if r.cc_state == _F else -1 for r in rows)
    last = max((r.cc_enqueue_time or 0 for r in rows), default=-1)
    needs_retry = retry_after_ms > 0 and last + retry_after_ms < now
    return failed == threshold and not needs_retry


def committed_write_ids(conn: Connection, db: str, table: str, partition: str | None) -> set[int]:
    """Write ids of committed writes to a partition (or to the whole table) that compaction
    and cleaning have not yet retired (COMPLETED_TXN_COMPONENTS)."""
    spec, partition = cq.resolve(conn, db, table, partition)
    ctc = completed_txn_components
    where = [ctc.c.ctc_database == spec.db, ctc.c.ctc_table == spec.name]
    if partition is not None:
        where.append(ctc.c.ctc_partition.is_(None) | (ctc.c.ctc_partition == partition))
    rows = conn.execute(select(ctc.c.ctc_writeid).where(*where).distinct())
    return {int(r[0]) for r in rows if r[0] is not None}


def write_activity(conn: Connection, since_ms: int | None) -> list[PartitionActivity]:
    """Partitions with uncompacted committed writes (since ``since_ms``) or aborted writes."""
    ctc, tc = completed_txn_components, txn_components
    committed = select(
        ctc.c.ctc_database,
        ctc.c.ctc_table,
        ctc.c.ctc_partition,
        func.count(ctc.c.ctc_txnid.distinct()),
        func.max(ctc.c.ctc_timestamp),
        func.max(ctc.c.ctc_update_delete),
    ).group_by(ctc.c.ctc_database, ctc.c.ctc_table, ctc.c.ctc_partition)
    if since_ms is not None:
        committed = committed.where(ctc.c.ctc_timestamp > since_ms)
    acc: dict[tuple[str, str, str | None], list[Any]] = {}
    for db, table, part, n, last, ud in tuples(conn.execute(committed)):
        acc[(db, table, part)] = [int(n), last, ud == "Y", 0]
    aborted = (
        select(
            tc.c.tc_database, tc.c.tc_table, tc.c.tc_partition, func.count(tc.c.tc_txnid.distinct())
        )
        .where(
            tc.c.tc_txnid.in_(
                select(txns.txns.c.txn_id).where(txns.txns.c.txn_state == txns.ABORTED)
            )
        )
        .group_by(tc.c.tc_database, tc.c.tc_table, tc.c.tc_partition)
    )
    for db, table, part, n in tuples(conn.execute(aborted)):
        acc.setdefault((db, table, part), [0, None, False, 0])[3] = int(n)
    return [
        PartitionActivity(db, table, part, v[0], None if v[1] is None else int(v[1]), v[2], v[3])
        for (db, table, part), v in sorted(
            acc.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")
        )
    ]
