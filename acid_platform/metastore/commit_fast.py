"""A commit in one statement (PostgreSQL) for the txns whose commit checks nothing.

:func:`~acid_platform.metastore.txns.commit_txn` (the full path) locks the txn row with a probe,
then does what the probe found to do, in BEGIN + 2..n statements + COMMIT. A txn that is not a
compactor, updated or deleted nothing (no write-set check, no commit id) and publishes no
sources (no duplicate check) needs none of those decisions: read-only, lock-only and
insert-only txns whose files were recorded before (none recorded now: a commit recording files
adds them to its partitions' statistics, :mod:`.partition_stats`, on the full path). :func:`commit_unchecked` commits such a txn with one autocommit statement of
data-modifying CTEs — the txn row marked committed, its insert components moved to
``completed_txn_components`` (stamped ``now``, ``update_delete = 'N'``; a read-only txn's
dropped, not moved), its components and locks deleted — exactly what the full path writes for
it. It returns ``False`` and changes nothing for any other txn (open with update/delete
components or sources, a compactor, aborted, committed, unknown): the caller then runs the full
path, which raises the typed errors and does the checks.

Why one statement is as safe as the full path:

* the ``UPDATE`` of the txn row is the gate: the moves and deletes run only if it returned the
  row (``EXISTS (SELECT … FROM committed)``), and all of it commits or none;
* a concurrent abort (the time-out reaper, a lock request reaping, ``abort_txns``) locks the
  same row. If it got there first, the ``UPDATE`` waits, then re-reads the row (READ COMMITTED
  re-evaluates its ``WHERE`` on the newest version): aborted, or deleted (an empty txn's abort
  purges it), so nothing is updated and the full path reports the abort. If the commit got
  there first, the abort's ``SELECT … FOR UPDATE … WHERE txn_state = 'o'`` re-reads it
  committed and leaves it. A txn is never both;
* the ``NOT EXISTS`` tests and the rows moved come from the statement's snapshot, taken before
  the row lock: only the txn's own client adds components, sources or locks to an open txn, and
  it does so before it commits (the full path's probe reads the same snapshot before its lock,
  with the same contract).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, bindparam, delete, exists, select, update
from sqlalchemy.engine import Connection

from acid_platform.errors import NoSuchTxnError
from acid_platform.metastore.model import TxnType
from acid_platform.metastore.schema import (
    hive_locks,
    txn_components,
    txn_sources,
    txns,
    write_files,
)
from acid_platform.metastore.txns import (
    COMMITTED,
    OPEN,
    check_txn_id,
    is_update_delete,
    move_to_completed,
)


def commit_unchecked(conn: Connection, now: int, txn_id: int) -> bool:
    """Commit ``txn_id`` in one statement if it is open and its commit checks nothing (see the
    module docs); ``False`` (nothing changed) otherwise. ``conn`` is in autocommit mode."""
    try:
        check_txn_id(txn_id)
    except NoSuchTxnError:
        return False  # the full path raises the typed error
    return conn.execute(_COMMIT_UNCHECKED, {"b_txn_id": txn_id, "b_now": now}).first() is not None


def _build_commit_unchecked() -> Any:
    """``WITH committed AS (UPDATE txns … RETURNING), moved AS (INSERT …), … SELECT``."""
    tc, ts, hl = txn_components, txn_sources, hive_locks
    txn_id: Any = bindparam("b_txn_id")
    now: Any = bindparam("b_now", type_=BigInteger)
    committed = (
        update(txns)
        .where(
            txns.c.txn_id == txn_id,
            txns.c.txn_state == OPEN,
            txns.c.txn_type != int(TxnType.COMPACTION),
            ~exists().where(tc.c.tc_txnid == txn_id, is_update_delete(tc.c.tc_operation_type)),
            ~exists().where(ts.c.ts_txnid == txn_id),
            # what it recorded changes its partitions' statistics (``partition_stats``)
            ~exists().where(write_files.c.wf_txnid == txn_id),
        )
        .values(txn_state=COMMITTED, txn_last_heartbeat=now)
        .returning(txns.c.txn_id, txns.c.txn_type)
        .cte("committed")
    )
    done = select(committed.c.txn_id).exists()
    wrote = select(committed.c.txn_id).where(committed.c.txn_type != int(TxnType.READ_ONLY))
    moved = move_to_completed(txn_id, now, update_delete=False, when=wrote.exists()).cte("moved")
    components = delete(tc).where(tc.c.tc_txnid == txn_id, done).cte("components")
    released = delete(hl).where(hl.c.hl_txnid == txn_id, done).cte("released")
    return select(committed.c.txn_id).add_cte(moved, components, released)


_COMMIT_UNCHECKED = _build_commit_unchecked()
