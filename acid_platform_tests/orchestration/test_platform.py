"""The warehouse as definitions (``acid_definitions``, ``warehouse_definitions``,
``with_acid_checks``): the checks read the table the IO manager wrote, whatever the asset key;
a compaction is reported on its table's asset and turns the WARN health check to PASS; two
warehouses live in one code location, each maintained by its own sensors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterInstance,
    Definitions,
    MaterializeResult,
    RunRequest,
    SensorResult,
    asset,
    build_schedule_context,
    build_sensor_context,
)

from acid_platform import Warehouse
from acid_platform.orchestration import (
    AcidTableIOManager,
    AcidWarehouseResource,
    acid_definitions,
    acid_tables,
    warehouse_definitions,
    with_acid_checks,
)
from acid_platform_tests.orchestration.conftest import TEST_CONF, insert_deltas

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})


def table_asset(key: list[str], **metadata: Any) -> Any:
    @asset(key=key, metadata=metadata or None)
    def _t() -> pa.Table:
        return ROWS

    return _t


def test_the_checks_read_the_table_the_io_manager_wrote(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    """1-, 2- and 3-part keys, ``schema`` metadata and the IO manager's ``schema``: the table
    the checks read is the one the write created (Dagster's DbIOManager rule)."""
    resource = AcidWarehouseResource(warehouse=str(tmp_path / "wh"), conf=TEST_CONF)
    assets = [
        table_asset(["orders"]),
        table_asset(["retail", "stores"]),
        table_asset(["lake", "retail", "returns"]),
        table_asset(["lake", "raw", "events"], schema="audit"),
    ]
    defs = acid_definitions(assets=assets, warehouse=resource)
    tables = {
        t.key.to_user_string(): t.table for t in acid_tables(defs.assets or [], defs.resources)
    }
    assert tables == {
        "orders": "default.orders",
        "retail/stores": "retail.stores",
        "lake/retail/returns": "retail.returns",
        "lake/raw/events": "audit.events",
    }
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance)
    assert result.success
    with Warehouse.open(str(tmp_path / "wh"), create=False) as wh:
        for name in tables.values():
            assert wh.table(name).scan().to_arrow().num_rows == 3, name
    checks = result.get_asset_check_evaluations()
    assert {c.asset_key.to_user_string() for c in checks} == set(tables)
    assert all(c.passed for c in checks if c.severity.value == "ERROR")

    # the IO manager's own schema: every unprefixed key's database
    shared = AcidTableIOManager(acid_warehouse=resource, schema="mart")
    with_schema = with_acid_checks(
        Definitions(assets=assets[:2], resources={"acid_warehouse": resource, "io_manager": shared})
    )
    by_key = {
        t.key.to_user_string(): t.table
        for t in acid_tables(with_schema.assets or [], with_schema.resources)
    }
    assert by_key == {"orders": "mart.orders", "retail/stores": "mart.stores"}


def test_an_asset_writing_by_itself_is_not_an_io_manager_table(tmp_path: Path) -> None:
    """An asset returning a ``MaterializeResult`` (it wrote through the warehouse itself) gets
    no checks from the IO manager's rule; one naming its table in ``acid/table`` does."""

    @asset(key=["corrections", "forget"])
    def forget() -> MaterializeResult:
        return MaterializeResult()

    @asset(key=["mail", "summary"], metadata={"acid/table": "mail.email_summary"})
    def summary() -> MaterializeResult:
        return MaterializeResult()

    resource = AcidWarehouseResource(warehouse=str(tmp_path / "wh"))
    defs = acid_definitions(assets=[forget, summary, table_asset(["t"])], warehouse=resource)
    found = {t.key: t.table for t in acid_tables(defs.assets or [], defs.resources)}
    assert found == {
        AssetKey("t"): "default.t",
        AssetKey(["mail", "summary"]): "mail.email_summary",
    }


def compaction_tick(defs: Definitions, instance: DagsterInstance, sensor: str) -> list[RunRequest]:
    """One tick of ``sensor`` as the daemon evaluates it (the code location's definitions)."""
    definition = defs.resolve_sensor_def(sensor)
    with build_sensor_context(
        instance=instance, definitions=defs, resources=defs.resources
    ) as context:
        result = definition(context)
    assert isinstance(result, SensorResult)
    return [r for r in result.run_requests or [] if isinstance(r, RunRequest)]


def latest_observation(instance: DagsterInstance, key: AssetKey) -> dict[str, Any]:
    """The metadata of the latest observation of ``key``, as values."""
    (record,) = instance.fetch_observations(key, limit=1).records
    observation = record.asset_observation
    assert observation is not None
    return {k: v.value for k, v in observation.metadata.items()}


def latest_check(instance: DagsterInstance, key: AssetKey, check: str) -> Any:
    records = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [AssetCheckKey(key, check)]
    )
    record = records.get(AssetCheckKey(key, check))
    assert record is not None and record.event is not None
    return record.event.dagster_event.event_specific_data  # type: ignore[union-attr]


def test_two_warehouses_in_one_code_location_each_maintained_by_its_own_sensors(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    first = AcidWarehouseResource(warehouse=str(tmp_path / "first"), conf=TEST_CONF)
    second = AcidWarehouseResource(warehouse=str(tmp_path / "second"), conf=TEST_CONF)

    @asset(key=["sales", "orders"], io_manager_key="io_manager")
    def orders() -> pa.Table:
        return pa.table({"id": pa.array([0], pa.int32()), "name": ["n"]})

    @asset(key=["lake", "events"], io_manager_key="lake_io")
    def events() -> pa.Table:
        return pa.table({"id": pa.array([0], pa.int32()), "name": ["n"]})

    defs = with_acid_checks(
        Definitions.merge(
            Definitions(assets=[orders, events]),
            warehouse_definitions(first),
            warehouse_definitions(
                second, resource_key="lake", io_manager_key="lake_io", reader_key="lake_reader"
            ),
        )
    )
    assert {s.name for s in defs.sensors or []} == {
        "acid_compaction_sensor",
        "acid_housekeeping_sensor",
        "acid_compaction_sensor__lake",
        "acid_housekeeping_sensor__lake",
    }
    assert {s.name for s in defs.schedules or []} == {
        "acid_cleaner_schedule",
        "acid_cleaner_schedule__lake",
    }
    tables = {
        t.key.to_user_string(): (t.table, t.resource_key)
        for t in acid_tables(defs.assets or [], defs.resources)
    }
    assert tables == {
        "sales/orders": ("sales.orders", "acid_warehouse"),
        "lake/events": ("lake.events", "lake"),
    }
    assert (
        defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance).success
    )
    for root, name in ((first, "sales.orders"), (second, "lake.events")):
        with Warehouse.open(root.warehouse, create=False) as wh:
            insert_deltas(wh, name, 11)  # over the compaction threshold (10)
    for sensor, table, key in (
        ("acid_compaction_sensor", "sales.orders", AssetKey(["sales", "orders"])),
        ("acid_compaction_sensor__lake", "lake.events", AssetKey(["lake", "events"])),
    ):
        (request,) = compaction_tick(defs, instance, sensor)
        assert request.tags["acid/table"] == table  # only its own warehouse's table
        job = request.job_name or defs.resolve_sensor_def(sensor).job_name
        assert job == ("acid_compaction" if sensor.endswith("sensor") else "acid_compaction__lake")
        config = request.run_config["ops"]["acid_compact"]["config"]
        assert config["asset_key"] == list(key.path)
        result = defs.resolve_job_def(job).execute_in_process(
            run_config=request.run_config, instance=instance, tags=request.tags
        )
        assert result.success
        meta = latest_observation(instance, key)
        assert meta["compaction/table"] == table
        assert meta["compaction/deltas_before"] >= 11 and meta["compaction/deltas_after"] <= 1
        assert meta["compaction/bytes_before"] > 0 and meta["compaction/worker"]
        # the WARN check evaluated again by the compaction run: it passes now
        evaluation = latest_check(instance, key, "deltas_below_threshold")
        assert evaluation.passed, evaluation.description

    # the cleaner of each warehouse reports what it removed on the table's asset
    for schedule, key in (
        ("acid_cleaner_schedule", AssetKey(["sales", "orders"])),
        ("acid_cleaner_schedule__lake", AssetKey(["lake", "events"])),
    ):
        definition = defs.resolve_schedule_def(schedule)
        with build_schedule_context(
            instance=instance, resources=defs.resources, repository_def=defs.get_repository_def()
        ) as context:
            data = definition.evaluate_tick(context)
        (request,) = data.run_requests or []
        job = definition.job_name
        assert (
            defs.resolve_job_def(job)
            .execute_in_process(run_config=request.run_config, instance=instance, tags=request.tags)
            .success
        )
        meta = latest_observation(instance, key)
        assert meta["cleaner/removed_paths"] >= 11, meta
