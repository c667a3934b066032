"""The IO manager's write modes on unpartitioned assets, pyarrow and pandas, and the
metadata each materialization carries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from dagster import AssetIn, DagsterInstance, asset, materialize

from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource
from acid_platform.orchestration.frames import Frame
from acid_platform.orchestration.handlers import (
    AcidTypeHandler,
    ArrowTypeHandler,
    PandasTypeHandler,
)
from acid_platform.warehouse import Warehouse
from acid_platform_tests.orchestration.conftest import latest_metadata


def rows(wh: Warehouse, table: str, key: str = "id") -> list[dict[str, Any]]:
    return sorted(wh.table(table).scan().to_arrow().to_pylist(), key=lambda r: r[key])


def test_overwrite_replaces_the_table_and_reports_what_it_wrote(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    batch = {"n": 0}

    @asset
    def people() -> pa.Table:
        batch["n"] += 1
        n = batch["n"]
        return pa.table({"id": [1, 2, 3], "name": [f"v{n}"] * 3})

    assert materialize([people], resources=resources, instance=instance).success
    assert materialize([people], resources=resources, instance=instance).success
    assert rows(wh, "people") == [{"id": i, "name": "v2"} for i in (1, 2, 3)]
    meta = latest_metadata(instance, "people")
    assert meta["dagster/table_name"] == "default.people"
    assert meta["dagster/row_count"] == 3
    assert meta["operation"] == "overwrite"
    assert meta["rows_inserted"] == 3 and meta["rows_deleted"] == 0
    assert meta["write_id"] == 2 and isinstance(meta["txn_id"], int)
    assert [d.rsplit("/", 1)[-1] for d in meta["dirs_written"]] == ["base_0000002"]
    assert meta["delta_count"] == 0 and meta["table_bytes"] > 0
    assert meta["delete_ratio"] == 0.0
    schema = meta["dagster/column_schema"]
    assert [(c.name, c.type) for c in schema.columns] == [("id", "bigint"), ("name", "string")]


@pytest.mark.slow
def test_append_adds_rows_and_the_mode_can_be_overridden_at_run_time(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    @asset(metadata={"write_mode": "append"}, key_prefix=["sales"])
    def orders(context) -> pd.DataFrame:  # type: ignore[no-untyped-def]
        if context.run.tags.get("replace") == "yes":
            context.add_output_metadata({"write_mode": "overwrite"})
        return pd.DataFrame({"id": [len(context.run.run_id)], "amount": [1.5]})

    for _ in range(2):
        assert materialize([orders], resources=resources, instance=instance).success
    assert wh.table("sales.orders").scan().to_arrow().num_rows == 2
    meta = latest_metadata(instance, "sales/orders")
    assert meta["operation"] == "append" and meta["delta_count"] == 2
    assert meta["dagster/row_count"] == 2
    replaced = materialize(
        [orders], resources=resources, instance=instance, tags={"replace": "yes"}
    )
    assert replaced.success
    assert wh.table("sales.orders").scan().to_arrow().num_rows == 1
    assert latest_metadata(instance, "sales/orders")["operation"] == "overwrite"


def test_merge_updates_inserts_and_deletes_on_keys(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    version = {"n": 0}

    @asset(
        metadata={
            "write_mode": "merge",
            "key_columns": ["id"],
            "merge_options": {"delete_condition": "s.closed"},
        }
    )
    def stores() -> pa.Table:
        version["n"] += 1
        if version["n"] == 1:
            return pa.table({"id": [1, 2], "city": ["a", "b"], "closed": [False, False]})
        return pa.table({"id": [2, 3, 1], "city": ["B", "c", "a"], "closed": [False, False, True]})

    assert materialize([stores], resources=resources, instance=instance).success
    assert materialize([stores], resources=resources, instance=instance).success
    assert rows(wh, "stores") == [
        {"id": 2, "city": "B", "closed": False},
        {"id": 3, "city": "c", "closed": False},
    ]
    meta = latest_metadata(instance, "stores")
    assert (meta["rows_inserted"], meta["rows_updated"], meta["rows_deleted"]) == (1, 1, 1)
    assert meta["dagster/row_count"] == 2
    assert meta["delete_ratio"] > 0


def test_delete_removes_the_rows_whose_keys_the_output_names(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    wh.create_table("users", [("id", "int"), ("email", "string")])
    wh.table("users").insert([{"id": i, "email": f"u{i}@x"} for i in range(5)])

    @asset(metadata={"write_mode": "delete", "key_columns": "id"})
    def users() -> pa.Table:
        return pa.table({"id": [1, 3, 3, 9]})

    assert materialize([users], resources=resources, instance=instance).success
    assert [r["id"] for r in rows(wh, "users")] == [0, 2, 4]
    meta = latest_metadata(instance, "users")
    assert meta["rows_deleted"] == 2 and meta["dagster/row_count"] == 3


def test_loads_read_one_snapshot_with_the_columns_asked_for(
    resources: dict[str, object], instance: DagsterInstance
) -> None:
    seen: dict[str, Any] = {}

    @asset
    def source() -> pa.Table:
        return pa.table({"id": [1, 2], "name": ["a", "b"], "secret": ["x", "y"]})

    @asset(ins={"source": AssetIn(metadata={"columns": ["id", "name"]})})
    def as_arrow(source: pa.Table) -> None:
        seen["arrow"] = source

    @asset(ins={"source": AssetIn()})
    def as_pandas(source: pd.DataFrame) -> None:
        seen["pandas"] = source

    result = materialize([source, as_arrow, as_pandas], resources=resources, instance=instance)
    assert result.success
    assert seen["arrow"].column_names == ["id", "name"]
    assert sorted(seen["arrow"].column("id").to_pylist()) == [1, 2]
    assert isinstance(seen["pandas"], pd.DataFrame) and len(seen["pandas"]) == 2


class CountingPandasHandler(PandasTypeHandler):
    """The pandas handler, counting the outputs it converts to Arrow."""

    def __init__(self) -> None:
        self.conversions = 0

    def frame(self, wh: Warehouse, obj: Any) -> Frame:
        self.conversions += 1
        return super().frame(wh, obj)


def test_a_pandas_output_is_converted_to_arrow_once_per_write(
    resource: AcidWarehouseResource, instance: DagsterInstance, wh: Warehouse
) -> None:
    # Its column types are inferred once: not again for the column check, nor for a new table.
    pandas = CountingPandasHandler()

    class CountingIOManager(AcidTableIOManager):
        @staticmethod
        def type_handlers() -> Sequence[AcidTypeHandler[Any]]:
            return [ArrowTypeHandler(), pandas]

    @asset(metadata={"write_mode": "append"})
    def visits() -> pd.DataFrame:
        return pd.DataFrame({"ID": [1, 2], "page": ["a", "b"]})

    io = {"acid_warehouse": resource, "io_manager": CountingIOManager(acid_warehouse=resource)}
    assert materialize([visits], resources=io, instance=instance).success  # creates the table
    assert pandas.conversions == 1
    assert materialize([visits], resources=io, instance=instance).success
    assert pandas.conversions == 2
    assert rows(wh, "visits") == [
        {"id": i, "page": p} for i, p in ((1, "a"), (1, "a"), (2, "b"), (2, "b"))
    ]


@pytest.mark.slow
def test_an_insert_only_parquet_table_is_created_appended_and_overwritten(
    resources: dict[str, object], instance: DagsterInstance, wh: Warehouse
) -> None:
    meta_in = {
        "write_mode": "append",
        "table_properties": {"transactional_properties": "insert_only"},
        "stored_as": "parquet",
    }

    @asset(metadata=meta_in)
    def events(context) -> pa.Table:  # type: ignore[no-untyped-def]
        if context.run.tags.get("replace") == "yes":
            context.add_output_metadata({"write_mode": "overwrite"})
        return pa.table({"id": [len(context.run.run_id)], "v": ["x"]})

    for _ in range(2):
        assert materialize([events], resources=resources, instance=instance).success
    spec = wh.table("events").spec
    assert spec.is_insert_only and spec.file_format == "parquet"
    meta = latest_metadata(instance, "events")
    assert meta["dagster/row_count"] == 2 and meta["delta_count"] == 2
    written = [d.rsplit("/", 1)[-1] for d in meta["dirs_written"]]
    assert written == ["delta_0000002_0000002_0000"]
    import pyarrow.parquet as pq

    plain = pq.read_table(f"{spec.location}/delta_0000002_0000002_0000/000000_0")
    assert plain.column_names == ["id", "v"]  # Hive's MM file: the columns, nothing else
    replaced = materialize(
        [events], resources=resources, instance=instance, tags={"replace": "yes"}
    )
    assert replaced.success
    assert wh.table("events").scan().to_arrow().num_rows == 1
    assert latest_metadata(instance, "events")["dagster/row_count"] == 1
