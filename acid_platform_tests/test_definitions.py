"""The example platform (``acid_platform_example``): it loads as ``dagster dev`` and ``dg``
load it, its settings come from the environment (secrets as ``EnvVar``), and one run materializes
it end to end on embedded defaults with every blocking check passing."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetKey,
    AutomationCondition,
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    EnvVar,
    SensorResult,
    build_sensor_context,
    instance_for_test,
)

from acid_platform import Warehouse
from acid_platform.cli.materialize import materialize_job
from acid_platform_example.data import (
    EMAIL_SUMMARY,
    EVENT_TYPES,
    FORGOTTEN,
    MEMBERS,
    PLATFORM_JOB,
    SALES,
    STORE_SALES_DAILY,
    STORES,
    email_events_of,
    sales_of,
)
from acid_platform_tests.example import example_defs

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


def test_the_code_location_loads_as_dagster_dev_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defs = example_defs(monkeypatch, tmp_path / "wh", ACID_SPARK_MASTER="local[1]")
    Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()
    assert repo.has_job(PLATFORM_JOB)
    assert {s.name for s in repo.sensor_defs} >= {
        "acid_compaction_sensor",
        "acid_housekeeping_sensor",
        "acid_returns_ingest",
        "acid_store_changes",
    }
    assert all(
        s.default_status == DefaultSensorStatus.RUNNING
        for s in repo.sensor_defs
        if s.name.startswith("acid_")
    )
    assert all(s.default_status == DefaultScheduleStatus.RUNNING for s in repo.schedule_defs)
    # the daily dimension is declarative automation now, not a schedule
    assert {s.name for s in repo.schedule_defs} == {"acid_cleaner_schedule"}
    specs = {s.key: s for s in defs.resolve_all_asset_specs()}
    assert specs[STORES].automation_condition == AutomationCondition.on_cron("0 6 * * *")
    assert specs[EMAIL_SUMMARY].automation_condition == AutomationCondition.eager()
    assert specs[SALES].owners == ["team:data-platform"] and specs[SALES].code_version == "1"


def test_every_table_has_checks_and_the_assets_have_groups_and_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defs = example_defs(monkeypatch, tmp_path / "wh", ACID_SPARK_MASTER="local[1]")
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
    freshness = specs["retail/returns"].freshness_policy
    assert freshness is not None


def test_the_settings_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "postgresql+psycopg://u:SECRETPW@h/db"
    defs = example_defs(
        monkeypatch,
        "s3://bucket/wh",
        ACID_METASTORE_URL=secret,
        ACID_SPARK_MASTER="spark://h:7077",
        ACID_CONF="hive.compactor.check.interval=10s, hive.txn.timeout=60s",
        ACID_CLEANER_CRON="* * * * *",
    )
    acid = (defs.resources or {})["acid_warehouse"]
    # the warehouse and the metastore are EnvVars: the config names the variable, never the value
    assert acid.warehouse == EnvVar("ACID_WAREHOUSE")
    assert acid.metastore_url == EnvVar("ACID_METASTORE_URL")
    assert "SECRETPW" not in repr(acid.model_dump())
    assert acid.conf == {"hive.compactor.check.interval": "10s", "hive.txn.timeout": "60s"}
    assert defs.resolve_schedule_def("acid_cleaner_schedule").cron_schedule == "* * * * *"

    home = example_defs(monkeypatch, None, DAGSTER_HOME=str(tmp_path))
    assert (home.resources or {})["acid_warehouse"].warehouse == str(tmp_path / "warehouse")
    assert (home.resources or {})["acid_warehouse"].metastore_url is None
    keys = {s.key for s in home.resolve_all_asset_specs()}
    assert STORE_SALES_DAILY not in keys and SALES in keys  # ACID_SPARK_MASTER=none


def test_the_sensor_intervals_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = example_defs(
        monkeypatch,
        tmp_path / "wh",
        ACID_COMPACTION_SENSOR_INTERVAL="5",
        ACID_HOUSEKEEPING_SENSOR_INTERVAL="7",
        ACID_INGEST_SENSOR_INTERVAL="9",
        ACID_CHANGES_SENSOR_INTERVAL="11",
    )
    interval = {
        name: platform.resolve_sensor_def(name).minimum_interval_seconds
        for name in (
            "acid_compaction_sensor",
            "acid_housekeeping_sensor",
            "acid_returns_ingest",
            "acid_store_changes",
        )
    }
    assert list(interval.values()) == [5, 7, 9, 11]

    def housekeeping(conf: str) -> int | None:
        defs = example_defs(monkeypatch, tmp_path / "wh", ACID_CONF=conf)
        return defs.resolve_sensor_def("acid_housekeeping_sensor").minimum_interval_seconds

    # by default every half hive.txn.timeout, between 5 and 30 s
    assert [housekeeping(""), housekeeping("hive.txn.timeout=20s")] == [30, 10]
    assert housekeeping("hive.txn.timeout=2s") == 5


def rows(wh: Warehouse, table: str) -> list[dict[str, Any]]:
    return wh.table(table).scan().to_arrow().to_pylist()


@pytest.mark.slow
def test_one_run_materializes_the_platform_end_to_end(
    tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = example_defs(monkeypatch, tmp_path / "wh")
    as_of = {"ops": {"retail__stores": {"config": {"as_of": "2024-01-02"}}}}
    result = materialize_job(platform, instance, run_config=as_of)
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
    assert materialize_job(platform, instance, run_config=again).success
    meta = materialization(instance, STORES)
    assert (meta["rows_deleted"], meta["rows_updated"], meta["rows_inserted"]) == (1, 2, 0)
    assert meta["dagster/row_count"] == 5

    # the main job is idempotent: running it again leaves every table with the same rows (a
    # closed store in the feed is never inserted, so a re-run does not delete it)
    before = every_table(tmp_path / "wh")
    assert len(before) >= 4, sorted(before)
    assert materialize_job(platform, instance, run_config=again).success
    assert every_table(tmp_path / "wh") == before
    meta = materialization(instance, STORES)
    assert (meta["rows_deleted"], meta["rows_updated"], meta["rows_inserted"]) == (0, 0, 0)


def every_table(root: Path) -> dict[str, list[str]]:
    """Every table's rows (as sorted reprs: rows of any types compare), by name."""
    wh = Warehouse.open(str(root), create=False)
    try:
        return {
            f"{db}.{name}": sorted(repr(sorted(r.items())) for r in rows(wh, f"{db}.{name}"))
            for db in wh.list_databases()
            for name in wh.list_tables(db)
        }
    finally:
        wh.close()


def materialization(instance: DagsterInstance, key: AssetKey) -> dict[str, Any]:
    event = instance.get_latest_materialization_event(key)
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


@pytest.mark.slow
def test_the_maintenance_jobs_run_beside_the_acid_tables_io_manager(
    tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The platform's ``io_manager`` is the ACID tables' one: the maintenance ops' outputs
    (metadata only) must not go through it."""
    platform = example_defs(
        monkeypatch, tmp_path / "wh", ACID_CONF="hive.compactor.check.interval=0"
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
