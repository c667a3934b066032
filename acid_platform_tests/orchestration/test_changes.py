"""The change-feed sensor: windows of write ids handed out once each (the cursor keeps the last
write id), consumed by an asset exactly once (the window recorded as its insert's source)."""

# no `from __future__ import annotations`: Dagster reads the annotations of the asset and op

import json
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    MaterializeResult,
    RunRequest,
    SensorResult,
    asset,
    materialize,
)

from acid_platform import Warehouse
from acid_platform.errors import ChangeFeedIncarnationError
from acid_platform.orchestration import AcidWarehouseResource
from acid_platform.orchestration.changes import (
    AFTER_TAG,
    UPTO_TAG,
    ChangeCursor,
    ChangeWindow,
    append_changes,
    change_feed_sensor,
    plan_windows,
    window_metadata,
)
from acid_platform_tests.orchestration.conftest import requests, skipped, tick

LOG = AssetKey(["default", "emp_log"])
EMP = [("id", "int"), ("name", "string"), ("salary", "int")]


@asset(key=LOG)
def emp_log(config: ChangeWindow, acid_warehouse: AcidWarehouseResource) -> MaterializeResult:
    """Appends the window's changes of ``emp`` to ``emp_log``, exactly once."""
    changes, metrics = append_changes(acid_warehouse, config, "emp_log")
    return MaterializeResult(
        metadata={**window_metadata(config, changes), "appended": metrics is not None}
    )


def windows(result: SensorResult) -> list[tuple[int, int]]:
    return [(int(r.tags[AFTER_TAG]), int(r.tags[UPTO_TAG])) for r in requests(result)]


def run(
    instance: DagsterInstance,
    resource: AcidWarehouseResource,
    request: RunRequest,
    raise_on_error: bool = False,
) -> dict[str, Any]:
    """Materialize the log with the request's config; the materialization's metadata
    (``raise_on_error``: the run's error is raised, not asserted away)."""
    result = materialize(
        [emp_log],
        run_config=request.run_config,
        resources={"acid_warehouse": resource},
        instance=instance,
        tags=request.tags,
        raise_on_error=raise_on_error,
    )
    assert result.success
    (event,) = result.get_asset_materialization_events()
    materialization = event.materialization
    return {k: v.value for k, v in materialization.metadata.items()}


def log_rows(wh: Warehouse) -> list[tuple[Any, ...]]:
    rows = wh.table("emp_log").scan().to_arrow().to_pylist()
    return sorted((r["_write_id"], r["_change_type"], r["id"], r["salary"]) for r in rows)


def feed_rows(wh: Warehouse) -> list[tuple[Any, ...]]:
    rows = wh.table("emp").changes(0, key="id").to_arrow().to_pylist()
    return sorted((r["_write_id"], r["_change_type"], r["id"], r["salary"]) for r in rows)


def test_each_write_id_is_handed_out_once_and_consumed_once(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    sensor = change_feed_sensor("emp", target=emp_log, key=["id"])
    assert sensor.name == "acid_changes_emp" and sensor.default_status.value == "RUNNING"
    emp = wh.create_table("emp", EMP)
    emp.insert([{"id": i, "name": f"n{i}", "salary": 10 * i} for i in range(3)])  # write id 1
    emp.update({"salary": "salary + 1"}, "id = 1")  # write id 2

    first = tick(instance, resource, sensor, None)
    (request,) = requests(first)
    at = emp.incarnation
    assert windows(first) == [(0, 2)] and request.run_key == f"emp@{at}:0-2"
    assert request.run_config == {
        "ops": {
            "default__emp_log": {
                "config": {
                    "table": "emp",
                    "after_write_id": 0,
                    "upto_write_id": 2,
                    "key": ["id"],
                    "incarnation": at,
                }
            }
        }
    }
    assert ChangeCursor.parse(first.cursor) == ChangeCursor(2, at)
    again = tick(instance, resource, sensor, first.cursor)  # nothing new: nothing requested
    assert requests(again) == [] and "no change in emp after write id 2" in skipped(again)
    assert again.cursor == first.cursor

    meta = run(instance, resource, request)
    assert meta["appended"] is True and meta["changes"] == 5
    assert meta["changes/update_preimage"] == meta["changes/update_postimage"] == 1
    assert log_rows(wh) == feed_rows(wh)
    replay = run(instance, resource, request)  # the same run again: a no-op
    assert replay["appended"] is False and log_rows(wh) == feed_rows(wh)

    emp.delete("id = 0")  # write id 3
    emp.insert([{"id": 9, "name": "n9", "salary": 90}])  # write id 4
    second = tick(instance, resource, sensor, again.cursor)
    (request,) = requests(second)
    assert windows(second) == [(2, 4)]
    assert run(instance, resource, request)["changes"] == 2
    assert log_rows(wh) == feed_rows(wh)  # every change once, none lost
    assert [s.key for s in wh.table("emp_log").committed_sources()] == [
        f"changes:emp@{at}:0-2",
        f"changes:emp@{at}:2-4",
    ]


def test_after_drop_and_create_the_feed_starts_again_and_old_positions_are_refused(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    """Issue 29, item 7: write ids restart with a new incarnation; a cursor of the former one
    would skip the new table's first changes, and its window would read nothing."""
    sensor = change_feed_sensor("emp", target=emp_log, key=["id"])
    old = wh.create_table("emp", EMP)
    for i in range(3):
        old.insert([{"id": i, "name": "old", "salary": i}])  # write ids 1..3
    first = tick(instance, resource, sensor, None)
    (old_window,) = requests(first)
    assert run(instance, resource, old_window)["changes"] == 3

    was = old.incarnation
    wh.sql("DROP TABLE emp")
    new = wh.create_table("emp", EMP)
    new.insert([{"id": 7, "name": "new", "salary": 70}])  # write id 1 of the new incarnation
    assert new.incarnation != was
    with pytest.raises(ChangeFeedIncarnationError, match="dropped and created again") as refused:
        new.changes(0, incarnation=was).to_arrow()
    assert (refused.value.expected, refused.value.found) == (was, new.incarnation)
    with pytest.raises(ChangeFeedIncarnationError):
        run(instance, resource, old_window, raise_on_error=True)  # the old window, replayed

    second = tick(instance, resource, sensor, first.cursor)
    (request,) = requests(second)
    assert windows(second) == [(0, 1)]  # from the new incarnation's first write id
    assert request.run_key == f"emp@{new.incarnation}:0-1" != old_window.run_key
    assert ChangeCursor.parse(second.cursor) == ChangeCursor(1, new.incarnation)
    meta = run(instance, resource, request)
    assert meta["appended"] is True and meta["changes"] == 1  # not skipped as "already in"
    log = wh.table("emp_log").scan().to_arrow().to_pylist()
    assert sorted((r["name"], r["_write_id"]) for r in log) == [
        ("new", 1), ("old", 1), ("old", 2), ("old", 3),
    ]  # fmt: skip


def test_an_open_write_holds_the_window_back_until_it_ends(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    sensor = change_feed_sensor("emp", target=emp_log)
    emp = wh.create_table("emp", EMP)
    emp.insert([{"id": 1, "name": "a", "salary": 1}])  # write id 1
    with wh.transaction():
        emp.insert([{"id": 2, "name": "b", "salary": 2}])  # write id 2, open
        open_tick = tick(instance, resource, sensor, None)
        assert windows(open_tick) == [(0, 1)]
        emp2 = tick(instance, resource, sensor, open_tick.cursor)
        assert requests(emp2) == []  # write id 2 is not final while its txn is open
    emp.insert([{"id": 3, "name": "c", "salary": 3}])  # write id 3
    assert windows(tick(instance, resource, sensor, emp2.cursor)) == [(1, 3)]


def test_windows_are_cut_and_the_first_tick_may_start_later(
    wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    assert plan_windows(0, 7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert plan_windows(5, 5) == plan_windows(6, 5) == [] and plan_windows(2, 9) == [(2, 9)]
    sensor = change_feed_sensor(
        "emp", target=emp_log, name="emp_feed", start_write_id=1, max_write_ids_per_run=2
    )
    emp = wh.create_table("emp", EMP)
    for i in range(6):
        emp.insert([{"id": i, "name": "x", "salary": i}])  # write ids 1..6
    result = tick(instance, resource, sensor, None)
    assert windows(result) == [(1, 3), (3, 5), (5, 6)]
    assert len({r.run_key for r in requests(result)}) == 3
    assert json.loads(result.cursor or "") == {"write_id": 6, "incarnation": emp.incarnation}


def test_before_the_warehouse_or_the_table_exists_the_sensor_skips(
    tmp_path: Any, wh: Warehouse, resource: AcidWarehouseResource, instance: DagsterInstance
) -> None:
    sensor = change_feed_sensor("emp", target=emp_log)
    nowhere = AcidWarehouseResource(warehouse=str(tmp_path / "none"))
    assert "no warehouse" in skipped(tick(instance, nowhere, sensor, None))
    result = tick(instance, resource, sensor, None)
    assert "no table emp yet" in skipped(result) and json.loads(result.cursor or "") == {
        "write_id": 0,
        "incarnation": "",
    }
    with pytest.raises(ValueError, match="name the op"):
        change_feed_sensor("emp", target=materialize_job())


def materialize_job() -> Any:
    """A job (not an asset): the sensor must be told which op takes the window."""
    from dagster import job, op

    @op
    def consume(config: ChangeWindow) -> None:
        del config

    @job
    def consume_changes() -> None:
        consume()

    return consume_changes
