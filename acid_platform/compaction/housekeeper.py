"""The housekeeper: reap timed-out transactions and locks, purge history (Hive's
AcidHouseKeeperService and AcidTxnCleanerService, one pass).

A client that dies (``kill -9``, a lost machine) stops heartbeating; one pass after
``hive.txn.timeout`` of silence aborts its transaction, which releases its locks, so a crashed
client never holds a table longer than the time-out. Safe to run from several processes.

>>> # report = run_housekeeping(wh, timeout_s=300); report.aborted_txns
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acid_platform.compaction.context import CompactionContext


@dataclass(frozen=True)
class HousekeepingReport:
    """What one housekeeping pass did.

    ``aborted_txns``: transactions aborted for silence; ``freed_locks``: lock ids (``ext.int``)
    released with them or expired (txn-less); ``purged``: metadata rows dropped, by kind.
    """

    timeout_s: float
    aborted_txns: tuple[int, ...] = ()
    freed_locks: tuple[str, ...] = ()
    purged: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout_s,
            "aborted_txns": list(self.aborted_txns),
            "freed_locks": list(self.freed_locks),
            "purged": dict(self.purged),
        }


@dataclass(frozen=True)
class TimedOut:
    """Open transactions and txn-less locks silent longer than the time-out (what the next
    :func:`run_housekeeping` would reap)."""

    txn_ids: tuple[int, ...] = ()
    lock_ids: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.txn_ids or self.lock_ids)


def find_timed_out(target: Any, timeout_s: float | None = None) -> TimedOut:
    """What is due for reaping now (read only)."""
    ms = CompactionContext.of(target).metastore
    timeout = ms.txn_timeout_s if timeout_s is None else float(timeout_s)
    cutoff_ms = ms.now_ms() - int(timeout * 1000)
    txns = tuple(
        int(row["Transaction ID"])
        for row in ms.show_transactions()
        if row["Transaction State"] == "OPEN" and row["Last Heartbeat Time"] < cutoff_ms
    )
    locks = tuple(
        str(row["Lock ID"])
        for row in ms.show_locks()
        if row["Transaction ID"] is None and (row["Last Heartbeat"] or 0) < cutoff_ms
    )
    return TimedOut(txns, locks)


def run_housekeeping(target: Any, timeout_s: float | None = None) -> HousekeepingReport:
    """One pass: abort transactions silent for ``timeout_s`` (default: the metastore's
    ``hive.txn.timeout``) and drop their locks, expire txn-less locks and reader leases silent
    as long, then purge transaction and compaction history no one can need."""
    ms = CompactionContext.of(target).metastore
    timeout = ms.txn_timeout_s if timeout_s is None else float(timeout_s)
    cutoff_ms = ms.now_ms() - int(timeout * 1000)
    before = ms.show_locks()
    aborted = ms.reap_timed_out(timeout)
    left = {row["Lock ID"] for row in ms.show_locks()}
    freed = tuple(
        row["Lock ID"]
        for row in before
        if row["Lock ID"] not in left
        and (
            row["Transaction ID"] in aborted
            or (row["Transaction ID"] is None and (row["Last Heartbeat"] or 0) < cutoff_ms)
        )
    )
    purged = dict(ms.purge_txn_history())
    purged["compaction_history"] = ms.purge_history()
    return HousekeepingReport(timeout, tuple(aborted), freed, purged)


__all__ = ["HousekeepingReport", "TimedOut", "find_timed_out", "run_housekeeping"]
