"""The compaction queue and reader lease halves of :class:`~acid_platform.metastore.Metastore`.

Mixins over the facade's plumbing (``_write``/``_read`` run a unit of work with the current
time); kept apart so each file reads in one sitting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acid_platform.format.txn_list import ValidTxnList
from acid_platform.metastore import (
    compaction_history,
    compaction_queue,
    compaction_recovery,
    leases,
    txns,
)
from acid_platform.metastore.model import (
    CompactionInfo,
    CompactionState,
    CompactionType,
    PartitionActivity,
)
from acid_platform.metastore.store import Store


class MetastorePlumbing:
    """What the mixins need from the facade."""

    _store: Store
    _open_counter: txns.OpenTxnCounter
    _user: str
    _host: str
    txn_timeout_s: float

    def _write(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _read(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _read_at(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class CompactionQueueApi(MetastorePlumbing):
    """Enqueue, claim, finish, clean and inspect compactions (Hive's CompactionTxnHandler)."""

    def enqueue_compaction(
        self,
        db: str,
        table: str,
        partition: str | None,
        type: CompactionType | str,  # noqa: A002
        *,
        initiator_id: str | None = None,
        properties: Mapping[str, str] | None = None,
        run_as: str | None = None,
        pool_name: str | None = None,
        order_by: str | None = None,
        number_of_buckets: int | None = None,
    ) -> int | None:
        """Queue a ``major``/``minor``/``rebalance`` compaction; ``None`` if one is already
        initiated/working."""
        ctype = CompactionType(type)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: compaction_queue.enqueue(
                self._store,
                c,
                now,
                db,
                table,
                partition,
                ctype,
                initiator_id=initiator_id,
                properties=properties,
                run_as=run_as,
                pool_name=pool_name,
                order_by=order_by,
                number_of_buckets=number_of_buckets,
            )
        )

    def claim_compaction(
        self, worker_id: str, *, worker_version: str | None = None, cq_id: int | None = None
    ) -> CompactionInfo | None:
        """Claim the oldest initiated entry (or entry ``cq_id``, when it is still initiated) for
        ``worker_id`` (``host-thread``) and open its compactor txn (``CompactionInfo.txn_id``,
        to heartbeat while working). ``None`` when there is nothing (left) to claim."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: compaction_queue.claim(
                self._store,
                c,
                now,
                worker_id,
                worker_version=worker_version,
                counter=self._open_counter,
                cq_id=cq_id,
            )
        )

    def mark_compacted(
        self, cq_id: int, highest_write_id: int, replaced: Sequence[str] = ()
    ) -> CompactionInfo:
        """Commit the compactor txn; the entry becomes ready for cleaning. ``replaced``: the
        directories (names) its output made obsolete (see :mod:`.partition_stats`)."""
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: compaction_queue.mark_compacted(
                self._store, c, now, cq_id, highest_write_id, replaced
            )
        )

    def mark_failed(self, cq_id: int, error_message: str) -> None:
        """Abort the compactor txn; the entry goes to history as failed."""
        self._write(lambda c, now: compaction_queue.mark_failed(c, now, cq_id, error_message))

    def mark_did_not_initiate(
        self,
        db: str,
        table: str,
        partition: str | None,
        message: str,
        *,
        type: CompactionType | str | None = None,  # noqa: A002
        initiator_id: str | None = None,
    ) -> int:
        """Record in the history that the initiator declined (e.g. too many failures)."""
        ctype = None if type is None else CompactionType(type)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: compaction_queue.mark_did_not_initiate(
                self._store, c, now, db, table, partition, message, ctype, initiator_id
            )
        )

    def revoke_timed_out_workers(self, timeout_s: float = 86_400) -> list[int]:
        """Reset entries working longer than ``timeout_s`` to initiated (abort their txns)."""
        ms = int(timeout_s * 1000)
        return self._write(lambda c, now: compaction_recovery.revoke_timed_out_workers(c, now, ms))  # type: ignore[no-any-return]

    def find_ready_to_clean(self) -> list[CompactionInfo]:
        """Entries the cleaner may clean now (no reader can still need the obsolete files)."""
        return self._read_at(  # type: ignore[no-any-return]
            lambda c, now: compaction_queue.find_ready_to_clean(c, now)
        )

    def mark_cleaned(self, cq_id: int) -> None:
        """The cleaner finished: entry succeeded, aborted-write metadata up to its write id gone."""
        self._write(lambda c, now: compaction_queue.mark_cleaned(c, now, cq_id))

    def queued_compactions(self, *states: CompactionState | str) -> list[CompactionInfo]:
        """Entries of the queue (not the history) in ``states`` (default: ``initiated`` and
        ``working``), oldest first."""
        wanted = [CompactionState(s) for s in states] or [
            CompactionState.INITIATED,
            CompactionState.WORKING,
        ]
        return self._read(compaction_queue.queued, wanted)  # type: ignore[no-any-return]

    def get_compaction(self, cq_id: int) -> CompactionInfo:
        return self._read(compaction_queue.get_info, cq_id)  # type: ignore[no-any-return]

    def compaction_history(
        self, db: str, table: str, partition: str | None = None
    ) -> list[CompactionInfo]:
        """Finished compactions of one table/partition, oldest first."""
        return self._read(compaction_history.history, db, table, partition)  # type: ignore[no-any-return]

    def purge_history(
        self, *, succeeded: int = 3, failed: int = 3, did_not_initiate: int = 2
    ) -> int:
        """Trim the history per partition (hive.compactor.history.retention.*)."""
        retention = {
            CompactionState.SUCCEEDED: succeeded,
            CompactionState.FAILED: failed,
            CompactionState.DID_NOT_INITIATE: did_not_initiate,
        }
        return self._write(lambda c, now: compaction_history.purge_history(c, retention))  # type: ignore[no-any-return]

    def too_many_failed_compactions(
        self,
        db: str,
        table: str,
        partition: str | None = None,
        *,
        threshold: int = 2,
        retry_after_s: float = 7 * 86_400,
    ) -> bool:
        """Initiator check: the last ``threshold`` attempts failed (and not long ago)."""
        return self._read_at(  # type: ignore[no-any-return]
            lambda c, now: compaction_history.too_many_failures(
                c, now, db, table, partition, threshold, int(retry_after_s * 1000)
            )
        )

    def committed_write_ids(self, db: str, table: str, partition: str | None = None) -> set[int]:
        """Write ids of committed writes to a partition (or the whole table) not yet retired
        by a cleaned compaction (those up to its highest write id are forgotten)."""
        return self._read(compaction_history.committed_write_ids, db, table, partition)  # type: ignore[no-any-return]

    def write_activity(self, since_ms: int | None = None) -> list[PartitionActivity]:
        """Initiator input: per table/partition, uncompacted committed writer txns (since
        ``since_ms``), whether any updated/deleted, and how many aborted txns left writes."""
        return self._read(compaction_history.write_activity, since_ms)  # type: ignore[no-any-return]


class ReadLeaseApi(MetastorePlumbing):
    """Reader leases: snapshots held by long reads, honoured by the cleaner."""

    def open_read_lease(
        self,
        valid_txns: ValidTxnList,
        ttl_s: float | None = None,
        *,
        agent_info: str | None = None,
    ) -> int:
        """Register a snapshot being read; the cleaner waits for it until closed or expired
        (``ttl_s`` after the last heartbeat; default ``txn_timeout_s``)."""
        ttl_ms = int((self.txn_timeout_s if ttl_s is None else ttl_s) * 1000)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: leases.open_lease(
                self._store,
                c,
                now,
                valid_txns,
                ttl_ms,
                user=self._user,
                host=self._host,
                agent_info=agent_info,
            )
        )

    def shared_read_lease(self, key: str, ttl_s: float | None = None) -> tuple[int, ValidTxnList]:
        """``(lease id, snapshot)`` of the live lease registered under ``key`` (at most 128
        characters, shown as its agent info), extended; if there is none, a new lease on the
        snapshot taken now. Every caller with the same key gets the first caller's snapshot:
        readers in several processes (the Spark tasks of one query) agree on one snapshot."""
        ttl_ms = int((self.txn_timeout_s if ttl_s is None else ttl_s) * 1000)
        return self._write(  # type: ignore[no-any-return]
            lambda c, now: leases.shared_lease(
                self._store, c, now, key, ttl_ms, user=self._user, host=self._host
            )
        )

    def find_read_lease(self, key: str) -> tuple[int, ValidTxnList] | None:
        """``(lease id, snapshot)`` of the live lease registered under ``key``, extended, or
        ``None``: which snapshot the readers of one query (:meth:`shared_read_lease`) took."""
        return self._write(lambda c, now: leases.find_shared_lease(c, now, key))  # type: ignore[no-any-return]

    def heartbeat_read_lease(self, lease_id: int) -> None:
        """Extend a lease (:class:`NoSuchLockError` if it expired or was closed)."""
        self._write(lambda c, now: leases.heartbeat_lease(c, now, lease_id))

    def close_read_lease(self, lease_id: int) -> None:
        """Drop a lease (closing one that is already gone is fine)."""
        self._write(lambda c, now: leases.close_lease(c, lease_id))

    def show_read_leases(self) -> list[dict[str, Any]]:
        return self._read_at(lambda c, now: leases.list_leases(c, now))  # type: ignore[no-any-return]
