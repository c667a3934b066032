"""Sources a transaction loads, committed into their table exactly when it commits.

An ingest names what it loads (a landing file's URI, size and modification time: a
:class:`~acid_platform.metastore.model.Source`) and records it in the transaction that writes
its rows (:func:`record`). The record waits with the transaction (``txn_sources``); the
commit publishes it (``committed_sources``, one row per table and source) in the same
database transaction that marks the transaction committed, and an abort drops it. So a source
is committed exactly when its rows become visible, and at most once:

* :func:`record` refuses a source already committed into the table (or already recorded in
  the transaction) with :class:`~acid_platform.errors.DuplicateSourceError`, before a file is
  written;
* two transactions loading the same source at once both pass that check; their commits
  publish one at a time (under the txn sequence mutex, as update/delete commits), and the
  second finds the source committed: it is aborted (:func:`first_committed`), nothing it wrote
  becomes visible, and it raises :class:`~acid_platform.errors.DuplicateSourceError`.

Sources are kept per table (by the SHA-256 of the key, so any key length fits an index) until
the table is dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, bindparam, delete, insert, outerjoin, select
from sqlalchemy.engine import Connection, Row

from acid_platform.errors import DuplicateSourceError
from acid_platform.metastore import catalog
from acid_platform.metastore.model import CommittedSource, Source
from acid_platform.metastore.schema import committed_sources, txn_sources, txn_to_write_id

_BATCH = 500


def source_hash(key: str) -> str:
    """The SHA-256 (hex) of a source key: what identifies it in the tables."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def record(conn: Connection, txn_id: int, db: str, table: str, loaded: Sequence[Source]) -> None:
    """Record that open txn ``txn_id`` loads ``loaded`` into ``db.table`` (the caller has
    checked the txn is open). Refuses a source committed into the table already, or recorded
    in this txn already (:class:`DuplicateSourceError`; then none is recorded)."""
    spec = catalog.get_table(conn, db, table)
    by_hash: dict[str, Source] = {}
    for source in loaded:
        digest = source_hash(source.key)
        if digest in by_hash:
            raise DuplicateSourceError(twice(source.key, spec.full_name, txn_id))
        by_hash[digest] = source
    committed = _committed_rows(conn, spec.db, spec.name, list(by_hash))
    if committed:
        raise DuplicateSourceError(already_committed(committed[0]))
    for digest, source in by_hash.items():
        pending = conn.execute(
            _PENDING_ONE,
            {"b_txn_id": txn_id, "b_db": spec.db, "b_table": spec.name, "b_hash": digest},
        ).first()
        if pending is not None:
            raise DuplicateSourceError(twice(source.key, spec.full_name, txn_id))
    conn.execute(
        insert(txn_sources),
        [
            {
                "ts_txnid": txn_id,
                "ts_database": spec.db,
                "ts_table": spec.name,
                "ts_source_hash": digest,
                "ts_source": source.key,
                "ts_info": json.dumps(dict(source.info), sort_keys=True, default=str),
            }
            for digest, source in by_hash.items()
        ],
    )


def twice(key: str, table: str, txn_id: int) -> str:
    """The message of a source recorded twice in one transaction."""
    return (
        f"source {key!r} is already recorded for {table} in txnid:{txn_id}: a transaction "
        "loads a source once"
    )


def first_committed(conn: Connection, txn_id: int) -> CommittedSource | None:
    """A source ``txn_id`` recorded that another transaction committed into the same table
    already (call under the commit mutex), or ``None``."""
    ts, cs = txn_sources, committed_sources
    row = conn.execute(
        select(*cs.c)
        .select_from(
            ts.join(
                cs,
                and_(
                    cs.c.cs_database == ts.c.ts_database,
                    cs.c.cs_table == ts.c.ts_table,
                    cs.c.cs_source_hash == ts.c.ts_source_hash,
                ),
            )
        )
        .where(ts.c.ts_txnid == bindparam("b_txn_id"))
        .limit(1),
        {"b_txn_id": txn_id},
    ).first()
    return None if row is None else _to_committed(row)


def publish(conn: Connection, now: int, txn_id: int) -> None:
    """Move the txn's recorded sources to ``committed_sources`` with its write id on each
    table (part of the commit; :func:`first_committed` found no clash)."""
    ts, t2w = txn_sources, txn_to_write_id
    joined = outerjoin(
        ts,
        t2w,
        and_(
            t2w.c.t2w_txnid == ts.c.ts_txnid,
            t2w.c.t2w_database == ts.c.ts_database,
            t2w.c.t2w_table == ts.c.ts_table,
        ),
    )
    rows = conn.execute(
        select(ts, t2w.c.t2w_writeid).select_from(joined).where(ts.c.ts_txnid == txn_id)
    ).all()
    if rows:
        conn.execute(
            insert(committed_sources),
            [
                {
                    "cs_database": r.ts_database,
                    "cs_table": r.ts_table,
                    "cs_source_hash": r.ts_source_hash,
                    "cs_source": r.ts_source,
                    "cs_info": r.ts_info,
                    "cs_txnid": txn_id,
                    "cs_writeid": r.t2w_writeid,
                    "cs_committed": now,
                }
                for r in rows
            ],
        )
    discard(conn, [txn_id])


def discard(conn: Connection, txn_ids: Sequence[int]) -> None:
    """Drop the recorded sources of ``txn_ids`` (committed, or aborted: nothing loaded)."""
    for start in range(0, len(txn_ids), _BATCH):
        chunk = list(txn_ids[start : start + _BATCH])
        conn.execute(delete(txn_sources).where(txn_sources.c.ts_txnid.in_(chunk)))


def committed(
    conn: Connection, db: str, table: str, keys: Iterable[str] | None = None
) -> list[CommittedSource]:
    """The sources committed into ``db.table`` (those of ``keys`` only, when given), in
    commit order."""
    spec = catalog.get_table(conn, db, table)
    if keys is None:
        cs = committed_sources
        rows = conn.execute(
            select(*cs.c)
            .where(cs.c.cs_database == spec.db, cs.c.cs_table == spec.name)
            .order_by(cs.c.cs_txnid, cs.c.cs_source)
        ).all()
    else:
        rows = _committed_rows(conn, spec.db, spec.name, [source_hash(k) for k in keys])
    found = [_to_committed(r) for r in rows]
    return sorted(found, key=lambda s: (s.txn_id, s.key))


def already_committed(source: CommittedSource | Row[Any], aborted: int | None = None) -> str:
    """The message of a source committed into its table already (``aborted``: the txn that
    was aborted for loading it again)."""
    info = source if isinstance(source, CommittedSource) else _to_committed(source)
    who = f"; txnid:{aborted} is aborted, nothing it wrote is visible" if aborted else ""
    return (
        f"source {info.key!r} is already committed into {info.db}.{info.table} by "
        f"txnid:{info.txn_id} (write id {info.write_id}); loading it again would duplicate "
        f"its rows{who}"
    )


def _committed_rows(conn: Connection, db: str, table: str, hashes: list[str]) -> list[Row[Any]]:
    cs = committed_sources
    rows: list[Row[Any]] = []
    for start in range(0, len(hashes), _BATCH):
        chunk = hashes[start : start + _BATCH]
        rows += conn.execute(
            select(*cs.c).where(
                cs.c.cs_database == db, cs.c.cs_table == table, cs.c.cs_source_hash.in_(chunk)
            )
        ).all()
    return rows


def _to_committed(row: Row[Any]) -> CommittedSource:
    info: Mapping[str, object] = json.loads(row.cs_info) if row.cs_info else {}
    return CommittedSource(
        db=row.cs_database,
        table=row.cs_table,
        key=row.cs_source,
        txn_id=int(row.cs_txnid),
        write_id=None if row.cs_writeid is None else int(row.cs_writeid),
        committed_at=int(row.cs_committed),
        info=info,
    )


_PENDING_ONE = select(txn_sources.c.ts_txnid).where(
    txn_sources.c.ts_txnid == bindparam("b_txn_id"),
    txn_sources.c.ts_database == bindparam("b_db"),
    txn_sources.c.ts_table == bindparam("b_table"),
    txn_sources.c.ts_source_hash == bindparam("b_hash"),
)
