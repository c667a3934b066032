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

Each check spec carries the table and its warehouse's resource key as metadata
(:data:`TABLE_META`, :data:`WAREHOUSE_META`): the maintenance finds a table's asset through
them (:func:`table_assets`) to report compactions and cleaning on it and to re-evaluate its
health checks (:func:`upkeep_evaluations`) after each.

>>> from dagster import AssetKey
>>> [c.node_def.name for c in acid_table_checks(AssetKey(["sales", "orders"]), "sales.orders")]
['acid_consistency__sales__orders', 'acid_files__sales__orders', 'acid_health__sales__orders']
"""

# no `from __future__ import annotations`: Dagster reads the annotations of the check functions

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    multi_asset_check,
)

from acid_platform.compaction.upkeep import UPKEEP_CHECKS, UpkeepLimits, table_upkeep
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    maintenance_warehouse,
    warehouse_resource,
)
from acid_platform.table.fsck import FILE_CHECK, fsck_findings
from acid_platform.table.verify import CHECKS, Finding, verify_table
from acid_platform.table.warehouse import TableWarehouse

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


#: Check-spec metadata: the ``db.table`` a check reads, and its warehouse's resource key.
TABLE_META = "acid/table"
WAREHOUSE_META = "acid/warehouse"


@dataclass(frozen=True)
class TableAsset:
    """An ACID table that is an asset of the code location: its key, ``db.table`` and the
    resource key of its warehouse."""

    key: AssetKey
    table: str
    resource_key: str = DEFAULT_RESOURCE_KEY


def acid_table_checks(
    asset_key: AssetKey | str | Sequence[str],
    table_name: str,
    *,
    limits: UpkeepLimits | None = None,
    resource_key: str = DEFAULT_RESOURCE_KEY,
) -> list[AssetChecksDefinition]:
    """The consistency and files (blocking) and health (WARN) checks of the ACID table
    ``table_name`` (``db.table``) materialized as ``asset_key``, on the warehouse resource
    ``resource_key``."""
    key = AssetKey.from_coercible(asset_key)
    health_limits = limits or UpkeepLimits()
    target = TableAsset(key, table_name.lower(), resource_key)
    return [
        _checks(
            target,
            "consistency",
            CHECKS,
            f"Consistency of ACID table {table_name} under one snapshot.",
            lambda wh: verify_table(wh, table_name),
            AssetCheckSeverity.ERROR,
        ),
        _checks(
            target,
            "files",
            (FILE_CHECK,),
            f"Files of ACID table {table_name} against what their commits recorded.",
            lambda wh: fsck_findings(wh, table_name),
            AssetCheckSeverity.ERROR,
        ),
        _checks(
            target,
            "health",
            UPKEEP_CHECKS,
            f"Upkeep of ACID table {table_name}: deltas, open transactions, backlogs.",
            lambda wh: table_upkeep(wh, table_name, health_limits),
            AssetCheckSeverity.WARN,
        ),
    ]


def _checks(
    target: TableAsset,
    kind: str,
    names: Sequence[str],
    description: str,
    evaluate: Callable[[TableWarehouse], list[Finding]],
    severity: AssetCheckSeverity,
) -> AssetChecksDefinition:
    """One check definition answering ``names`` from ``evaluate``; ERROR ones block."""
    blocking = severity == AssetCheckSeverity.ERROR
    key, resource_key = target.key, target.resource_key
    meta = {TABLE_META: target.table, WAREHOUSE_META: resource_key}

    @multi_asset_check(
        name=f"acid_{kind}__{key.to_python_identifier()}",
        specs=[
            AssetCheckSpec(
                n, asset=key, blocking=blocking, description=_DESCRIPTIONS[n], metadata=meta
            )
            for n in names
        ],
        description=description,
        required_resource_keys={resource_key},
    )
    def _evaluate(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        with maintenance_warehouse(warehouse_resource(context, resource_key)) as wh:
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


def table_assets(
    check_defs: Iterable[AssetChecksDefinition], resource_key: str
) -> list[TableAsset]:
    """The ACID tables of warehouse ``resource_key`` that have checks among ``check_defs`` (a
    code location's: ``context.repository_def.asset_checks_defs_by_key.values()``)."""
    found: dict[tuple[AssetKey, str], TableAsset] = {}
    for checks in check_defs:
        for spec in checks.check_specs:
            meta = spec.metadata or {}
            table, warehouse = _text(meta.get(TABLE_META)), _text(meta.get(WAREHOUSE_META))
            if table and warehouse == resource_key:
                found[(spec.asset_key, table)] = TableAsset(spec.asset_key, table, warehouse)
    return sorted(found.values(), key=lambda t: (t.table, t.key.to_user_string()))


def repository_tables(context: Any, resource_key: str) -> list[TableAsset]:
    """The ACID table assets (with checks) of warehouse ``resource_key`` in the code location
    a sensor or schedule ``context`` evaluates in (none when it has no repository)."""
    try:
        repository = context.repository_def
    except Exception:  # noqa: BLE001 - a context built without definitions has none
        return []
    if repository is None:
        return []
    return table_assets(repository.asset_checks_defs_by_key.values(), resource_key)


def upkeep_evaluations(
    warehouse: TableWarehouse, target: TableAsset, limits: UpkeepLimits | None = None
) -> list[AssetCheckEvaluation]:
    """The table's health checks evaluated now, as events a maintenance run logs on the table's
    asset (so a WARN turns to PASS after the compaction or cleaning that fixed it)."""
    return [
        AssetCheckEvaluation(
            asset_key=target.key,
            check_name=f.check,
            passed=f.passed,
            severity=AssetCheckSeverity.WARN,
            description=f.description,
            metadata=f.metadata,
        )
        for f in table_upkeep(warehouse, target.table, limits)
    ]


def _text(value: Any) -> str:
    """A metadata value's text (check-spec metadata may come back wrapped)."""
    value = getattr(value, "value", value)
    return value if isinstance(value, str) else ""


__all__ = [
    "TABLE_META",
    "WAREHOUSE_META",
    "TableAsset",
    "acid_table_checks",
    "repository_tables",
    "table_assets",
    "upkeep_evaluations",
]
