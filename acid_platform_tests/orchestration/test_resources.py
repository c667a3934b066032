"""The warehouse resource and the read resource: sessions, transactions, one snapshot per
load, lazy reads, leases released when the step ends; the Spark resource's settings."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

import os
import sys
import warnings

import pyarrow as pa
import pytest
from dagster import DagsterInstance, asset, materialize

from acid_platform import Warehouse
from acid_platform.errors import InvalidPartitionError
from acid_platform.orchestration import AcidReader, AcidWarehouseResource, spark_resource
from acid_platform.orchestration.resources import PROJECT_ROOT


@pytest.fixture
def sales(wh: Warehouse) -> str:
    wh.create_table(
        "sales", [("id", "int"), ("amount", "int")], partition_columns=[("ds", "string")]
    )
    wh.table("sales").insert(
        [{"id": i, "amount": i * 10, "ds": f"2024-01-0{1 + i % 2}"} for i in range(4)]
    )
    return "sales"


def test_a_load_reads_one_snapshot_however_late_it_is_read(
    sales: str, wh: Warehouse, resources: dict[str, object], instance: DagsterInstance
) -> None:
    seen: dict[str, pa.Table] = {}

    @asset
    def report(reader: AcidReader) -> None:
        with reader.snapshot(sales) as snap:
            day = snap.load(sales, columns=["id"], partition={"ds": "2024-01-01"})
            whole = snap.load(sales, where="amount >= 20")
            wh.table(sales).insert([{"id": 9, "amount": 90, "ds": "2024-01-01"}])  # after
            seen["day"], seen["whole"] = day.to_arrow(), whole.to_arrow()
        seen["later"] = reader.load(sales, partition="ds=2024-01-01").to_arrow()

    assert materialize([report], resources=resources, instance=instance).success
    assert seen["day"].column_names == ["id"]
    assert sorted(seen["day"].column("id").to_pylist()) == [0, 2]
    assert sorted(seen["whole"].column("id").to_pylist()) == [2, 3]
    assert sorted(seen["later"].column("id").to_pylist()) == [0, 2, 9]
    assert wh.metastore.show_read_leases() == []  # released when the step ended


def test_a_partition_must_be_the_tables(sales: str, resource: AcidWarehouseResource) -> None:
    reader = AcidReader(acid_warehouse=resource)
    with pytest.raises(InvalidPartitionError, match="no partition column 'day'"):
        reader.load(sales, partition={"day": "2024-01-01"})
    resource.close()


def test_the_warehouse_resource_hands_out_tables_and_transactions(
    sales: str, resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    @asset
    def restate(acid_warehouse: AcidWarehouseResource) -> None:
        with acid_warehouse.transaction():
            acid_warehouse.table(sales).update({"amount": "amount * 2"}, "ds = '2024-01-01'")
            acid_warehouse.table(sales).delete("id = 3")
        acid_warehouse.sql("INSERT INTO sales PARTITION (ds='2024-01-03') VALUES (7, 70)")

    assert materialize([restate], resources=resources, instance=instance).success
    rows = sorted((r["id"], r["amount"]) for r in wh.table(sales).scan().to_arrow().to_pylist())
    assert rows == [(0, 0), (1, 10), (2, 40), (7, 70)]


def test_a_failed_transaction_leaves_nothing(
    sales: str, resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    @asset
    def broken(acid_warehouse: AcidWarehouseResource) -> None:
        with acid_warehouse.transaction():
            acid_warehouse.table(sales).delete("ds = '2024-01-01'")
            raise RuntimeError("halfway")

    assert not materialize(
        [broken], resources=resources, instance=instance, raise_on_error=False
    ).success
    assert wh.table(sales).scan().to_arrow().num_rows == 4


def test_spark_workers_run_this_python_and_import_the_project() -> None:
    conf = spark_resource("local[2]", {"spark.sql.shuffle.partitions": "2"}).spark_config
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.executorEnv.PYTHONPATH"].split(":")[0] == PROJECT_ROOT
    assert conf["spark.sql.shuffle.partitions"] == "2"
    assert os.path.isfile(os.path.join(PROJECT_ROOT, "acid_platform", "__init__.py"))


def test_one_way_to_the_warehouse_and_one_to_a_snapshot(
    sales: str, resource: AcidWarehouseResource, wh: Warehouse
) -> None:
    """``get_warehouse()`` and ``AcidReader.snapshot()`` warn about nothing; the other ways
    (``open()``, ``open_warehouse()``, ``AcidWarehouseResource.snapshot()``) still work one
    release more, with a DeprecationWarning naming the way to use and pointing at the caller."""
    reader = AcidReader(acid_warehouse=resource)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert resource.get_warehouse() is resource.get_warehouse()
        with reader.snapshot(sales) as snap:
            assert snap.load(sales).to_arrow().num_rows == 4

    with pytest.warns(DeprecationWarning, match=r"open_warehouse\(\) is deprecated: use ge") as w:
        context = resource.open_warehouse()
    assert w[0].filename == __file__
    with context as own:
        assert own is not resource.get_warehouse() and own.table_exists(sales)
    with pytest.warns(DeprecationWarning, match=r"\.open\(\) is deprecated: use get_warehouse"):
        resource.open(create=False).close()
    with pytest.warns(DeprecationWarning, match=r"\.snapshot\(\) is deprecated: use AcidReader"):
        held = resource.snapshot(sales)
    assert held.load(sales).to_arrow().num_rows == 4
    assert wh.metastore.show_read_leases() != []
    resource.close()  # as when the step ends: the snapshot handed out is released
    assert wh.metastore.show_read_leases() == []
