"""The IO manager's illustrative SELECT of a slice is built as a syntax tree: a partition key
is a literal, never pasted into the text (issue 13, item 9)."""

from __future__ import annotations

import datetime as dt

import sqlglot
from dagster._core.definitions.partitions.utils import TimeWindow
from dagster._core.storage.db_io_manager import TablePartitionDimension, TableSlice
from sqlglot import exp

from acid_platform.orchestration.connection import AcidConnection
from acid_platform.orchestration.io_manager import AcidDbClient


def test_partition_keys_are_literals() -> None:
    client = AcidDbClient(AcidConnection(None, None, "append", False))  # type: ignore[arg-type]
    hostile = "eu'); DROP TABLE t; --"
    text = client.get_select_statement(
        TableSlice(
            table="t",
            schema="sales",
            columns=["a"],
            partition_dimensions=[
                TablePartitionDimension(
                    "ds", TimeWindow(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2))
                ),
                TablePartitionDimension("region", [hostile, "us"]),
            ],
        )
    )
    tree = sqlglot.parse_one(text, read="hive")  # one statement, as built
    assert isinstance(tree, exp.Select) and tree.find(exp.Drop) is None
    values = {lit.this for lit in tree.find_all(exp.Literal)}
    assert {hostile, "us", "2024-01-01 00:00:00"} <= values
    assert text.startswith("SELECT a FROM sales.t WHERE ds >= ")
    whole = client.get_select_statement(TableSlice(table="t", schema="sales"))
    assert whole == "SELECT * FROM sales.t"
