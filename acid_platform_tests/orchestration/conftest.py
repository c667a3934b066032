"""Fixtures of the Dagster tests: a real warehouse on disk, the resources on it and a real
(temporary) Dagster instance."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    RunRequest,
    SensorDefinition,
    SensorResult,
    build_sensor_context,
    instance_for_test,
)

from acid_platform import Warehouse
from acid_platform.orchestration import AcidReader, AcidTableIOManager, AcidWarehouseResource
from acid_platform_tests.helpers import warehouse_fixture

#: Settings of the tests: the initiator runs on every tick.
TEST_CONF = {"hive.compactor.check.interval": "0"}


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


#: A fresh warehouse (SQLite metastore inside it).
wh = warehouse_fixture()


@pytest.fixture
def resource(wh: Warehouse) -> AcidWarehouseResource:
    return AcidWarehouseResource(warehouse=wh.root, conf=TEST_CONF)


@pytest.fixture
def resources(resource: AcidWarehouseResource) -> dict[str, object]:
    """``acid_warehouse``, ``io_manager`` and ``reader`` for ``materialize``."""
    return {
        "acid_warehouse": resource,
        "io_manager": AcidTableIOManager(acid_warehouse=resource),
        "reader": AcidReader(acid_warehouse=resource),
    }


def insert_deltas(wh: Warehouse, name: str, count: int, partition: str | None = None) -> None:
    """``count`` single-row INSERT statements: ``count`` deltas."""
    table = wh.table(name)
    for i in range(count):
        row: dict[str, object] = {"id": i, "name": f"n{i}"}
        if partition is not None:
            row["ds"] = partition
        table.insert([row])


def latest_metadata(instance: DagsterInstance, key: str) -> dict[str, Any]:
    """The metadata of the latest materialization of asset ``key`` (``a/b``), as values."""
    event = instance.get_latest_materialization_event(AssetKey.from_user_string(key))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def tick(
    instance: DagsterInstance,
    resource: AcidWarehouseResource,
    sensor: SensorDefinition,
    cursor: str | None,
) -> SensorResult:
    """One evaluation of ``sensor`` from ``cursor``, with ``resource`` as ``acid_warehouse``."""
    with build_sensor_context(
        instance=instance, cursor=cursor, resources={"acid_warehouse": resource}
    ) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult)
    return result


def requests(result: SensorResult) -> list[RunRequest]:
    """The run requests of a tick."""
    return [r for r in result.run_requests or [] if isinstance(r, RunRequest)]


def skipped(result: SensorResult) -> str:
    """A tick's skip reason ("" if it did not skip)."""
    return result.skip_reason.skip_message or "" if result.skip_reason else ""


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    """An empty landing directory."""
    path = tmp_path / "landing"
    path.mkdir()
    return path
