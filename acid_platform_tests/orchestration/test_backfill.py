"""A 30-partition backfill into one table, the partitions materialized in parallel by four
processes (as Dagster's backfill daemon launches one run per partition): the first writes race
to create the table, then every overwrite replaces its own partition under a lock on that
partition only. Every run commits and the table holds exactly the source rows."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import datetime as dt
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pyarrow as pa
import pytest
from dagster import (
    AssetExecutionContext,
    AssetKey,
    DagsterInstance,
    DailyPartitionsDefinition,
    asset,
    materialize,
)

from acid_platform import Warehouse
from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource
from acid_platform_tests.helpers import acid_dirs

DAYS = DailyPartitionsDefinition("2024-01-01", end_date="2024-01-31")
ROWS_PER_DAY = 50


def source(day: str, version: int) -> pa.Table:
    """The rows of one day (what the asset computes)."""
    date = dt.date.fromisoformat(day)
    return pa.table(
        {
            "id": [date.day * 1000 + i for i in range(ROWS_PER_DAY)],
            "version": [version] * ROWS_PER_DAY,
            "ds": [date] * ROWS_PER_DAY,
        }
    )


def materialize_day(warehouse: str, instance_ref: object, day: str, version: int) -> bool:
    """One run of one partition (in a worker process)."""

    @asset(partitions_def=DAYS, metadata={"partition_expr": "ds"})
    def events(context: AssetExecutionContext) -> pa.Table:
        return source(context.partition_key, version)

    acid = AcidWarehouseResource(warehouse=warehouse)
    with DagsterInstance.from_ref(instance_ref) as instance:  # type: ignore[arg-type]
        result = materialize(
            [events],
            partition_key=day,
            instance=instance,
            resources={
                "acid_warehouse": acid,
                "io_manager": AcidTableIOManager(acid_warehouse=acid),
            },
            raise_on_error=False,
        )
    return result.success


@pytest.mark.slow
def test_thirty_partitions_in_parallel_all_commit(wh: Warehouse, instance: DagsterInstance) -> None:
    days = DAYS.get_partition_keys()
    assert len(days) == 30
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=4, mp_context=spawn) as pool:
        for version in (1, 2):  # version 1 creates the table; version 2 overwrites every day
            ref = instance.get_ref()
            jobs = [pool.submit(materialize_day, wh.root, ref, d, version) for d in days]
            assert [j.result() for j in jobs] == [True] * 30
            got = wh.table("events").scan().to_arrow()
            expected = pa.concat_tables([source(d, version) for d in days])
            assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(
                expected.to_pylist(), key=lambda r: r["id"]
            )
    table = wh.table("events")
    assert wh.list_partitions("events") == [f"ds={d}" for d in days]
    for day in days:  # each day: the first write's base and the overwrite's, nothing else
        assert [d[:5] for d in acid_dirs(f"{table.spec.location}/ds={day}")] == ["base_"] * 2
    assert instance.get_materialized_partitions(AssetKey("events")) == set(days)
