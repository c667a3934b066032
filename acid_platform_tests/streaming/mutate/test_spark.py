"""The Mutation API on Spark: change sets prepared as the documentation prescribes and applied by
coordinators on the executors, in one transaction over two tables — equal, ROW__ID for ROW__ID,
to the same changes as SQL MERGE; an abort leaves nothing; an ordering error on an executor
reaches the driver as its typed error."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from acid_platform import Warehouse
from acid_platform.errors import RecordSequenceError
from acid_platform.streaming.mutate import MutatorClient
from acid_platform.streaming.mutate.files import written_files
from acid_platform.streaming.mutate.spark import apply_change_set, prepare_change_set
from acid_platform_tests.helpers import open_warehouse
from acid_platform_tests.streaming.mutate.conftest import acct_rows, make_acct, with_row_ids

pytestmark = pytest.mark.slow

MERGE = (
    "MERGE INTO {t} USING changes_{t} c ON {t}.id = c.id "
    "WHEN MATCHED AND c.mutation = 'U' THEN UPDATE SET name = c.name, bal = c.bal "
    "WHEN MATCHED AND c.mutation = 'D' THEN DELETE "
    "WHEN NOT MATCHED AND c.mutation = 'I' THEN INSERT VALUES (c.id, c.name, c.bal{region})"
)


def _tables(wh: Warehouse) -> None:
    make_acct(wh, "a")
    make_acct(wh, "b", buckets=0, partitioned=False)


def _changes(partitioned: bool) -> pa.Table:
    rows: list[dict[str, Any]] = []
    for r in acct_rows(40):
        if r["id"] % 3 == 0:
            rows.append({"mutation": "U", **r, "name": "changed", "bal": Decimal("7.25")})
        elif r["id"] % 5 == 1:
            rows.append({"mutation": "D", **r})
    rows += [{"mutation": "I", **r} for r in acct_rows(15, first=100)]
    rows.append({"mutation": "I", **acct_rows(1, first=4)[0]})  # exists: changes nothing
    if not partitioned:
        rows = [{k: v for k, v in r.items() if k != "region"} for r in rows]
    return pa.Table.from_pylist(rows)


def _merged(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The same changes as SQL MERGE, in a warehouse built the same way."""
    with open_warehouse(root) as wh:
        _tables(wh)
        for name, partitioned in (("a", True), ("b", False)):
            changes = _changes(partitioned)
            wh.create_table(f"changes_{name}", changes.schema).insert(changes)
            wh.sql(MERGE.format(t=name, region=", c.region" if partitioned else ""))
        return {n: with_row_ids(wh.table(n)) for n in ("a", "b")}


def test_executors_apply_one_transaction_over_two_tables_equal_to_merge(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    _tables(wh)
    before = {n: with_row_ids(wh.table(n)) for n in ("a", "b")}
    txn = MutatorClient(wh, ["a", "b"]).new_transaction().begin()
    reports = []
    for name, partitioned in (("a", True), ("b", False)):
        changes = spark.createDataFrame(_changes(partitioned))
        prepared = prepare_change_set(spark, txn, name, changes, key=["id"], partitions=3)
        reports += apply_change_set(prepared, txn.table(name))
    writers = {r.writer for r in reports if r.files}
    assert writers and not any(w.endswith(f":{os.getpid()}") for w in writers)  # executors
    assert {n: with_row_ids(wh.table(n)) for n in ("a", "b")} == before
    txn.commit(reports)
    assert {n: with_row_ids(wh.table(n)) for n in ("a", "b")} == _merged(tmp_path / "merge")


def test_an_abort_after_the_executors_wrote_leaves_nothing(
    spark: SparkSession, wh: Warehouse
) -> None:
    _tables(wh)
    before = {n: with_row_ids(wh.table(n)) for n in ("a", "b")}
    txn = MutatorClient(wh, ["a", "b"]).new_transaction().begin()
    for name, partitioned in (("a", True), ("b", False)):
        changes = spark.createDataFrame(_changes(partitioned))
        prepared = prepare_change_set(spark, txn, name, changes, key=["id"])
        assert apply_change_set(prepared, txn.table(name))
    txn.abort()
    assert {n: with_row_ids(wh.table(n)) for n in ("a", "b")} == before


def test_an_ordering_error_on_an_executor_is_raised_typed_and_nothing_is_written(
    spark: SparkSession, wh: Warehouse
) -> None:
    _tables(wh)
    before = with_row_ids(wh.table("a"))
    txn = MutatorClient(wh, ["a"]).new_transaction().begin()
    changes = spark.createDataFrame(_changes(True)).where("mutation = 'U'")
    prepared = prepare_change_set(spark, txn, "a", changes, key=["id"], partitions=1)
    backwards = prepared.sortWithinPartitions(F.col("region"), F.col("row__id").desc())
    with pytest.raises(RecordSequenceError, match="out of ROW__ID order"):
        apply_change_set(backwards, txn.table("a"))
    assert written_files(txn.table("a")) == []  # the failed task removed its files
    txn.abort()
    assert with_row_ids(wh.table("a")) == before
