"""The change feed through Spark: ``spark.readStream.format("acid")`` with ``read_changes``
(offsets by write id, resumed from the checkpoint) and the batch read of a window."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col
from pyspark.sql.streaming import StreamingQuery

from acid_platform import Warehouse
from acid_platform_tests.engines.spark.conftest import STREAM_DEADLINE_S, finish, start_stream

EMP = (
    "CREATE TABLE emp (id int, name string, salary int) PARTITIONED BY (dept string) "
    "CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true')"
)
FEED_COLUMNS = [
    ("id", "int"),
    ("name", "string"),
    ("salary", "int"),
    ("dept", "string"),
    ("change_type", "string"),
    ("change_write_id", "bigint"),
]
Change = tuple[int, str, int, str, int | None]


def changes_of(wh: Warehouse, from_write_id: int = 0) -> list[Change]:
    """What the table layer's change feed says: (write id, type, id, name, salary)."""
    rows = wh.table("emp").changes(from_write_id, key="id").to_arrow().to_pylist()
    return sorted(
        (r["_write_id"], r["_change_type"], r["id"], r["name"], r["salary"]) for r in rows
    )


def feed_rows(wh: Warehouse) -> list[Change]:
    """What the stream delivered into ``emp_feed``, in the same form."""
    rows = wh.table("emp_feed").scan().to_arrow().to_pylist()
    return sorted(
        (r["change_write_id"], r["change_type"], r["id"], r["name"], r["salary"]) for r in rows
    )


def change_stream(spark: SparkSession) -> DataFrame:
    """emp's change feed as a stream, in the columns of ``emp_feed``."""
    return (
        spark.readStream.format("acid")
        .option("read_changes", "true")
        .option("key", "id")
        .load("emp")
        .drop("row__id")
        .withColumnRenamed("_change_type", "change_type")
        .withColumnRenamed("_write_id", "change_write_id")
    )


def windows(query: StreamingQuery) -> list[tuple[int, int]]:
    """The (start, end] write ids of each micro-batch of this run that read changes."""
    return [
        (offset(p["sources"][0]["startOffset"]), offset(p["sources"][0]["endOffset"]))
        for p in query.recentProgress
        if p["numInputRows"]
    ]


def offset(value: Any) -> int:
    """A progress report's offset (JSON text; ``null`` before a new query's first batch)."""
    parsed = json.loads(value) if isinstance(value, str) else value
    return int(parsed["write_id"]) if parsed else 0


def wait_for(wh: Warehouse, query: StreamingQuery, upto: int) -> None:
    """Poll until the feed holds every change up to write id ``upto``."""
    deadline = time.monotonic() + STREAM_DEADLINE_S
    want = [c for c in changes_of(wh) if c[0] <= upto]
    while feed_rows(wh) != want:
        assert query.exception() is None, query.exception()
        assert time.monotonic() < deadline, f"the stream did not deliver write id {upto}"
        time.sleep(0.2)


@pytest.mark.slow
def test_writes_stream_as_ordered_changes_and_a_restart_resumes_from_the_checkpoint(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    wh.sql(EMP)
    wh.create_table("emp_feed", FEED_COLUMNS)
    wh.sql(
        "INSERT INTO emp VALUES (1, 'Jerry', 5000, 'a'), (2, 'Tom', 8000, 'a'), (3, 'Ann', 1, 'b')"
    )
    wh.sql("UPDATE emp SET salary = 7000 WHERE id = 2")
    wh.sql("DELETE FROM emp WHERE id = 3")
    checkpoint = tmp_path / "checkpoint"
    df = change_stream(spark)

    first = finish(start_stream(df, checkpoint, "emp_feed"))
    assert windows(first) == [(0, 3)]
    assert feed_rows(wh) == changes_of(wh)
    assert (2, "update_postimage", 2, "Tom", 7000) in feed_rows(wh)

    # a running query: each write appears as it commits; then the query is stopped
    running = start_stream(df, checkpoint, "emp_feed", processingTime="200 milliseconds")
    try:
        wh.sql("INSERT INTO emp VALUES (4, 'Bob', 10, 'b')")
        wait_for(wh, running, 4)
        wh.sql("UPDATE emp SET salary = 11 WHERE id = 4")
        wait_for(wh, running, 5)
        deadline = time.monotonic() + STREAM_DEADLINE_S
        while not windows(running) or windows(running)[-1][1] < 5:  # progress lags the sink
            assert time.monotonic() < deadline, "no progress report of write id 5"
            time.sleep(0.2)
    finally:
        running.stop()
    # a micro-batch that stop() interrupted may leave its reader lease, which then expires after
    # its time-to-live (nothing heartbeats it any more); every lease a finished batch took is
    # closed with the batch (checked below, for the restarted query)
    interrupted = {lease["Lease ID"] for lease in wh.metastore.show_read_leases()}
    second = windows(running)
    assert second[0][0] == 3 and second[-1][1] == 5  # resumed at the checkpointed offset

    # stopped: a write, then a restart reads only what is new
    wh.sql("DELETE FROM emp WHERE dept = 'a'")
    third = finish(start_stream(df, checkpoint, "emp_feed"))
    assert windows(third) == [(5, 6)]
    assert feed_rows(wh) == changes_of(wh)  # no change lost, none twice
    left = {lease["Lease ID"] for lease in wh.metastore.show_read_leases()}
    assert left <= interrupted  # each batch's lease closed with the batch

    # across micro-batches, the change write ids only grow
    batches = [w for w in [*windows(first), *second, *windows(third)]]
    assert all(a[1] == b[0] for a, b in zip(batches, batches[1:], strict=False))
    by_batch: dict[int, list[int]] = {}
    for r in wh.table("emp_feed").scan(with_row_id=True).to_arrow().to_pylist():
        by_batch.setdefault(r["row__id"]["writeid"], []).append(r["change_write_id"])
    ordered = [by_batch[w] for w in sorted(by_batch)]
    assert all(max(a) < min(b) for a, b in zip(ordered, ordered[1:], strict=False))


def test_a_batch_read_of_changes_is_the_window_of_the_change_feed(
    spark: SparkSession, wh: Warehouse
) -> None:
    wh.sql(EMP)
    wh.sql(
        "INSERT INTO emp VALUES (1, 'Jerry', 5000, 'a'), (2, 'Tom', 8000, 'a'), (3, 'Ann', 1, 'b')"
    )
    wh.sql("UPDATE emp SET salary = 7000 WHERE id = 2")
    wh.sql("DELETE FROM emp WHERE id = 3")
    read = (
        spark.read.format("acid")
        .option("read_changes", "true")
        .option("key", "id")
        .option("starting_write_id", "1")
        .option("ending_write_id", "2")
        .load("emp")
    )
    assert read.columns == [
        "id", "name", "salary", "dept", "_change_type", "_write_id", "row__id"
    ]  # fmt: skip
    got = sorted((r["_write_id"], r["_change_type"], r["id"], r["salary"]) for r in read.collect())
    assert got == [(2, "update_postimage", 2, 7000), (2, "update_preimage", 2, 8000)]


def test_a_streaming_read_names_the_change_feed(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    wh.create_table("plain", [("id", "int")])
    query = start_stream(spark.readStream.format("acid").load("plain"), tmp_path / "chk", "plain")
    with pytest.raises(Exception, match="read_changes"):
        query.awaitTermination(STREAM_DEADLINE_S)


@pytest.mark.slow
def test_a_backlog_is_read_in_micro_batches_of_at_most_max_write_ids_per_trigger(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    """Ten write ids waiting, a cap of 3: four micro-batches (3, 3, 3, 1 write ids), every
    change delivered once; a later write is read by a resumed query within the cap."""
    t = wh.create_table("t", [("id", "int")])
    wh.create_table("t_feed", [("id", "int"), ("change_type", "string"), ("w", "bigint")])
    for i in range(10):
        t.insert([{"id": i}])
    df = (
        spark.readStream.format("acid")
        .option("read_changes", "true")
        .option("max_write_ids_per_trigger", "3")
        .load("t")
        .select("id", col("_change_type").alias("change_type"), col("_write_id").alias("w"))
    )
    checkpoint = tmp_path / "checkpoint"

    first = finish(start_stream(df, checkpoint, "t_feed"))

    assert windows(first) == [(0, 3), (3, 6), (6, 9), (9, 10)]  # ceil(10 / 3) batches
    got = sorted(
        (r["w"], r["change_type"], r["id"])
        for r in wh.table("t_feed").scan().to_arrow().to_pylist()
    )
    assert got == [(i + 1, "insert", i) for i in range(10)]  # no loss, no duplicate
    progress = first.lastProgress
    assert progress is not None and offset(progress["sources"][0]["latestOffset"]) == 10

    for i in range(10, 14):
        t.insert([{"id": i}])
    second = finish(start_stream(df, checkpoint, "t_feed"))
    assert windows(second) == [(10, 13), (13, 14)]
    ids = sorted(r["id"] for r in wh.table("t_feed").scan().to_arrow().to_pylist())
    assert ids == list(range(14))


def test_max_write_ids_per_trigger_must_be_a_positive_number() -> None:
    from acid_platform.engines.spark.options import SourceOptions
    from acid_platform.errors import InvalidChangeRangeError

    base = {"warehouse": "/w", "table": "t"}
    parsed = SourceOptions.parse({"max_write_ids_per_trigger": "5"}, base)
    assert parsed.max_write_ids_per_trigger == 5
    assert SourceOptions.parse({}, base).max_write_ids_per_trigger is None
    for bad in ("0", "-1", "x"):
        with pytest.raises(InvalidChangeRangeError, match="max_write_ids_per_trigger"):
            SourceOptions.parse({"max_write_ids_per_trigger": bad}, base)
