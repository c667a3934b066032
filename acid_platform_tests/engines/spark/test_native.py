"""The ordinary Python API runs on Spark when it is handed Spark DataFrames.

After ``wh.register_spark(spark)``, ``Table.insert`` and ``Table.merge`` with a DataFrame run on
Spark (executors write the files; the driver only commits). Every scenario runs the same
statements twice — on Spark with DataFrames, and on the embedded engine with the same rows as
Arrow — and compares rows, counts, statement ids and the directories written. The MERGE runs
both ways Spark plans it: with a source small enough to broadcast (the target is semi-joined
where it is read) and with a larger one (one shuffled join, broadcasting off).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from acid_platform import Warehouse
from acid_platform.engines.spark import SparkEngine
from acid_platform.engines.spark.dml import worth_probing
from acid_platform.engines.spark.plans import broadcast_threshold
from acid_platform.errors import CardinalityViolationError
from acid_platform.table import Table
from acid_platform.table.statement import StatementMetrics
from acid_platform_tests.engines.spark.conftest import rows_of

COLUMNS = [("id", "int"), ("v", "int"), ("s", "string")]
LAYOUTS: dict[str, dict[str, Any]] = {
    "partitioned": {"partition_columns": [("ds", "string")]},
    "bucketed": {"bucket_columns": ["id"], "num_buckets": 3},
}


@pytest.fixture(params=["broadcast", "shuffled"])
def join(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """How Spark joins the MERGE source: ``broadcast`` (Spark's default threshold) or
    ``shuffled`` (broadcasting turned off for the test)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = spark.conf.get(key)
    if request.param == "shuffled":
        spark.conf.set(key, "-1")
    try:
        yield request.param
    finally:
        spark.conf.set(key, before or "10MB")


def _rows(ids: range | list[int], parted: bool, tag: str = "s") -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "v": i * 10,
            "s": f"{tag}{i}",
            **({"ds": "a" if i % 2 else "b"} if parted else {}),
        }
        for i in ids
    ]


def _twins(wh: Warehouse, layout: dict[str, Any]) -> tuple[Table, Table]:
    parted = "partition_columns" in layout
    tables = []
    for name in ("emb", "spk"):
        t = wh.create_table(name, COLUMNS, **layout)
        t.insert(_rows(range(30), parted))
        t.delete("id = 7")
        tables.append(t)
    return tables[0], tables[1]


def _frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame(pa.Table.from_pylist(rows)).repartition(2)


def _comparable(t: Table, out: StatementMetrics, *, files: bool) -> dict[str, Any]:
    """Every field but the table, transaction, duration and bytes (and, with ``files=False``,
    the file count); directories relative to the table."""
    fields = out.as_dict()
    for key in (
        "table",
        "txn_id",
        "duration_s",
        "bytes_written",
        *(() if files else ("files_written",)),
    ):
        fields.pop(key)
    fields["dirs_written"] = [os.path.relpath(d, t.location.path) for d in out.dirs_written]
    return fields


def _true_to_disk(out: StatementMetrics) -> None:
    """The file count and bytes are those of the event files in the directories written."""
    found = [
        os.path.join(d, name)
        for d in out.dirs_written
        for name in os.listdir(d)
        if name.startswith("bucket_") and not name.endswith("_flush_length")
    ]
    assert out.files_written == len(found)
    assert out.bytes_written == sum(os.path.getsize(f) for f in found)


def _on_executors(out: StatementMetrics) -> None:
    """The statement's metrics name the Spark tasks that wrote its files."""
    assert out.tasks, "Spark tasks wrote the files"
    assert all(task.pid != os.getpid() for task in out.tasks)  # Python workers


def _same_statement(emb: Table, spk: Table, want: StatementMetrics, got: StatementMetrics) -> None:
    """The same statement on both engines: the same metric fields with the same values. The
    file count is equal when both write the same files (one writer per bucket of a bucketed
    table); otherwise Spark writes one file per task. Bytes depend on the row order inside a
    file; on both engines the file count and bytes are checked against the disk."""
    assert set(got.as_dict()) == set(want.as_dict())
    same_files = bool(spk.spec.num_buckets)
    assert _comparable(spk, got, files=same_files) == _comparable(emb, want, files=same_files)
    _true_to_disk(want)
    _true_to_disk(got)
    _on_executors(got)
    assert rows_of(spk.scan().to_arrow()) == rows_of(emb.scan().to_arrow())


def _merge(t: Table, source: Any) -> StatementMetrics:
    return (
        t.merge(source, "t.id = s.id")
        .when_matched_update({"v": "s.v", "s": "concat(t.s, s.s)"}, "s.id <> 2")
        .when_matched_delete()
        .when_not_matched_insert_all("s.id <> 52")
        .execute()
    )


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_insert_and_merge_of_a_dataframe_run_on_spark_like_the_embedded_engine(
    spark: SparkSession, wh: Warehouse, join: str, layout: str
) -> None:
    emb, spk = _twins(wh, LAYOUTS[layout])
    parted = layout == "partitioned"
    assert worth_probing(spark, _frame(spark, _rows([1], parted))) is (join == "broadcast")

    new = _rows(range(30, 36), parted, "n")
    _same_statement(emb, spk, emb.insert(new), spk.insert(_frame(spark, new)))

    source = [*_rows([1, 2, 3, 7, 31], parted, "m"), *_rows([50, 51, 52], parted, "x")]
    want, got = _merge(emb, source), _merge(spk, _frame(spark, source))
    _same_statement(emb, spk, want, got)
    assert got.rows_inserted == 3 and got.rows_deleted == 1

    all_new = [*_rows([3, 4], parted, "w"), *_rows([60, 61], parted, "y")]
    want = emb.merge(all_new, "t.id = s.id").when_matched_update_all().execute()
    got = spk.merge(_frame(spark, all_new), "t.id = s.id").when_matched_update_all().execute()
    _same_statement(emb, spk, want, got)


def test_static_partitions_and_overwrite_from_a_dataframe(
    spark: SparkSession, wh: Warehouse
) -> None:
    emb, spk = _twins(wh, LAYOUTS["partitioned"])
    rows = [{"id": i, "v": i, "s": "p"} for i in (100, 101)]
    df = spark.createDataFrame(pa.Table.from_pylist(rows))
    _same_statement(
        emb, spk, emb.insert(rows, partition={"ds": "z"}), spk.insert(df, partition={"ds": "z"})
    )
    want = emb.insert(rows[:1], partition={"ds": "a"}, overwrite=True)
    got = spk.insert(df.where("id = 100"), partition={"ds": "a"}, overwrite=True)
    _same_statement(emb, spk, want, got)
    assert sorted(r["id"] for r in spk.scan(where="ds = 'a'").to_arrow().to_pylist()) == [100]

    empty = spark.createDataFrame([], "id INT, v INT, s STRING")
    spk.insert(empty, partition={"ds": "z"}, overwrite=True)
    emb.insert([], partition={"ds": "z"}, overwrite=True)
    assert spk.scan(where="ds = 'z'").to_arrow().num_rows == 0
    assert rows_of(spk.scan().to_arrow()) == rows_of(emb.scan().to_arrow())


@pytest.mark.slow
def test_dataframe_statements_join_the_open_transaction(
    spark: SparkSession, wh: Warehouse, join: str
) -> None:
    emb, spk = _twins(wh, LAYOUTS["partitioned"])
    before = rows_of(spk.scan().to_arrow())
    new = _rows([40, 41], True, "n")
    source = _rows([1, 40, 45], True, "m")

    wh.transaction()
    _on_executors(spk.insert(_frame(spark, new)))
    merger = spk.merge(_frame(spark, source), "t.id = s.id").when_matched_update_all()
    out = merger.when_not_matched_insert_all().execute()
    assert out.rows_updated == 2  # the row inserted just before, too
    assert {40, 41, 45} <= {r["id"] for r in spk.scan().to_arrow().to_pylist()}  # own writes
    wh.rollback()
    assert rows_of(spk.scan().to_arrow()) == before

    with wh.transaction():
        spk.insert(_frame(spark, new))
        spk.merge(_frame(spark, source), "t.id = s.id").when_matched_update_all().execute()
    with wh.transaction():
        emb.insert(new)
        emb.merge(source, "t.id = s.id").when_matched_update_all().execute()
    assert rows_of(spk.scan().to_arrow()) == rows_of(emb.scan().to_arrow())


@pytest.mark.slow
@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_cardinality_violation_raises_and_writes_nothing(
    spark: SparkSession, wh: Warehouse, join: str, layout: str, tmp_path: Path
) -> None:
    parted = layout == "partitioned"
    t = wh.create_table("c", COLUMNS, **LAYOUTS[layout])
    t.insert(_rows(range(10), parted))
    before_rows = rows_of(t.scan().to_arrow())
    before_files = _event_files(t)
    dup = _frame(spark, [*_rows([1, 2, 20], parted, "a"), *_rows([2], parted, "b")])
    merger = t.merge(dup, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all()
    with pytest.raises(CardinalityViolationError, match=r"more than one source row") as info:
        merger.execute()
    assert "hive.merge.cardinality.check" in str(info.value)
    assert f"MERGE INTO {t.name}" in str(info.value)
    assert rows_of(t.scan().to_arrow()) == before_rows
    assert _event_files(t) == before_files  # no file of the failed statement is left
    states = [r["Transaction State"] for r in wh.metastore.show_transactions()]
    assert "ABORTED" in states

    wh.conf["hive.merge.cardinality.check"] = "false"  # Hive's switch: then it runs
    out = merger.execute()
    assert out.rows_updated == 3 and out.rows_inserted == 1


def test_registration_routes_only_dataframes_to_spark(spark: SparkSession, wh: Warehouse) -> None:
    assert [e.name for e in wh.native_engines] == ["spark"]
    engine = wh.native_engines.for_data(spark.range(1))
    assert isinstance(engine, SparkEngine) and engine.spark is spark
    assert wh.native_engines.for_data(pa.table({"id": [1]})) is None
    assert wh.native_engines.for_data("SELECT 1") is None
    wh.register_spark(spark)  # again: replaces, never duplicates
    assert len(wh.native_engines) == 1
    t = wh.create_table("r", COLUMNS)
    out = t.insert([{"id": 1, "v": 1, "s": "a"}])
    assert out.rows_inserted == 1 and out.tasks == ()  # Arrow: embedded, no Spark task wrote


def test_registering_the_data_source_alone_is_deprecated(
    spark: SparkSession, wh: Warehouse
) -> None:
    """``acid_platform.engines.spark.register`` still registers the ``acid`` data source (not
    the engine) one release more, with a DeprecationWarning naming ``wh.register_spark``."""
    from acid_platform.engines.spark import register

    with pytest.warns(DeprecationWarning, match=r"use wh\.register_spark\(spark\)") as w:
        source = register(spark, wh)
    assert w[0].filename == __file__
    assert source.format_name == "acid"
    t = wh.create_table("dep", COLUMNS)
    t.insert([{"id": 1, "v": 1, "s": "a"}])
    assert [r.id for r in spark.read.format("acid").load("dep").collect()] == [1]


@pytest.mark.parametrize(
    ("setting", "size"), [("10MB", 10 << 20), ("1048576b", 1 << 20), ("2g", 2 << 30), ("-1", -1)]
)
def test_broadcast_threshold_reads_spark_sizes(
    spark: SparkSession, setting: str, size: int
) -> None:
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = spark.conf.get(key)
    spark.conf.set(key, setting)
    try:
        assert broadcast_threshold(spark) == size
    finally:
        spark.conf.set(key, before or "10MB")


def _event_files(t: Table) -> set[str]:
    root = Path(t.location.path)
    return {str(p.relative_to(root)) for p in root.rglob("bucket_*")}
