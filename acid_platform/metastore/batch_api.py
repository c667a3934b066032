"""The streaming half of :class:`~acid_platform.metastore.Metastore`: a transaction batch's
metastore work in as few round trips as the batch can take (Hive's ``TransactionBatch`` makes
the same calls: ``openTxns``, ``allocateTableWriteIds``, ``lock`` per transaction with its
components, ``commitTxn``, ``heartbeatTxnRange``, ``abortTxns``).

A batch records its write components for every transaction at once (one write), and a commit
takes the next transaction's lock in the same database transaction, so a streaming transaction
costs one metastore write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acid_platform.metastore import locks, txns, writeids
from acid_platform.metastore.compaction_api import MetastorePlumbing
from acid_platform.metastore.model import LockComponent, LockResponse, OperationType


class TxnBatchApi(MetastorePlumbing):
    """Write components and commits of streaming transaction batches."""

    def record_batch_writes(
        self, txn_ids: Sequence[int], db: str, table: str, partitions: Sequence[str | None]
    ) -> None:
        """Record INSERT write components on ``partitions`` (``None``: the whole table) for
        every txn of a batch, in one write (allocating write ids where missing)."""
        ids, parts = list(txn_ids), list(partitions)

        def work(c: Any, now: int) -> None:
            writeids.add_batch_write_components(c, ids, db, table, parts, OperationType.INSERT)

        if ids and parts:
            self._write(work)

    def commit_and_lock(
        self,
        txn_id: int,
        *,
        db: str,
        table: str,
        partitions: Sequence[str] = (),
        next_txn_id: int | None = None,
        lock: Sequence[LockComponent] = (),
        agent_info: str | None = None,
    ) -> LockResponse | None:
        """Commit ``txn_id`` — first recording INSERT components on the (new) ``partitions`` it
        wrote — and, in the same database transaction, request ``lock`` for ``next_txn_id``
        (returned; ``None`` without one). A failed commit requests nothing."""
        parts = list(partitions)
        comps = list(lock)

        def work(c: Any, now: int) -> LockResponse | None:
            if parts:
                writeids.add_write_components(c, txn_id, db, table, parts, OperationType.INSERT)
            txns.commit_txn(self._store, c, now, txn_id)
            if next_txn_id is None or not comps:
                return None
            return locks.enqueue_and_check(
                self._store,
                c,
                now,
                next_txn_id,
                comps,
                user=self._user,
                host=self._host,
                agent_info=agent_info,
            )

        return self._write(work)  # type: ignore[no-any-return]
