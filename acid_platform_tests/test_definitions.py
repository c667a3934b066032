"""The example platform (``acid_platform/definitions.py``): it loads as ``dagster dev`` loads it,
its settings come from the environment, and one run materializes it end to end on embedded
defaults with every blocking check passing."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    SensorResult,
    build_sensor_context,
    instance_for_test,
)

from acid_platform import Warehouse
from acid_platform.definitions import (
    EMAIL_SUMMARY,
    PLATFORM_JOB,
    SALES,
    STORE_SALES_DAILY,
    STORES,
    PlatformSettings,
    defs,
    materialize_platform,
    platform_definitions,
)
from acid_platform.orchestration.example import (
    EVENT_TYPES,
    FORGOTTEN,
    MEMBERS,
    email_events_of,
    sales_of,
)

TABLES = {
    "retail/stores": "retail.stores",
    "retail/sales": "retail.sales",
    "mail/email_events": "mail.email_events",
    "mail/email_summary": "mail.email_summary",
    "retail/returns": "retail.returns",
    "retail/store_changes": "retail.store_changes",
}


@pytest.fixture
def instance() -> Any:
    with instance_for_test() as inst:
        yield inst


def no_spark(root: Path) -> Definitions:
    return platform_definitions(PlatformSettings(str(root / "wh"), spark_master="none"))


def test_the_module_loads_as_dagster_dev_loads_it() -> None:
    Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()
    assert repo.has_job(PLATFORM_JOB)
    assert {s.name for s in repo.sensor_defs} >= {
        "acid_compaction_sensor",
        "acid_housekeeping_sensor",
    }
    assert all(s.default_status == DefaultSensorStatus.RUNNING for s in repo.sensor_defs)
    assert all(s.default_status == DefaultScheduleStatus.RUNNING for s in repo.schedule_defs)
    assert {s.name for s in repo.schedule_defs} == {"acid_cleaner_schedule", "acid_stores_daily"}


def test_every_table_has_checks_and_the_assets_have_groups_and_kinds() -> None:
    specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    assert specs[STORE_SALES_DAILY.to_user_string()].kinds == {"spark", "hive", "orc"}
    assert all({"hive", "orc"} <= s.kinds for s in specs.values())
    assert {s.group_name for s in specs.values()} == {
        "dimensions",
        "ingest",
        "corrections",
        "reporting",
    }
    checked = Counter(
        k.asset_key.to_user_string() for k in defs.resolve_asset_graph().asset_check_keys
    )
    # 6 consistency, 1 files (fsck), 4 health checks per table
    assert checked == {key: 11 for key in [*TABLES, STORE_SALES_DAILY.to_user_string()]}


def test_the_settings_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "ACID_WAREHOUSE": "s3://bucket/wh",
        "ACID_METASTORE_URL": "postgresql+psycopg://u@h/db",
        "ACID_SPARK_MASTER": "spark://h:7077",
        "ACID_CONF": "hive.compactor.check.interval=10s, hive.txn.timeout=60s",
        "ACID_CLEANER_CRON": "* * * * *",
    }
    settings = PlatformSettings.from_env(env)
    assert settings == PlatformSettings(
        "s3://bucket/wh",
        "postgresql+psycopg://u@h/db",
        "spark://h:7077",
        {"hive.compactor.check.interval": "10s", "hive.txn.timeout": "60s"},
        "* * * * *",
    )
    home = PlatformSettings.from_env({"DAGSTER_HOME": str(tmp_path)})
    assert home.warehouse == str(tmp_path / "warehouse") and home.metastore_url is None
    assert home.with_spark and not PlatformSettings("w", spark_master="none").with_spark
    without = platform_definitions(PlatformSettings.from_env({**env, "ACID_SPARK_MASTER": "none"}))
    keys = {s.key for s in without.resolve_all_asset_specs()}
    assert STORE_SALES_DAILY not in keys and SALES in keys
    schedule = without.resolve_schedule_def("acid_cleaner_schedule")
    assert schedule.cron_schedule == "* * * * *"


def test_the_sensor_intervals_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "ACID_WAREHOUSE": str(tmp_path / "wh"),
        "ACID_SPARK_MASTER": "none",
        "ACID_COMPACTION_SENSOR_INTERVAL": "5",
        "ACID_HOUSEKEEPING_SENSOR_INTERVAL": "7",
    }
    platform = platform_definitions(PlatformSettings.from_env(env))
    assert platform.resolve_sensor_def("acid_compaction_sensor").minimum_interval_seconds == 5
    assert platform.resolve_sensor_def("acid_housekeeping_sensor").minimum_interval_seconds == 7

    def housekeeping(conf: str) -> int:
        return PlatformSettings.from_env({"ACID_CONF": conf}).housekeeping_sensor_interval_s

    # by default every half hive.txn.timeout, between 5 and 30 s
    assert PlatformSettings.from_env({}).compaction_interval_s == 30
    assert [housekeeping(""), housekeeping("hive.txn.timeout=20s")] == [30, 10]
    assert housekeeping("hive.txn.timeout=2s") == 5
    with pytest.raises(ValueError, match="ACID_COMPACTION_SENSOR_INTERVAL='0'"):
        PlatformSettings.from_env({"ACID_COMPACTION_SENSOR_INTERVAL": "0"})


def rows(wh: Warehouse, table: str) -> list[dict[str, Any]]:
    return wh.table(table).scan().to_pylist()


@pytest.mark.slow
def test_one_run_materializes_the_platform_end_to_end(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    platform = no_spark(tmp_path)
    as_of = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
    result = materialize_platform(platform, instance, run_config=as_of)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert len(checks) == 44  # with the files_match_record check of each of the 4 ACID tables
    assert all(c.passed for c in checks if c.severity.value == "ERROR")

    wh = Warehouse.open(str(tmp_path / "wh"), create=False)
    try:
        days = [dt.date(2024, 1, d) for d in (1, 2, 3)]
        made = [r for d in days for r in sales_of(d) if r["customer_id"] not in FORGOTTEN]
        sales = {r["sale_id"]: r for r in rows(wh, "retail.sales")}
        assert sorted(sales) == sorted(r["sale_id"] for r in made)
        for r in made:  # the restatement gave members their discount, once
            member = r["customer_id"] in MEMBERS
            assert sales[r["sale_id"]]["discounted"] == member
            expected = round(r["amount"] * 0.9, 2) if member else r["amount"]
            assert sales[r["sale_id"]]["amount"] == pytest.approx(expected, abs=0.011)
        events = rows(wh, "mail.email_events")
        sent = [e for d in days for e in email_events_of(d) if e["customer_id"] not in FORGOTTEN]
        assert sorted(e["event_id"] for e in events) == sorted(e["event_id"] for e in sent)
        # the summary the MERGEs built = a GROUP BY of the events
        counts: Counter[tuple[int, dt.date, str]] = Counter(
            (e["customer_id"], e["ds"], e["event_type"]) for e in events
        )
        summary = {(r["customer_id"], r["ds"]): r for r in rows(wh, "mail.email_summary")}
        assert set(summary) == {(c, d) for c, d, _ in counts}
        for (customer, day), row in summary.items():
            for kind in EVENT_TYPES:
                assert row[f"number_{kind}"] == counts[(customer, day, kind)]
        assert {r["store_id"] for r in rows(wh, "retail.stores")} == {1, 2, 3, 4, 5, 6}
    finally:
        wh.close()

    meta = materialization(instance, EMAIL_SUMMARY)
    order = [step["source_rows"] for step in meta["merge_order"]]
    assert order == sorted(order) and len(order) == len(EVENT_TYPES)
    assert meta["dagster/row_count"] == len(summary)
    sales = materialization(instance, SALES)  # one run of three days, 200 rows each
    assert sales["partition_range_row_count"] == 600 and "dagster/partition_row_count" not in sales

    # the next day's feed: store 4 closed (deleted), store 1 grew and store 6 shrank (updated)
    again = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-03"}}}}
    stores_job = platform.resolve_implicit_global_asset_job_def()
    assert stores_job.execute_in_process(
        run_config=again, instance=instance, asset_selection=[STORES]
    ).success
    meta = materialization(instance, STORES)
    assert (meta["rows_deleted"], meta["rows_updated"], meta["rows_inserted"]) == (1, 2, 0)
    assert meta["dagster/row_count"] == 5


def materialization(instance: DagsterInstance, key: AssetKey) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(key)
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.mark.slow
def test_the_maintenance_jobs_run_beside_the_acid_tables_io_manager(
    tmp_path: Path, instance: DagsterInstance
) -> None:
    """The platform's ``io_manager`` is the ACID tables' one: the maintenance ops' outputs
    (metadata only) must not go through it."""
    conf = {"hive.compactor.check.interval": "0"}
    platform = platform_definitions(
        PlatformSettings(str(tmp_path / "wh"), spark_master="none", conf=conf)
    )
    with Warehouse.open(str(tmp_path / "wh"), create=True) as wh:
        table = wh.create_table("t", [("id", "int")])
        for i in range(11):
            table.insert([{"id": i}])
    sensor = platform.resolve_sensor_def("acid_compaction_sensor")
    resources = {"acid_warehouse": (platform.resources or {})["acid_warehouse"]}
    with build_sensor_context(
        instance=instance, definitions=platform, resources=resources
    ) as context:
        tick = sensor(context)
    assert isinstance(tick, SensorResult) and tick.run_requests
    (request,) = tick.run_requests
    compaction = platform.resolve_job_def("acid_compaction").execute_in_process(
        run_config=request.run_config, instance=instance, tags=request.tags
    )
    assert compaction.success
    for job in ("acid_cleaner", "acid_housekeeping"):
        assert platform.resolve_job_def(job).execute_in_process(instance=instance).success, job
