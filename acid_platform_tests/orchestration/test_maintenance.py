"""The maintenance before the first write: on a new deployment (docker-compose.yml) the daemon
ticks the sensors and the cleaner schedule before any run has created the warehouse. Each tick
skips, saying why, and creates nothing (a tick that raised failed every 30 s until then)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterInstance,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
)

from acid_platform import Warehouse
from acid_platform.orchestration import AcidWarehouseResource, maintenance_definitions
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.orchestration.conftest import TEST_CONF


@pytest.fixture(params=["sqlite", "postgresql"])
def metastore_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    """No metastore URL (SQLite inside the warehouse), or an empty PostgreSQL namespace."""
    if request.param == "sqlite":
        yield None
        return
    url, cleanup = fresh_namespace("postgresql", tmp_path)
    try:
        yield url
    finally:
        cleanup()


def test_ticks_skip_until_the_warehouse_exists(
    tmp_path: Path, metastore_url: str | None, instance: DagsterInstance
) -> None:
    root = tmp_path / "wh"
    resource = AcidWarehouseResource(
        warehouse=str(root), metastore_url=metastore_url, conf=TEST_CONF
    )
    defs = maintenance_definitions(resource=resource)
    resources = {"acid_warehouse": resource}
    sensors = [
        defs.resolve_sensor_def(n) for n in ("acid_compaction_sensor", "acid_housekeeping_sensor")
    ]
    schedule = defs.resolve_schedule_def("acid_cleaner_schedule")

    def ticks() -> tuple[Any, Any, Any]:
        results = []
        for sensor in sensors:
            with build_sensor_context(instance=instance, resources=resources) as context:
                results.append(sensor(context))
        with build_schedule_context(instance=instance, resources=resources) as context:
            return results[0], results[1], schedule.evaluate_tick(context)

    compaction, housekeeping, cleaner = ticks()
    absent = f"no warehouse at {root} yet"
    for skip in (compaction, housekeeping):
        assert isinstance(skip, SkipReason) and absent in str(skip.skip_message)
    assert not cleaner.run_requests and absent in str(cleaner.skip_message)
    assert not root.exists() and not resource.exists()

    with Warehouse.open(str(root), metastore_url, create=True) as wh:
        wh.create_table("t", [("id", "int")])
    assert resource.exists()
    compaction, housekeeping, cleaner = ticks()
    assert isinstance(compaction, SensorResult) and "initiator queued 0" in str(
        compaction.skip_reason
    )
    assert isinstance(housekeeping, SkipReason) and "silent" in str(housekeeping.skip_message)
    assert len(cleaner.run_requests or []) == 1
