"""Is a table's upkeep keeping up? Four health measures, each with a limit (warnings, not errors:
the data is right, reading it is getting slower or files are piling up).

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
from typing import Any

from acid_platform.compaction.config import CompactorConf
from acid_platform.compaction.context import CompactionContext
from acid_platform.format import acid_state, list_partition_dirs
from acid_platform.metastore import CompactionState
from acid_platform.metastore.names import normalize_identifier
from acid_platform.table.verify import Finding

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
    target: Any,
    name: str,
    limits: UpkeepLimits | None = None,
    conf: CompactorConf | None = None,
) -> list[Finding]:
    """The four measures (in :data:`UPKEEP_CHECKS` order) for table ``name`` (``db.table``)."""
    limits = limits or UpkeepLimits()
    ctx = CompactionContext.of(target, conf)
    ms = ctx.metastore
    db, _, table = name.rpartition(".")
    spec = ms.get_table(
        normalize_identifier(db or "default", "database name"),
        normalize_identifier(table, "table name"),
    )
    now_ms = ms.now_ms()
    reader = ms.valid_write_ids(None, spec.db, spec.name, valid_txns=(txns := ms.valid_txns()))
    root = ctx.location(spec, None)
    fs = root.filesystem
    listed = list_partition_dirs(root.path, list(spec.partition_column_names), fs)
    most, worst, leftovers = 0, "", 0
    for part, path in listed:
        state = acid_state(path, reader, txns, filesystem=fs, insert_only=spec.is_insert_only)
        if len(state.deltas) > most:
            most, worst = len(state.deltas), part
        leftovers += len(state.obsolete) + len(state.aborted)
    threshold = limits.delta_num_threshold
    if threshold is None:
        threshold = ctx.conf.delta_num_threshold_for(spec.properties)
    deltas = Finding(
        "deltas_below_threshold",
        most <= threshold,
        f"at most {most} current delta(s) per partition"
        + (f" ({worst})" if worst else "")
        + f"; threshold {threshold}",
        {"max_deltas": most, "delta_threshold": threshold, "partitions": len(listed)},
    )

    opened = [r["Started Time"] for r in ms.show_transactions() if r["Transaction State"] == "OPEN"]
    age = (now_ms - min(opened)) / 1000 if opened else 0.0
    young = Finding(
        "open_transactions_young",
        age <= limits.max_open_txn_age_s,
        f"oldest open transaction {age:.0f}s old (limit {limits.max_open_txn_age_s:g}s)"
        if opened
        else "no open transaction",
        {"oldest_open_txn_age_s": round(age, 3), "open_txns": len(opened)},
    )

    mine = [
        c
        for c in ms.queued_compactions(
            CompactionState.INITIATED, CompactionState.WORKING, CompactionState.READY_FOR_CLEANING
        )
        if (c.db, c.table) == (spec.db, spec.name)
    ]
    queued = [c for c in mine if c.state != CompactionState.READY_FOR_CLEANING]
    waited = max(((now_ms - (c.enqueue_time or now_ms)) / 1000 for c in queued), default=0.0)
    backlog = Finding(
        "compaction_backlog",
        waited <= limits.max_compaction_wait_s,
        f"{len(queued)} compaction(s) queued, the oldest waiting {waited:.0f}s "
        f"(limit {limits.max_compaction_wait_s:g}s)",
        {"compactions_queued": len(queued), "oldest_queued_s": round(waited, 3)},
    )

    ready = [c for c in mine if c.state == CompactionState.READY_FOR_CLEANING]
    stale = max(((now_ms - (c.commit_time or c.end or now_ms)) / 1000 for c in ready), default=0.0)
    cleaner = Finding(
        "cleaner_backlog",
        stale <= limits.max_clean_wait_s,
        f"{len(ready)} compaction(s) ready for cleaning, the oldest waiting {stale:.0f}s "
        f"(limit {limits.max_clean_wait_s:g}s); {leftovers} obsolete or aborted path(s) on disk",
        {
            "ready_for_cleaning": len(ready),
            "oldest_ready_s": round(stale, 3),
            "obsolete_paths": leftovers,
        },
    )
    return [deltas, young, backlog, cleaner]


__all__ = ["UPKEEP_CHECKS", "UpkeepLimits", "table_upkeep"]
