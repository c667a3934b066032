"""Bad input fails with a typed error naming what is wrong, and nothing is written."""

# no `from __future__ import annotations`: Dagster reads the annotations of assets

from typing import Any

import pyarrow as pa
import pytest
from dagster import (
    AssetExecutionContext,
    DagsterInstance,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from acid_platform import Warehouse
from acid_platform.errors import (
    AssetMetadataError,
    InvalidPartitionError,
    SchemaMismatchError,
    UnknownColumnError,
)
from acid_platform_tests.helpers import data_files

REGIONS = StaticPartitionsDefinition(["us", "eu"])


def fails(
    assets: list[Any], resources: dict[str, object], instance: DagsterInstance, **kwargs: Any
) -> None:
    materialize(assets, resources=resources, instance=instance, **kwargs)


@pytest.fixture
def people(wh: Warehouse) -> str:
    wh.create_table("people", [("id", "int"), ("name", "string")])
    wh.table("people").insert([{"id": 1, "name": "a"}])
    return "people"


@pytest.mark.parametrize(
    ("rows", "error", "words"),
    [
        ({"id": [2], "name": ["b"], "age": [3]}, UnknownColumnError, "age"),
        ({"id": ["two"], "name": ["b"]}, SchemaMismatchError, "id"),
        ({"id": [2]}, SchemaMismatchError, "name"),
    ],
    ids=["unknown column", "wrong type", "missing column"],
)
def test_a_wrong_schema_writes_nothing(
    people: str,
    wh: Warehouse,
    resources: dict[str, object],
    instance: DagsterInstance,
    rows: dict[str, list[Any]],
    error: type[Exception],
    words: str,
) -> None:
    before = data_files(wh.root)

    @asset(name=people, metadata={"write_mode": "append"})
    def out() -> pa.Table:
        return pa.table(rows)

    with pytest.raises(error, match=words):
        fails([out], resources, instance)
    assert data_files(wh.root) == before
    assert wh.table(people).scan().to_arrow().to_pylist() == [{"id": 1, "name": "a"}]


@pytest.mark.parametrize(
    ("metadata", "words"),
    [({}, "no 'partition_expr'"), ({"partition_expr": "country"}, "'country' is not a column")],
    ids=["no partition_expr", "partition_expr names no column"],
)
def test_a_partitioned_asset_without_its_partition_column_creates_nothing(
    wh: Warehouse,
    resources: dict[str, object],
    instance: DagsterInstance,
    metadata: dict[str, str],
    words: str,
) -> None:
    @asset(partitions_def=REGIONS, metadata=metadata)
    def regional(context: AssetExecutionContext) -> pa.Table:
        return pa.table({"region": [context.partition_key]})

    with pytest.raises(AssetMetadataError, match=words):
        fails([regional], resources, instance, partition_key="us")
    assert not wh.table_exists("regional")


def test_rows_outside_the_partition_are_refused(
    wh: Warehouse, resources: dict[str, object], instance: DagsterInstance
) -> None:
    target = {"region": "us"}

    @asset(partitions_def=REGIONS, metadata={"partition_expr": "region"})
    def regional(context: AssetExecutionContext) -> pa.Table:
        return pa.table({"id": [1, 2], "region": [context.partition_key, target["region"]]})

    with pytest.raises(InvalidPartitionError, match="1 output row"):
        fails([regional], resources, instance, partition_key="eu")
    assert not wh.table_exists("regional")  # refused before the table was created
    assert materialize(
        [regional], partition_key="us", resources=resources, instance=instance
    ).success
    before = data_files(wh.root)
    with pytest.raises(InvalidPartitionError, match="region"):
        fails([regional], resources, instance, partition_key="eu")
    assert data_files(wh.root) == before


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ({"write_mode": "merge"}, "'merge' needs key_columns"),
        ({"write_mode": "delete"}, "'delete' needs key_columns"),
        ({"write_mode": "upsert"}, "unknown write_mode 'upsert'"),
        ({"write_mode": "merge", "key_columns": 3}, "key_columns must be"),
        ({"write_mode": "merge", "key_columns": "id", "merge_options": {"x": 1}}, "'x'"),
    ],
    ids=["merge without keys", "delete without keys", "unknown mode", "bad keys", "bad clause"],
)
def test_bad_write_metadata_creates_nothing(
    wh: Warehouse,
    resources: dict[str, object],
    instance: DagsterInstance,
    metadata: dict[str, object],
    words: str,
) -> None:
    @asset(metadata=metadata)
    def keyed() -> pa.Table:
        return pa.table({"id": [1]})

    with pytest.raises(AssetMetadataError, match=words):
        fails([keyed], resources, instance)
    assert not wh.table_exists("keyed")


def test_merge_keys_must_be_columns(
    people: str, wh: Warehouse, resources: dict[str, object], instance: DagsterInstance
) -> None:
    before = data_files(wh.root)

    @asset(name=people, metadata={"write_mode": "merge", "key_columns": ["uid"]})
    def out() -> pa.Table:
        return pa.table({"id": [1], "name": ["z"]})

    with pytest.raises(SchemaMismatchError, match="uid"):
        fails([out], resources, instance)
    assert data_files(wh.root) == before
