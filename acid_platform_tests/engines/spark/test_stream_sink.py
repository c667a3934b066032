"""The Structured Streaming sink: ``df.writeStream.format("acid")``, one transaction per
micro-batch, exactly once across stops, restarts and a replayed batch."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col
from pyspark.sql.streaming import StreamingQuery

from acid_platform import Warehouse
from acid_platform.engines.spark.options import SourceOptions, warehouse_options
from acid_platform.engines.spark.stream_writer import (
    SOURCE_PREFIX,
    StreamCommitMessage,
    abort_batch,
    batch_source_key,
    begin_batch,
    commit_batch,
    sink_agent,
)
from acid_platform.engines.spark.writer import write_rows
from acid_platform.errors import EngineError
from acid_platform.table import Table
from acid_platform_tests.engines.spark.conftest import STREAM_DEADLINE_S, finish, start_stream
from acid_platform_tests.helpers import acid_dirs

SOURCE_SCHEMA = "id INT, v STRING"


def land(src: Path, name: str, ids: range) -> None:
    """A JSON-lines file of the rows ``ids`` in the source directory (written, then renamed in,
    so the file source never sees half a file)."""
    tmp = src.parent / f".{name}"
    tmp.write_text("".join(json.dumps({"id": i, "v": f"v{i}"}) + "\n" for i in ids))
    tmp.rename(src / name)


def source_rows(src: Path) -> list[tuple[int, str]]:
    """Every row of every landed file (what the table must hold, once each)."""
    rows = [json.loads(line) for f in src.iterdir() for line in f.read_text().splitlines()]
    return sorted((r["id"], r["v"]) for r in rows)


def table_rows(wh: Warehouse, name: str) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in wh.table(name).scan().to_arrow().to_pylist())


def stream_of(spark: SparkSession, src: Path) -> DataFrame:
    """The landed files as a stream, one file per micro-batch."""
    return spark.readStream.schema(SOURCE_SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))


def run_available_now(df: DataFrame, checkpoint: Path, table: str) -> StreamingQuery:
    """Run the query until it has processed everything available, then return it."""
    return finish(start_stream(df, checkpoint, table))


def batch_ids(query: StreamingQuery) -> list[int]:
    """The micro-batches this run of the query processed (with input rows)."""
    return [p["batchId"] for p in query.recentProgress if p["numInputRows"]]


def txn_states(wh: Warehouse) -> Counter[str]:
    return Counter(r["Transaction State"] for r in wh.metastore.show_transactions())


def _logged(t: Table, checkpoint: Path) -> bool:
    """Whether Spark's commit log has the last batch the sink committed into ``t``."""
    last = max(int(str(s.info["batch_id"])) for s in t.committed_sources())
    return (checkpoint / "commits" / str(last)).exists()


@pytest.mark.slow
def test_stopped_restarted_and_replayed_batches_land_exactly_once(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    src, checkpoint = tmp_path / "src", tmp_path / "checkpoint"
    src.mkdir()
    for k in range(3):
        land(src, f"f{k}.json", range(10 * k, 10 * k + 10))
    df = stream_of(spark, src)

    # run 1: three files, three micro-batches, three transactions
    first = run_available_now(df, checkpoint, "t")
    assert batch_ids(first) == [0, 1, 2]
    assert table_rows(wh, "t") == source_rows(src)
    query_id = str(first.id)
    committed = t.committed_sources()
    assert [s.key for s in committed] == [batch_source_key(query_id, b) for b in (0, 1, 2)]
    assert [s.info["rows"] for s in committed] == [10, 10, 10]
    assert len({s.write_id for s in committed}) == 3  # one write id (transaction) per batch

    # run 2, a running query: files land while it runs; it is stopped, then restarted below
    running = start_stream(df, checkpoint, "t", processingTime="200 milliseconds")
    try:
        assert running.id == first.id  # the checkpoint keeps the query's identity
        land(src, "f3.json", range(30, 40))
        land(src, "f4.json", range(40, 50))
        deadline = time.monotonic() + STREAM_DEADLINE_S
        # until f3 and f4 are in the table and Spark has logged the batch that committed them
        # (it writes the batch's commit log after the sink's commit)
        while table_rows(wh, "t") != source_rows(src) or not _logged(t, checkpoint):
            assert running.exception() is None, running.exception()
            assert time.monotonic() < deadline, "the running query did not load f3 and f4"
            time.sleep(0.2)
    finally:
        running.stop()
    assert table_rows(wh, "t") == source_rows(src)
    last = max(int(str(s.info["batch_id"])) for s in t.committed_sources())
    assert last == 4

    # replay: Spark forgets it committed the last batch and re-runs it on restart
    commits = checkpoint / "commits"
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    aborted_before = txn_states(wh)["ABORTED"]
    land(src, "f5.json", range(50, 60))
    third = run_available_now(df, checkpoint, "t")
    assert batch_ids(third) == [last, last + 1]  # the replayed batch ran again, then f5
    assert txn_states(wh)["ABORTED"] == aborted_before + 1  # the replay's txn, aborted
    assert txn_states(wh)["OPEN"] == 0

    rows = table_rows(wh, "t")
    assert rows == source_rows(src)  # no loss
    assert len(rows) == len(set(rows)) == 60  # no duplicate
    keys = [s.key for s in t.committed_sources()]
    assert keys == [batch_source_key(query_id, b) for b in range(last + 2)]
    assert all(k.startswith(f"{SOURCE_PREFIX}:") for k in keys)


@pytest.mark.slow
def test_a_failed_micro_batch_aborts_its_transaction(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    t = wh.create_table("nn", [("id", "int"), ("v", "string")], not_null=["v"])
    src, checkpoint = tmp_path / "src", tmp_path / "checkpoint"
    src.mkdir()
    (src / "bad.json").write_text('{"id": 1, "v": "ok"}\n{"id": 2}\n')
    query = start_stream(stream_of(spark, src), checkpoint, "nn")
    with pytest.raises(Exception, match="NOT NULL|NotNullViolation"):
        query.awaitTermination(STREAM_DEADLINE_S)
    assert t.scan().to_arrow().num_rows == 0 and t.committed_sources() == []
    states = txn_states(wh)
    assert states["OPEN"] == 0 and states["ABORTED"] == 1  # aborted, not left to time out


def test_the_sink_needs_an_acid_table_with_the_streams_columns(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    wh.create_table("narrow", [("id", "int")])
    src = tmp_path / "src"
    src.mkdir()
    land(src, "f.json", range(3))
    query = start_stream(stream_of(spark, src), tmp_path / "checkpoint", "narrow")
    with pytest.raises(Exception, match="has no column"):
        query.awaitTermination(STREAM_DEADLINE_S)
    assert txn_states(wh)["OPEN"] == 0


# --------------------------------------------------------------------------- without Spark:
# the sink's phases called as Spark's processes call them


def sink_options(wh: Warehouse, table: str, checkpoint: str = "/chk/q") -> SourceOptions:
    return SourceOptions.parse(
        {"path": table, "checkpointLocation": checkpoint}, warehouse_options(wh)
    )


def run_batch(options: SourceOptions, ids: range, query_id: str, batch_id: int) -> int:
    """One micro-batch's three phases in this process; returns its txn id."""
    spec = options.spec()
    job = begin_batch(options, spec, ["id", "v"], overwrite=False)
    rows = pa.record_batch({"id": list(ids), "v": [f"v{i}" for i in ids]})
    report = write_rows(job, iter([rows]))
    commit_batch(options, spec, [StreamCommitMessage(report, job, query_id, batch_id)], batch_id)
    return job.txn_id


def test_a_batch_committed_already_is_a_no_op_and_its_txn_aborted(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int"), ("v", "string")])
    options = sink_options(wh, "t")
    first = run_batch(options, range(3), "q1", 0)
    replay = run_batch(options, range(3), "q1", 0)
    assert wh.metastore.get_txn_state(first).value == "committed"
    assert wh.metastore.get_txn_state(replay).value == "aborted"
    other_query = run_batch(options, range(3, 5), "q2", 0)  # another query's batch 0 is new
    assert wh.metastore.get_txn_state(other_query).value == "committed"
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3, 4]
    assert [s.key for s in t.committed_sources()] == [
        batch_source_key("q1", 0),
        batch_source_key("q2", 0),
    ]


def test_the_sinks_txn_left_open_is_aborted_by_its_next_batch_only(wh: Warehouse) -> None:
    wh.create_table("t", [("id", "int"), ("v", "string")])
    options, other = sink_options(wh, "t"), sink_options(wh, "t", "/chk/other")
    spec = options.spec()
    agent = sink_agent(options, spec)
    assert agent is not None and agent != sink_agent(other, spec)
    left = wh.metastore.open_txn(agent_info=agent)  # a batch whose driver died
    others = wh.metastore.open_txn(agent_info=sink_agent(other, spec))  # another query's
    job = begin_batch(options, spec, ["id", "v"], overwrite=False)
    assert wh.metastore.open_txns_by_agent(agent) == [job.txn_id]
    assert wh.metastore.get_txn_state(left).value == "aborted"
    assert wh.metastore.get_txn_state(others).value == "open"
    abort_batch(options, spec, [None], 7)  # a batch whose tasks all failed: found by agent
    assert wh.metastore.get_txn_state(job.txn_id).value == "aborted"
    assert wh.metastore.open_txns_by_agent(agent) == []


def test_tasks_of_another_batch_or_txn_are_refused_and_the_txn_aborted(wh: Warehouse) -> None:
    wh.create_table("t", [("id", "int"), ("v", "string")])
    options = sink_options(wh, "t")
    spec = options.spec()
    job = begin_batch(options, spec, ["id", "v"], overwrite=False)
    report = write_rows(job, iter([pa.record_batch({"id": [1], "v": ["a"]})]))
    with pytest.raises(EngineError, match="not one batch"):
        commit_batch(options, spec, [StreamCommitMessage(report, job, "q", 3)], 4)
    assert wh.metastore.get_txn_state(job.txn_id).value == "aborted"
    assert wh.table("t").scan().to_arrow().num_rows == 0


@pytest.mark.slow
def test_complete_mode_replaces_the_tables_rows_each_batch(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    t = wh.create_table("agg", [("v", "string"), ("n", "bigint")])
    src = tmp_path / "src"
    src.mkdir()
    land(src, "f0.json", range(5))
    land(src, "f1.json", range(5, 10))
    counts = stream_of(spark, src).groupBy((col("id") % 2).cast("string").alias("v")).count()
    query = (
        counts.withColumnRenamed("count", "n")
        .writeStream.format("acid")
        .outputMode("complete")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start("agg")
    )
    assert batch_ids(finish(query)) == [0, 1]
    assert sorted((r["v"], r["n"]) for r in t.scan().to_arrow().to_pylist()) == [("0", 5), ("1", 5)]
    assert acid_dirs(t.location.path) == ["base_0000001", "base_0000002"]  # INSERT OVERWRITEs


def test_a_batch_into_a_partitioned_table_registers_its_partitions(wh: Warehouse) -> None:
    t = wh.create_table("p", [("id", "int"), ("v", "string")], partition_columns=[("ds", "string")])
    options = sink_options(wh, "p")
    spec = options.spec()
    job = begin_batch(options, spec, ["id", "v", "ds"], overwrite=False)
    rows = pa.record_batch({"id": [1, 2], "v": ["a", "b"], "ds": ["d1", "d2"]})
    message = StreamCommitMessage(write_rows(job, iter([rows])), job, "q", 0)
    commit_batch(options, spec, [message], 0)
    assert sorted(wh.metastore.list_partitions("default", "p")) == ["ds=d1", "ds=d2"]
    assert sorted((r["id"], r["ds"]) for r in t.scan().to_arrow().to_pylist()) == [
        (1, "d1"),
        (2, "d2"),
    ]
    (source,) = t.committed_sources()
    assert source.info == {"query_id": "q", "batch_id": 0, "rows": 2, "checkpoint": "/chk/q"}
