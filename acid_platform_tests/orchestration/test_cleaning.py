"""The cleaner schedule and the housekeeping sensor on a real warehouse and Dagster instance;
the housekeeper reaps the transaction of a client killed with kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    RunRequest,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
)

from acid_platform import Warehouse
from acid_platform.orchestration import (
    AcidWarehouseResource,
    cleaner_job,
    cleaner_schedule,
    compaction_sensor,
    housekeeping_job,
    housekeeping_sensor,
    maintenance_definitions,
)
from acid_platform_tests.helpers import acid_dirs, fresh_namespace
from acid_platform_tests.orchestration.conftest import insert_deltas

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_maintenance_is_loadable_and_running_by_default(resource: AcidWarehouseResource) -> None:
    defs = maintenance_definitions(cleaner_cron="*/10 * * * *", resource=resource)
    Definitions.validate_loadable(defs)
    assert {s.name: s.default_status for s in defs.sensors or []} == {
        "acid_compaction_sensor": DefaultSensorStatus.RUNNING,
        "acid_housekeeping_sensor": DefaultSensorStatus.RUNNING,
    }
    schedule = defs.resolve_schedule_def("acid_cleaner_schedule")
    assert schedule.default_status == DefaultScheduleStatus.RUNNING
    assert schedule.cron_schedule == "*/10 * * * *"


@pytest.fixture(params=["sqlite", "postgresql"])
def metastore_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | None]:
    """No metastore URL (SQLite inside the warehouse), or an empty PostgreSQL namespace (the
    compose topology's metastore before its first write)."""
    if request.param == "sqlite":
        yield None
        return
    url, cleanup = fresh_namespace("postgresql", tmp_path)
    try:
        yield url
    finally:
        cleanup()


def test_the_maintenance_skips_its_ticks_until_the_warehouse_exists(
    tmp_path: Path, instance: DagsterInstance, metastore_url: str | None
) -> None:
    """A platform's sensors and schedule run before its first write creates the warehouse
    (``dagster dev`` on a fresh checkout, a new compose deployment): their ticks skip, saying
    why, instead of failing."""
    root = str(tmp_path / "wh")
    resource = AcidWarehouseResource(
        warehouse=root, metastore_url=metastore_url, conf={"hive.compactor.check.interval": "0"}
    )

    def ticks() -> list[str | None]:
        resources = {"acid_warehouse": resource}
        with build_sensor_context(instance=instance, resources=resources) as context:
            compaction = compaction_sensor()(context)
        with build_sensor_context(instance=instance, resources=resources) as context:
            housekeeping = housekeeping_sensor()(context)
        with build_schedule_context(instance, resources=resources) as context:
            cleaner = cleaner_schedule().evaluate_tick(context)
        assert isinstance(compaction, SensorResult) and not compaction.run_requests
        assert isinstance(housekeeping, SkipReason)
        skipped = None if cleaner.run_requests else cleaner.skip_message
        return [
            compaction.skip_reason and compaction.skip_reason.skip_message,
            housekeeping.skip_message,
            skipped,
        ]

    assert ticks() == [f"no warehouse at {root} yet (the first write creates it)"] * 3
    assert not os.path.exists(root)  # nothing created
    Warehouse.open(root, metastore_url).close()
    compaction, housekeeping, cleaner = ticks()
    assert compaction is not None and compaction.startswith("initiator ran now and queued 0")
    assert housekeeping == "no transaction or lock silent for 300s" and cleaner is None


def test_cleaner_schedule_runs_the_cleaner_and_reports_what_it_removed(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    t = wh.create_table("t", [("id", "int"), ("name", "string")])
    insert_deltas(wh, "t", 11)
    wh.compact("t", kind="major", wait=True)
    table_dir = os.path.join(wh.root, "t")
    assert len(acid_dirs(table_dir)) == 12

    with build_schedule_context(instance, resources={"acid_warehouse": resource}) as context:
        data = cleaner_schedule("*/10 * * * *").evaluate_tick(context)
    (request,) = data.run_requests or []
    result = cleaner_job.execute_in_process(
        run_config=request.run_config,
        resources={"acid_warehouse": resource},
        instance=instance,
        tags=request.tags,
    )

    assert [d[:13] for d in acid_dirs(table_dir)] == ["base_0000011_"]
    (output,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    metadata = output.step_output_data.metadata  # type: ignore[union-attr]
    assert metadata["removed_paths"].value == 11
    assert len(metadata["removed"].value) == 11  # type: ignore[arg-type]
    assert instance.get_run_by_id(result.run_id).tags["acid/removed_paths"] == "11"  # type: ignore[union-attr]
    assert len(t.scan().to_arrow().to_pylist()) == 11


def test_housekeeping_reaps_the_transaction_of_a_killed_client(
    wh: Warehouse, instance: DagsterInstance
) -> None:
    wh.create_table("t", [("id", "int"), ("name", "string")])
    timeout = "2"  # hive.txn.timeout, seconds
    resource = AcidWarehouseResource(warehouse=wh.root, conf={"hive.txn.timeout": timeout})
    client = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acid_platform_tests.orchestration.procs",
            "hold-lock",
            wh.root,
            "t",
            timeout,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    try:
        line = client.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("ready "), line
        txn_id = int(line.split()[1])
        assert [r["Transaction ID"] for r in wh.metastore.show_locks()] == [txn_id]
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()

    sensor = housekeeping_sensor()
    runs = []
    deadline = time.monotonic() + 60
    while txn_id in open_txns(wh):
        assert time.monotonic() < deadline, "the killed client's txn was never reaped"
        with build_sensor_context(
            instance=instance, resources={"acid_warehouse": resource}
        ) as context:
            request = sensor(context)
        if isinstance(request, RunRequest):
            runs.append(
                housekeeping_job.execute_in_process(
                    resources={"acid_warehouse": resource}, instance=instance, tags=request.tags
                )
            )
        else:
            time.sleep(0.1)

    assert wh.metastore.show_locks() == []
    (output,) = [e for e in runs[-1].all_events if e.event_type_value == "STEP_OUTPUT"]
    assert output.step_output_data.metadata["aborted_txns"].value == [txn_id]  # type: ignore[union-attr]
    wh.conf["acid.lock.wait.timeout.s"] = "0"
    assert wh.table("t").insert([{"id": 1, "name": "a"}]).rows_inserted == 1  # the table is free


def open_txns(wh: Warehouse) -> list[int]:
    return [
        r["Transaction ID"]
        for r in wh.metastore.show_transactions()
        if r["Transaction State"] == "OPEN"
    ]
