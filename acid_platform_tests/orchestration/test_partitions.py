"""Dagster partitions as Hive partitions: static, dynamic, time windows on date, timestamp and
string columns, multi partitions, and single-run backfills over ranges."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    DagsterInstance,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    HourlyPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    materialize,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)

from acid_platform import Warehouse
from acid_platform.errors import LockTimeoutError
from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.orchestration.conftest import latest_metadata

REGIONS = StaticPartitionsDefinition(["us", "eu"])
DAILY = DailyPartitionsDefinition("2024-01-01", end_date="2024-01-10")


def by(table: pa.Table, *keys: str) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: tuple(str(r[k]) for k in keys))


def test_static_partitions_overwrite_only_their_own_partition(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    version = {"n": 1}

    @asset(partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def customers(context: AssetExecutionContext) -> pa.Table:
        region = context.partition_key
        return pa.table({"id": [1, 2], "region": [region] * 2, "v": [version["n"]] * 2})

    for region in ("us", "eu"):
        assert materialize(
            [customers], partition_key=region, resources=resources, instance=instance
        ).success
    version["n"] = 2
    assert materialize(
        [customers], partition_key="us", resources=resources, instance=instance
    ).success
    table = wh.table("customers")
    assert table.spec.partition_column_names == ("region",)
    assert sorted((r["region"], r["v"]) for r in table.scan().to_arrow().to_pylist()) == [
        ("eu", 1),
        ("eu", 1),
        ("us", 2),
        ("us", 2),
    ]
    assert acid_dirs(f"{table.spec.location}/region=us") == ["base_0000001", "base_0000003"]
    assert acid_dirs(f"{table.spec.location}/region=eu") == ["base_0000002"]
    meta = latest_metadata(instance, "customers")
    assert meta["dagster/partition_row_count"] == 2 and meta["dagster/row_count"] == 4
    assert len(meta["statement_ids"]) == 1  # one INSERT OVERWRITE statement
    assert meta["table_partitions"] == 2
    assert meta["Query"] == "SELECT * FROM default.customers WHERE region IN ('us')"


def test_daily_partitions_on_a_date_column_and_a_downstream_load_of_one_day(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    seen: dict[str, pa.Table] = {}

    @asset(partitions_def=DAILY, metadata={"partition_expr": "ds"})
    def events(context: AssetExecutionContext) -> pa.Table:
        day = dt.date.fromisoformat(context.partition_key)
        return pa.table({"id": [day.day * 10, day.day * 10 + 1], "ds": [day, day]})

    @asset(partitions_def=DAILY)
    def daily_count(events: pa.Table) -> None:
        seen["events"] = events

    for day in ("2024-01-02", "2024-01-03"):
        result = materialize(
            [events, daily_count], partition_key=day, resources=resources, instance=instance
        )
        assert result.success
    assert sorted(seen["events"].column("id").to_pylist()) == [30, 31]
    assert wh.list_partitions("events") == ["ds=2024-01-02", "ds=2024-01-03"]
    assert dict(wh.table("events").spec.partition_columns) == {"ds": "date"}


def test_hourly_partitions_on_a_timestamp_column(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    hourly = HourlyPartitionsDefinition("2024-01-01-00:00", end_date="2024-01-02-00:00")

    @asset(partitions_def=hourly, metadata={"partition_expr": "hour", "write_mode": "overwrite"})
    def readings(context: AssetExecutionContext) -> pa.Table:
        start = context.partition_time_window.start.replace(tzinfo=None)
        return pa.table({"id": [start.hour], "hour": pa.array([start], pa.timestamp("us"))})

    for key in ("2024-01-01-05:00", "2024-01-01-06:00", "2024-01-01-05:00"):
        assert materialize(
            [readings], partition_key=key, resources=resources, instance=instance
        ).success
    assert sorted(r["id"] for r in wh.table("readings").scan().to_arrow().to_pylist()) == [5, 6]


def test_daily_partitions_on_a_string_column(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    @asset(partitions_def=DAILY, metadata={"partition_expr": "day"})
    def logs(context: AssetExecutionContext) -> pa.Table:
        return pa.table({"line": ["a", "b"], "day": [context.partition_key] * 2})

    for day in ("2024-01-05", "2024-01-05", "2024-01-06"):
        assert materialize(
            [logs], partition_key=day, resources=resources, instance=instance
        ).success
    assert wh.list_partitions("logs") == ["day=2024-01-05", "day=2024-01-06"]
    assert wh.table("logs").scan().to_arrow().num_rows == 4


def test_dynamic_partitions(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    files = DynamicPartitionsDefinition(name="files")
    instance.add_dynamic_partitions("files", ["a.csv", "b.csv"])

    @asset(partitions_def=files, metadata={"partition_expr": "file", "write_mode": "overwrite"})
    def landed(context: AssetExecutionContext) -> pa.Table:
        return pa.table({"file": [context.partition_key], "n": [len(context.partition_key)]})

    for key in ("a.csv", "b.csv", "a.csv"):
        assert materialize(
            [landed], partition_key=key, resources=resources, instance=instance
        ).success
    assert sorted(r["file"] for r in wh.table("landed").scan().to_arrow().to_pylist()) == [
        "a.csv",
        "b.csv",
    ]


def test_multi_partitions_map_each_dimension_to_its_column(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    multi = MultiPartitionsDefinition({"date": DAILY, "region": REGIONS})
    version = {"n": 1}

    @asset(
        partitions_def=multi,
        metadata={"partition_expr": {"date": "ds", "region": "region"}},
    )
    def sales(context: AssetExecutionContext) -> pa.Table:
        key = context.partition_key
        assert isinstance(key, MultiPartitionKey)
        day = dt.date.fromisoformat(key.keys_by_dimension["date"])
        region = key.keys_by_dimension["region"]
        return pa.table({"amount": [version["n"]], "ds": [day], "region": [region]})

    for date, region in (("2024-01-01", "us"), ("2024-01-01", "eu"), ("2024-01-02", "us")):
        key = MultiPartitionKey({"date": date, "region": region})
        assert materialize(
            [sales], partition_key=key, resources=resources, instance=instance
        ).success
    version["n"] = 2
    key = MultiPartitionKey({"date": "2024-01-01", "region": "us"})
    assert materialize([sales], partition_key=key, resources=resources, instance=instance).success
    rows = by(wh.table("sales").scan().to_arrow(), "ds", "region")
    assert [(str(r["ds"]), r["region"], r["amount"]) for r in rows] == [
        ("2024-01-01", "eu", 1),
        ("2024-01-01", "us", 2),
        ("2024-01-02", "us", 1),
    ]
    assert wh.table("sales").spec.partition_column_names == ("ds", "region")


def test_a_single_run_backfill_replaces_every_partition_of_its_range(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    skip = {"day": ""}

    @asset(
        partitions_def=DAILY,
        backfill_policy=BackfillPolicy.single_run(),
        metadata={"partition_expr": "ds"},
    )
    def visits(context: AssetExecutionContext) -> pa.Table:
        window = context.partition_time_window
        days = [
            window.start.date() + dt.timedelta(days=i)
            for i in range((window.end - window.start).days)
        ]
        days = [d for d in days if str(d) != skip["day"]]
        return pa.table({"id": [d.day for d in days], "ds": days})

    def backfill(start: str, end: str) -> None:
        tags = {ASSET_PARTITION_RANGE_START_TAG: start, ASSET_PARTITION_RANGE_END_TAG: end}
        assert materialize([visits], tags=tags, resources=resources, instance=instance).success

    backfill("2024-01-01", "2024-01-05")
    assert sorted(r["id"] for r in wh.table("visits").scan().to_arrow().to_pylist()) == [
        1,
        2,
        3,
        4,
        5,
    ]
    skip["day"] = "2024-01-03"  # the rerun of the range has no rows for the 3rd: it empties it
    backfill("2024-01-02", "2024-01-04")
    assert sorted(r["id"] for r in wh.table("visits").scan().to_arrow().to_pylist()) == [1, 2, 4, 5]
    meta = latest_metadata(instance, "visits")
    assert meta["Query"] == (
        "SELECT * FROM default.visits WHERE ds >= '2024-01-02 00:00:00+00:00' "
        "AND ds < '2024-01-05 00:00:00+00:00'"
    )
    assert len(meta["statement_ids"]) == 1
    # the range's rows together: each of its partitions gets this metadata, so no per-partition
    # count (the 3rd holds none)
    assert meta["partition_range_row_count"] == 2 and "dagster/partition_row_count" not in meta
    assert acid_dirs(f"{wh.table('visits').spec.location}/ds=2024-01-03")[-1] == "base_0000002"


def test_merge_on_a_partition_touches_only_that_partition(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    rows = {
        "us": [{"id": 1, "region": "us", "v": 1}, {"id": 2, "region": "us", "v": 1}],
        "eu": [{"id": 1, "region": "eu", "v": 1}],
    }

    @asset(
        partitions_def=REGIONS,
        metadata={
            "partition_expr": "region",
            "write_mode": "merge",
            "key_columns": ["id"],
            "merge_options": {"delete_missing": True},
        },
    )
    def accounts(context: AssetExecutionContext) -> pa.Table:
        return pa.Table.from_pylist(rows[context.partition_key])

    for region in ("us", "eu"):
        assert materialize(
            [accounts], partition_key=region, resources=resources, instance=instance
        ).success
    rows["us"] = [{"id": 2, "region": "us", "v": 5}, {"id": 3, "region": "us", "v": 5}]
    assert materialize(
        [accounts], partition_key="us", resources=resources, instance=instance
    ).success
    got = by(wh.table("accounts").scan().to_arrow(), "region", "id")
    assert [(r["region"], r["id"], r["v"]) for r in got] == [
        ("eu", 1, 1),
        ("us", 2, 5),
        ("us", 3, 5),
    ]
    meta = latest_metadata(instance, "accounts")
    assert (meta["rows_inserted"], meta["rows_updated"], meta["rows_deleted"]) == (1, 1, 1)


@pytest.mark.slow
def test_an_overwrite_locks_only_the_partitions_it_replaces(
    instance: DagsterInstance, wh: Warehouse
) -> None:
    impatient = AcidWarehouseResource(warehouse=wh.root, conf={"acid.lock.wait.timeout.s": "1"})
    resources = {
        "acid_warehouse": impatient,
        "io_manager": AcidTableIOManager(acid_warehouse=impatient),
    }

    @asset(partitions_def=DAILY, metadata={"partition_expr": "ds"})
    def events(context: AssetExecutionContext) -> pa.Table:
        return pa.table({"id": [1], "ds": [dt.date.fromisoformat(context.partition_key)]})

    assert materialize(
        [events], partition_key="2024-01-01", resources=resources, instance=instance
    ).success
    wh.transaction()  # another session holds an INSERT OVERWRITE of 2024-01-01 open
    wh.table("events").insert([{"id": 9}], partition={"ds": "2024-01-01"}, overwrite=True)
    try:
        for day in ("2024-01-02", "2024-01-03"):  # other days do not wait for it
            assert materialize(
                [events], partition_key=day, resources=resources, instance=instance
            ).success
        with pytest.raises(LockTimeoutError, match="not acquired within 1s"):  # its own day does
            materialize(
                [events], partition_key="2024-01-01", resources=resources, instance=instance
            )
    finally:
        wh.rollback()
    assert sorted(r["id"] for r in wh.table("events").scan().to_arrow().to_pylist()) == [1, 1, 1]


def test_a_partitioned_asset_on_an_unpartitioned_table_replaces_its_rows_in_one_transaction(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    version = {"n": 1}

    @asset(partitions_def=REGIONS, metadata={"partition_expr": "region", "partitioned_by": []})
    def flat(context: AssetExecutionContext) -> pa.Table:
        return pa.table(
            {"id": [1, 2], "region": [context.partition_key] * 2, "v": [version["n"]] * 2}
        )

    for region in ("us", "eu"):
        assert materialize(
            [flat], partition_key=region, resources=resources, instance=instance
        ).success
    version["n"] = 2
    assert materialize([flat], partition_key="us", resources=resources, instance=instance).success
    assert wh.table("flat").spec.partition_columns == ()
    got = sorted((r["region"], r["v"]) for r in wh.table("flat").scan().to_arrow().to_pylist())
    assert got == [("eu", 1), ("eu", 1), ("us", 2), ("us", 2)]
    meta = latest_metadata(instance, "flat")  # DELETE of the slice + INSERT, one transaction
    assert (meta["rows_deleted"], meta["rows_inserted"], len(meta["statement_ids"])) == (2, 2, 2)
    assert meta["dagster/row_count"] == 4 and "dagster/partition_row_count" not in meta


def test_an_unpartitioned_asset_overwrites_every_partition_of_its_table(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    days = {"list": ["d1", "d2"]}

    @asset(
        metadata={
            "partitioned_by": ["ds"],
            "clustered_by": ["id"],
            "buckets": 2,
            "table_properties": {"orc.compress": "SNAPPY"},
        }
    )
    def snapshot() -> pa.Table:
        return pa.table({"id": [1, 2, 3, 4], "ds": days["list"] * 2})

    assert materialize([snapshot], resources=resources, instance=instance).success
    days["list"] = ["d2", "d3"]  # d1 disappears: the overwrite empties it
    assert materialize([snapshot], resources=resources, instance=instance).success
    table = wh.table("snapshot")
    spec = table.spec
    assert (spec.partition_column_names, spec.bucket_columns, spec.num_buckets) == (
        ("ds",),
        ("id",),
        2,
    )
    assert spec.properties["orc.compress"] == "SNAPPY"
    assert sorted(r["ds"] for r in table.scan().to_arrow().to_pylist()) == ["d2", "d2", "d3", "d3"]
    assert acid_dirs(f"{spec.location}/ds=d1") == ["base_0000001", "base_0000002"]
    schema = latest_metadata(instance, "snapshot")["dagster/column_schema"]
    assert [(c.name, c.description) for c in schema.columns] == [
        ("id", "bucketing column (2 buckets)"),
        ("ds", "partition column"),
    ]


def test_an_empty_output_empties_its_partition(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    rows = {"us": 2, "eu": 0}

    @asset(partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def orders(context: AssetExecutionContext) -> pa.Table:
        n = rows[context.partition_key]
        return pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "region": pa.array([context.partition_key] * n, pa.string()),
            }
        )

    for region in ("eu", "us"):  # eu: no rows and no partition yet, nothing to replace
        assert materialize(
            [orders], partition_key=region, resources=resources, instance=instance
        ).success
    assert wh.list_partitions("orders") == ["region=us"]
    rows["us"] = 0
    assert materialize([orders], partition_key="us", resources=resources, instance=instance).success
    assert wh.table("orders").scan().to_arrow().num_rows == 0
    meta = latest_metadata(instance, "orders")
    assert meta["dagster/partition_row_count"] == 0 and meta["rows_inserted"] == 0
