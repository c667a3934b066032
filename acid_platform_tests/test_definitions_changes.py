"""The example platform's change-feed consumer: the ``acid_store_changes`` sensor hands out
each new window of ``retail.stores``' write ids once, and its run appends the window's changes to
``retail.store_changes`` exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    RunRequest,
    SensorResult,
    instance_for_test,
)

from acid_platform import Warehouse
from acid_platform_example.data import STORE_CHANGES, STORE_CHANGES_SENSOR, STORES
from acid_platform_tests.example import example_defs
from acid_platform_tests.platform_sensors import platform_tick


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


def tick(platform: Definitions, instance: DagsterInstance, cursor: str | None) -> SensorResult:
    return platform_tick(platform, instance, STORE_CHANGES_SENSOR, cursor)


def merge_stores(platform: Definitions, instance: DagsterInstance, day: str) -> None:
    """Materialize retail.stores from the store feed of ``day`` (one MERGE)."""
    config = {"ops": {"retail__stores": {"config": {"as_of": day}}}}
    job = platform.resolve_implicit_global_asset_job_def()
    assert job.execute_in_process(
        run_config=config, instance=instance, asset_selection=[STORES]
    ).success


def consume(platform: Definitions, instance: DagsterInstance, request: RunRequest) -> None:
    """Run what the sensor requested: the store change log over the request's window."""
    job = platform.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        run_config=request.run_config,
        instance=instance,
        asset_selection=[STORE_CHANGES],
        tags=request.tags,
    )
    assert result.success


def changes(wh: Warehouse, name: str) -> list[tuple[Any, ...]]:
    """(write id, change type, store id, sqft) of a change feed or of the change log."""
    rows = (
        wh.table(name).changes(0, key="store_id").to_arrow()
        if name == "retail.stores"
        else wh.table(name).scan().to_arrow()
    ).to_pylist()
    return sorted((r["_write_id"], r["_change_type"], r["store_id"], r["sqft"]) for r in rows)


@pytest.mark.slow
def test_the_store_dimensions_changes_land_in_its_change_log_once(
    tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = example_defs(monkeypatch, tmp_path / "wh")
    sensor = platform.resolve_sensor_def(STORE_CHANGES_SENSOR)
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    before = tick(platform, instance, None)  # no warehouse yet: the sensor skips
    assert not before.run_requests and before.skip_reason is not None

    merge_stores(platform, instance, "2024-01-02")  # write id 1: six stores
    merge_stores(platform, instance, "2024-01-03")  # write id 2: one closed, two changed
    first = tick(platform, instance, before.cursor)
    (request,) = [r for r in first.run_requests or [] if isinstance(r, RunRequest)]
    with Warehouse.open(str(tmp_path / "wh"), create=False) as wh:
        at = wh.table("retail.stores").incarnation
    assert request.run_key == f"retail.stores@{at}:0-2"
    consume(platform, instance, request)
    consume(platform, instance, request)  # the run re-executed: nothing appended twice

    wh = Warehouse.open(str(tmp_path / "wh"), create=False)
    try:
        log = changes(wh, "retail.store_changes")
        assert log == changes(wh, "retail.stores")
        kinds = {k for _, k, _, _ in log}
        assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}
        assert [s.key for s in wh.table("retail.store_changes").committed_sources()] == [
            f"changes:retail.stores@{at}:0-2"
        ]
    finally:
        wh.close()
    again = tick(platform, instance, first.cursor)  # nothing new: nothing requested
    assert not again.run_requests and again.cursor == first.cursor
