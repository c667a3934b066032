"""The example platform's change-feed consumer: ``retail.store_changes``, the change log of the
store dimension ``retail.stores`` (MERGEd daily: stores updated, inserted, deleted).

The ``acid_store_changes`` sensor (:func:`~acid_platform.orchestration.changes.change_feed_sensor`)
watches ``retail.stores``' newest final write id and requests one run of this asset per new
window of write ids; the asset appends the window's changes — ``_change_type`` (updates paired
on ``store_id``) and ``_write_id`` beside the store's columns — to ``retail.store_changes``,
the window recorded as the insert's source, so each change lands there exactly once.
"""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

from dagster import AssetKey, MaterializeResult, SensorDefinition, asset

from acid_platform.orchestration.changes import (
    ChangeWindow,
    append_changes,
    change_feed_sensor,
    window_metadata,
)
from acid_platform.orchestration.example import STORES, TABLE
from acid_platform.orchestration.metadata import statement_metadata
from acid_platform.orchestration.resources import AcidWarehouseResource

STORE_CHANGES = AssetKey(["retail", "store_changes"])
STORE_CHANGES_TABLE = "retail.store_changes"
STORE_CHANGES_SENSOR = "acid_store_changes"


@asset(
    key=STORE_CHANGES,
    deps=[STORES],
    group_name="dimensions",
    kinds={"hive", "orc"},
    metadata={TABLE: True},
    description="The change log of retail.stores: each change (updates paired on store_id) "
    "with its write id, appended window by window by the acid_store_changes sensor, once.",
)
def store_changes(config: ChangeWindow, acid_warehouse: AcidWarehouseResource) -> MaterializeResult:
    changes, metrics = append_changes(acid_warehouse, config, STORE_CHANGES_TABLE)
    metadata = {**window_metadata(config, changes), "appended": metrics is not None}
    if metrics is not None:
        metadata |= statement_metadata([metrics])
    return MaterializeResult(metadata=metadata)


def store_changes_sensor(minimum_interval_seconds: int = 30) -> SensorDefinition:
    """The sensor feeding :func:`store_changes` from ``retail.stores``' change feed."""
    return change_feed_sensor(
        "retail.stores",
        target=store_changes,
        name=STORE_CHANGES_SENSOR,
        key=["store_id"],
        minimum_interval_seconds=minimum_interval_seconds,
    )


__all__ = [
    "STORE_CHANGES",
    "STORE_CHANGES_SENSOR",
    "STORE_CHANGES_TABLE",
    "store_changes",
    "store_changes_sensor",
]
