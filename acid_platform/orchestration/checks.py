"""Asset checks of an ACID table: :func:`acid_table_checks`.

Three check definitions per table asset:

* **consistency** — six *blocking* checks (ERROR severity; a failure stops downstream assets of
  the run): no duplicate ROW__ID, every delete event names an existing row, no aborted or
  uncommitted directory visible, ``_orc_acid_version`` / ``hive.acid.version`` present, row
  count equals inserts minus deletes from the files' acid stats, schema equals the catalog's
  (:mod:`acid_platform.table.verify`, all under one snapshot);
* **files** — one *blocking* check: every file a read lists is the one its commit recorded
  (nothing missing, stray or resized; :mod:`acid_platform.table.fsck`, which also repairs:
  ``acid fsck --repair``);
* **health** — four non-blocking WARN checks: deltas above the compaction threshold, the oldest
  open transaction, the compaction backlog and the cleaner backlog
  (:mod:`acid_platform.compaction.upkeep`, read from the table's health report,
  :mod:`acid_platform.compaction.health`, the one ``SHOW TABLE STATUS`` prints).

>>> from dagster import AssetKey
>>> [c.node_def.name for c in acid_table_checks(AssetKey(["sales", "orders"]), "sales.orders")]
['acid_consistency__sales__orders', 'acid_files__sales__orders', 'acid_health__sales__orders']
"""

# no `from __future__ import annotations`: Dagster reads the annotations of the check functions

from collections.abc import Callable, Iterator, Sequence

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    multi_asset_check,
)

from acid_platform.compaction.upkeep import UPKEEP_CHECKS, UpkeepLimits, table_upkeep
from acid_platform.orchestration.resources import AcidWarehouseResource
from acid_platform.table import TableWarehouse
from acid_platform.table.fsck import FILE_CHECK, fsck_findings
from acid_platform.table.verify import CHECKS, Finding, verify_table

_DESCRIPTIONS = {
    "unique_row_ids": "No ROW__ID is carried by two visible insert events.",
    "deletes_name_rows": "Every visible delete event names a row a visible insert wrote.",
    "no_uncommitted_visible": "No directory read belongs to an aborted or uncommitted txn.",
    "acid_version_present": "_orc_acid_version in each directory, hive.acid.version in each file.",
    "row_count_matches_stats": "Visible rows = inserts - deletes from the files' acid stats.",
    "schema_matches_catalog": "Each file's row columns are the catalog's.",
    FILE_CHECK: "Every file a read lists is the one its commit recorded (fsck).",
    "deltas_below_threshold": "Current deltas per partition within the compaction threshold.",
    "open_transactions_young": "The oldest open transaction is younger than the limit.",
    "compaction_backlog": "No compaction waits in the queue longer than the limit.",
    "cleaner_backlog": "No compaction waits for the cleaner longer than the limit.",
}


def acid_table_checks(
    asset_key: AssetKey | str | Sequence[str],
    table_name: str,
    *,
    limits: UpkeepLimits | None = None,
) -> list[AssetChecksDefinition]:
    """The consistency and files (blocking) and health (WARN) checks of the ACID table ``table_name``
    (``db.table``) materialized as ``asset_key``; they use the ``acid_warehouse`` resource."""
    key = AssetKey.from_coercible(asset_key)
    health_limits = limits or UpkeepLimits()
    return [
        _checks(
            key,
            "consistency",
            CHECKS,
            f"Consistency of ACID table {table_name} under one snapshot.",
            lambda wh: verify_table(wh, table_name),
            AssetCheckSeverity.ERROR,
        ),
        _checks(
            key,
            "files",
            (FILE_CHECK,),
            f"Files of ACID table {table_name} against what their commits recorded.",
            lambda wh: fsck_findings(wh, table_name),
            AssetCheckSeverity.ERROR,
        ),
        _checks(
            key,
            "health",
            UPKEEP_CHECKS,
            f"Upkeep of ACID table {table_name}: deltas, open transactions, backlogs.",
            lambda wh: table_upkeep(wh, table_name, health_limits),
            AssetCheckSeverity.WARN,
        ),
    ]


def _checks(
    key: AssetKey,
    kind: str,
    names: Sequence[str],
    description: str,
    evaluate: Callable[[TableWarehouse], list[Finding]],
    severity: AssetCheckSeverity,
) -> AssetChecksDefinition:
    """One check definition answering ``names`` from ``evaluate``; ERROR ones block."""
    blocking = severity == AssetCheckSeverity.ERROR

    @multi_asset_check(
        name=f"acid_{kind}__{key.to_python_identifier()}",
        specs=[
            AssetCheckSpec(n, asset=key, blocking=blocking, description=_DESCRIPTIONS[n])
            for n in names
        ],
        description=description,
    )
    def _evaluate(
        context: AssetCheckExecutionContext, acid_warehouse: AcidWarehouseResource
    ) -> Iterator[AssetCheckResult]:
        with acid_warehouse.open_warehouse() as wh:
            findings = evaluate(wh)
        for f in findings:
            if not f.passed:
                context.log.warning(f"{key.to_user_string()} {f.check}: {f.description}")
            yield AssetCheckResult(
                asset_key=key,
                check_name=f.check,
                passed=f.passed,
                severity=severity,
                description=f.description,
                metadata=f.metadata,
            )

    return _evaluate


__all__ = ["acid_table_checks"]
