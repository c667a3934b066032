"""A warehouse as Dagster definitions, in one call: the resources, the maintenance and the checks
of every ACID table asset. The components (:mod:`.components`) are YAML over these functions.

::

    from acid_platform.orchestration import AcidWarehouseResource, acid_definitions

    defs = acid_definitions(
        assets=[orders, daily_sales],
        warehouse=AcidWarehouseResource(warehouse="/data/wh", metastore_url=EnvVar("ACID_METASTORE_URL")),
    )

* :func:`warehouse_definitions` — the resources (warehouse, IO manager, reader) under keys of
  your choice and the maintenance (compaction sensor and job, cleaner schedule, housekeeping
  sensor), named after the warehouse's resource key, so a code location can hold several;
* :func:`with_acid_checks` — the consistency, files and health checks of every ACID table
  asset of a :class:`~dagster.Definitions` that has none yet: an asset written by an
  :class:`~.io_manager.AcidTableIOManager` (its table by the IO manager's own rule,
  :func:`~.connection.table_for_asset`), or one whose metadata names its table
  (``acid/table``: ``db.table``, and ``acid/warehouse``: the resource key);
* :func:`acid_definitions` — both, around your assets.
"""

# no `from __future__ import annotations`: Dagster reads annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dagster import AssetKey, AssetsDefinition, Definitions, MaterializeResult

from acid_platform.compaction import ServiceConf
from acid_platform.compaction.upkeep import UpkeepLimits
from acid_platform.orchestration.checks import (
    TABLE_META,
    WAREHOUSE_META,
    TableAsset,
    acid_table_checks,
)
from acid_platform.orchestration.connection import table_for_asset
from acid_platform.orchestration.io_manager import AcidTableIOManager
from acid_platform.orchestration.maintenance import maintenance_definitions
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidReader,
    AcidWarehouseResource,
    refuse_plain_secrets,
)

#: About how often Dagster's daemon evaluates a sensor at most.
MIN_SENSOR_INTERVAL_S = 5


def housekeeping_interval(resource: AcidWarehouseResource) -> int:
    """Seconds between the housekeeping sensor's ticks: half ``hive.txn.timeout``, between 5
    and 30 (Hive's housekeeper runs every half time-out)."""
    half = ServiceConf.from_conf(resource.conf).txn_timeout_s / 2
    return int(min(max(half, MIN_SENSOR_INTERVAL_S), 30))


def warehouse_definitions(
    resource: AcidWarehouseResource,
    *,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    io_manager_key: str | None = "io_manager",
    reader_key: str | None = "reader",
    io_manager: AcidTableIOManager | None = None,
    maintenance: bool = True,
    cleaner_cron: str = "*/5 * * * *",
    compaction_interval_s: int = 30,
    housekeeping_interval_s: int | None = None,
) -> Definitions:
    """The warehouse ``resource`` under ``resource_key``, its IO manager under
    ``io_manager_key`` and its reader under ``reader_key`` (``None``: left out), and, with
    ``maintenance``, the jobs, sensors and schedule that keep it compacted and clean (names
    derived from ``resource_key``; see :func:`~.maintenance.maintenance_definitions`). A secret
    in plain text in the resource's config is refused (:func:`~.resources.refuse_plain_secrets`:
    give it as an ``EnvVar``)."""
    refuse_plain_secrets(resource)
    resources: dict[str, Any] = {resource_key: resource}
    if io_manager_key:
        resources[io_manager_key] = io_manager or AcidTableIOManager(acid_warehouse=resource)
    if reader_key:
        resources[reader_key] = AcidReader(acid_warehouse=resource)
    if not maintenance:
        return Definitions(resources=resources)
    return Definitions.merge(
        Definitions(resources=resources),
        maintenance_definitions(
            resource_key=resource_key,
            cleaner_cron=cleaner_cron,
            compaction_interval_s=compaction_interval_s,
            housekeeping_interval_s=housekeeping_interval_s or housekeeping_interval(resource),
        ),
    )


def acid_tables(
    assets: Iterable[Any], resources: Mapping[str, Any] | None = None
) -> list[TableAsset]:
    """The ACID table assets among ``assets`` (what a :class:`~dagster.Definitions` holds),
    with the ``resources`` that bind their IO managers (see module docs)."""
    resources = resources or {}
    found: dict[AssetKey, TableAsset] = {}
    for a in assets:
        if not isinstance(a, AssetsDefinition) or not a.is_executable:
            continue
        for key in a.keys:
            table = _table_asset(a, key, resources)
            if table is not None:
                found[key] = table
    return list(found.values())


def with_acid_checks(defs: Definitions, *, limits: UpkeepLimits | None = None) -> Definitions:
    """``defs`` with the checks (:func:`~.checks.acid_table_checks`) of every ACID table asset
    that has none yet."""
    checked = {
        spec.asset_key
        for checks in [*(defs.asset_checks or ()), *(defs.assets or ())]
        if isinstance(checks, AssetsDefinition)  # an AssetChecksDefinition is one too
        for spec in checks.check_specs
        if (spec.metadata or {}).get(TABLE_META)
    }
    new = [
        check
        for t in acid_tables(defs.assets or (), defs.resources or {})
        if t.key not in checked
        for check in acid_table_checks(t.key, t.table, limits=limits, resource_key=t.resource_key)
    ]
    return Definitions.merge(defs, Definitions(asset_checks=new)) if new else defs


def acid_definitions(
    *,
    assets: Sequence[Any],
    warehouse: AcidWarehouseResource,
    resource_key: str = DEFAULT_RESOURCE_KEY,
    limits: UpkeepLimits | None = None,
    **options: Any,
) -> Definitions:
    """Your ``assets`` on the ``warehouse``: its resources and maintenance
    (:func:`warehouse_definitions`, ``options`` go there) and the checks of every ACID table
    asset (:func:`with_acid_checks`)."""
    return with_acid_checks(
        Definitions.merge(
            Definitions(assets=assets),
            warehouse_definitions(warehouse, resource_key=resource_key, **options),
        ),
        limits=limits,
    )


def _table_asset(
    a: AssetsDefinition, key: AssetKey, resources: Mapping[str, Any]
) -> TableAsset | None:
    metadata = a.metadata_by_key.get(key) or {}
    named = metadata.get(TABLE_META)
    if isinstance(named, str) and named:
        warehouse = metadata.get(WAREHOUSE_META)
        return TableAsset(key, named.lower(), warehouse or DEFAULT_RESOURCE_KEY)
    io_manager = resources.get(a.get_io_manager_key_for_asset_key(key))
    if not isinstance(io_manager, AcidTableIOManager) or not _returns_value(a):
        return None
    table = table_for_asset(key, metadata, io_manager.schema_)
    return TableAsset(key, table, _key_of(io_manager.acid_warehouse, resources))


def _returns_value(a: AssetsDefinition) -> bool:
    """Whether the asset's value goes to its IO manager: not when its type is Nothing or its
    function is annotated to return a ``MaterializeResult`` or ``None`` (it writes by itself)."""
    outputs = a.node_def.output_defs
    if all(o.dagster_type.is_nothing for o in outputs):
        return False
    compute = getattr(a.node_def, "compute_fn", None)
    fn = getattr(compute, "decorated_fn", compute)
    try:
        returned = inspect.signature(fn).return_annotation if fn is not None else None
    except (TypeError, ValueError):
        return True
    names = {"MaterializeResult", "None", "NoneType"}
    return not (
        returned is None
        or returned is MaterializeResult
        or (isinstance(returned, str) and returned in names)
    )


def _key_of(resource: Any, resources: Mapping[str, Any]) -> str:
    """The key ``resource`` is bound under (the IO manager's warehouse)."""
    for key, value in resources.items():
        if value is resource:
            return key
    for key, value in resources.items():
        if isinstance(value, AcidWarehouseResource) and value == resource:
            return key
    return DEFAULT_RESOURCE_KEY


__all__ = [
    "MIN_SENSOR_INTERVAL_S",
    "acid_definitions",
    "acid_tables",
    "housekeeping_interval",
    "warehouse_definitions",
    "with_acid_checks",
]
