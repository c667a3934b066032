"""The example platform's ingest: the ``acid_returns_ingest`` sensor watches the landing
directory (``ACID_LANDING``, default ``landing`` in ``DAGSTER_HOME``), RUNNING by default; a day's returns
file landing there is loaded into ``retail.returns`` once, reported as the asset's
materialization."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.csv as pcsv
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
from acid_platform.table.verify import verify_table
from acid_platform_example.data import RETURNS, RETURNS_SENSOR, RETURNS_TABLE, returns_of
from acid_platform_tests.example import example_defs
from acid_platform_tests.platform_sensors import platform_tick


@pytest.fixture
def instance() -> Any:
    with instance_for_test() as inst:
        yield inst


def tick(platform: Definitions, instance: DagsterInstance, cursor: str | None) -> SensorResult:
    return platform_tick(platform, instance, RETURNS_SENSOR, cursor)


def test_the_landing_directory_defaults_into_dagster_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = example_defs(monkeypatch, tmp_path / "wh", DAGSTER_HOME=str(tmp_path))
    assert f"{tmp_path / 'landing'} " in (home.resolve_sensor_def(RETURNS_SENSOR).description or "")
    told = example_defs(
        monkeypatch, "/w", ACID_LANDING="s3://in/returns", ACID_INGEST_SENSOR_INTERVAL="7"
    )
    sensor = told.resolve_sensor_def(RETURNS_SENSOR)
    assert "s3://in/returns " in (sensor.description or "")
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 7


def test_a_returns_file_landing_is_loaded_once(
    tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing = tmp_path / "landing"
    platform = example_defs(monkeypatch, tmp_path / "wh", ACID_LANDING=str(landing))
    skipped = tick(platform, instance, None)  # no landing directory yet: the sensor skips
    assert not skipped.run_requests and skipped.skip_reason is not None
    landing.mkdir()
    day = returns_of(dt.date(2024, 1, 2))
    pcsv.write_csv(day, landing / "returns-2024-01-02.csv")

    seen = tick(platform, instance, skipped.cursor)  # seen once: maybe still being written
    assert not seen.run_requests and "1 waiting to be unchanged" in str(seen.skip_reason)
    first = tick(platform, instance, seen.cursor)  # unchanged across two listings: requested
    (request,) = first.run_requests or []
    assert isinstance(request, RunRequest)
    job = platform.resolve_job_def(request.job_name or "acid_ingest")
    for _ in range(2):  # the run, then the same run again: a no-op
        assert job.execute_in_process(
            run_config=request.run_config, instance=instance, tags=request.tags
        ).success
    assert not tick(platform, instance, first.cursor).run_requests

    with Warehouse.open(str(tmp_path / "wh"), create=False) as wh:
        loaded = wh.table(RETURNS_TABLE).scan().to_arrow().to_pylist()
        assert sorted(r["return_id"] for r in loaded) == sorted(day.column("return_id").to_pylist())
        assert wh.list_partitions(RETURNS_TABLE) == ["ds=2024-01-02"]
        assert all(f.passed for f in verify_table(wh, RETURNS_TABLE))
    event = instance.get_latest_materialization_event(RETURNS)
    assert event is not None and event.asset_materialization is not None
    assert event.asset_materialization.metadata["rows"].value == day.num_rows
