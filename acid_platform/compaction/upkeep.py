"""Is a table's upkeep keeping up? Four WARN measures of the platform's asset checks, each read
from the table's health report (:func:`.health.health_report`, the one that ``SHOW TABLE STATUS``
and ``acid health`` print) against a limit (warnings, not errors: the data is right, reading it
is getting slower or files are piling up).

``deltas_below_threshold``
    the most current deltas of any partition (what a reader merges) against
    ``hive.compactor.delta.num.threshold`` (or the table's ``compactorthreshold.`` override);
``open_transactions_young``
    the age of the oldest open transaction of the warehouse (it holds back the cleaner and
    every compaction's watermark) against ``max_open_txn_age_s``;
``compaction_backlog``
    the table's entries waiting in the compaction queue (initiated or working), and how long the
    oldest has waited, against ``max_compaction_wait_s``;
``cleaner_backlog``
    the table's compactions ready for cleaning, how long the oldest has waited, and the
    obsolete or aborted directories still on disk, against ``max_clean_wait_s``.

>>> # [h.check for h in table_upkeep(wh, "db.t") if not h.passed]
"""

from __future__ import annotations

from dataclasses import dataclass

from acid_platform.compaction.health import HealthReport, health_report
from acid_platform.table.verify import Finding
from acid_platform.table.warehouse import TableWarehouse

UPKEEP_CHECKS = (
    "deltas_below_threshold",
    "open_transactions_young",
    "compaction_backlog",
    "cleaner_backlog",
)


@dataclass(frozen=True)
class UpkeepLimits:
    """The limits of the health measures (``delta_num_threshold`` ``None``: the compactor's)."""

    delta_num_threshold: int | None = None
    max_open_txn_age_s: float = 3600.0
    max_compaction_wait_s: float = 3600.0
    max_clean_wait_s: float = 3600.0


def table_upkeep(
    warehouse: TableWarehouse, name: str, limits: UpkeepLimits | None = None
) -> list[Finding]:
    """The four measures (in :data:`UPKEEP_CHECKS` order) for table ``name`` (``db.table``)."""
    return upkeep_findings(health_report(warehouse, name), limits)


def upkeep_findings(report: HealthReport, limits: UpkeepLimits | None = None) -> list[Finding]:
    """The four measures of a health report against ``limits``."""
    limits = limits or UpkeepLimits()
    most, worst = report.max_deltas
    threshold = limits.delta_num_threshold
    if threshold is None:
        threshold = report.delta_threshold
    deltas = Finding(
        "deltas_below_threshold",
        most <= threshold,
        f"at most {most} current delta(s) per partition"
        + (f" ({worst})" if worst else "")
        + f"; threshold {threshold}",
        {"max_deltas": most, "delta_threshold": threshold, "partitions": len(report.partitions)},
    )

    txn = report.oldest_open_txn
    age = txn.age_s if txn is not None else 0.0
    young = Finding(
        "open_transactions_young",
        age <= limits.max_open_txn_age_s,
        f"oldest open transaction {txn.txn_id} {age:.0f}s old "
        f"(limit {limits.max_open_txn_age_s:g}s)"
        if txn is not None
        else "no open transaction",
        {
            "oldest_open_txn_age_s": round(age, 3),
            "oldest_open_txn": txn.txn_id if txn is not None else None,
            "held_by_open_txn": report.backlog.held_by_open_txn,
        },
    )

    b = report.backlog
    backlog = Finding(
        "compaction_backlog",
        b.oldest_queued_s <= limits.max_compaction_wait_s,
        f"{b.queued} compaction(s) queued, the oldest waiting {b.oldest_queued_s:.0f}s "
        f"(limit {limits.max_compaction_wait_s:g}s)",
        {"compactions_queued": b.queued, "oldest_queued_s": round(b.oldest_queued_s, 3)},
    )
    cleaner = Finding(
        "cleaner_backlog",
        b.oldest_ready_s <= limits.max_clean_wait_s,
        f"{b.ready_for_cleaning} compaction(s) ready for cleaning, the oldest waiting "
        f"{b.oldest_ready_s:.0f}s (limit {limits.max_clean_wait_s:g}s); "
        f"{b.obsolete_paths} obsolete or aborted path(s) on disk",
        {
            "ready_for_cleaning": b.ready_for_cleaning,
            "oldest_ready_s": round(b.oldest_ready_s, 3),
            "obsolete_paths": b.obsolete_paths,
        },
    )
    return [deltas, young, backlog, cleaner]


__all__ = ["UPKEEP_CHECKS", "UpkeepLimits", "table_upkeep", "upkeep_findings"]
