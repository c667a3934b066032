"""Scans of a table read by name or loaded with ``format("acid")`` — by name or by its
warehouse path (:mod:`acid_platform.engines.spark.table_scans`): each query's columns and
partitions pruned for that query only, and a size that lets Spark broadcast a small table."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow

Read = Callable[[], DataFrame]


@pytest.fixture(params=["spark.table", "load by name", "load by path"])
def read(request: pytest.FixtureRequest, spark: SparkSession, wh: Warehouse) -> Read:
    """The table ``db.t`` as a DataFrame, read one of the three ways."""
    return {
        "spark.table": lambda: spark.table("db.t"),
        "load by name": lambda: spark.read.format("acid").load("db.t"),
        "load by path": lambda: spark.read.format("acid").load(f"{wh.root}/db.db/t"),
    }[request.param]


def _scans(df: DataFrame) -> list[tuple[list[str], str]]:
    """(columns read, description) of every acid scan in ``df``'s executed plan."""
    plan = df._jdf.queryExecution().executedPlan()  # noqa: SLF001 - the JVM plan
    found: list[tuple[list[str], str]] = []
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            nodes.append(node.initialPlan())
            continue
        if node.getClass().getSimpleName() == "BatchScanExec":
            scan = node.scan()
            found.append((list(scan.readSchema().fieldNames()), scan.description()))
        children = node.children()
        nodes.extend(children.apply(i) for i in range(children.size()))
    return found


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())  # noqa: SLF001


def _table(wh: Warehouse) -> None:
    wh.create_database("db")
    t = wh.create_table(
        "db.t",
        [("id", "int"), ("v", "string"), ("w", "double")],
        partition_columns=[("ds", "string")],
    )
    t.insert({"id": [1, 2, 3], "v": ["a", "b", "c"], "w": [1.0, 2.0, 3.0], "ds": ["x", "x", "y"]})


def test_a_query_reads_only_its_columns_and_the_next_query_all_of_them(
    spark: SparkSession, wh: Warehouse, read: Read
) -> None:
    _table(wh)
    df = read()
    one = df.select("v")
    assert _scans(one) == [(["v"], "acid table db.t PartitionFilters: []")]
    assert sorted(r.v for r in one.collect()) == ["a", "b", "c"]
    # the projection stayed with its query: the whole DataFrame reads every column
    assert _scans(df)[0][0] == ["id", "v", "w", "ds"]
    assert sorted(tuple(r) for r in df.collect()) == [
        (1, "a", 1.0, "x"),
        (2, "b", 2.0, "x"),
        (3, "c", 3.0, "y"),
    ]
    assert df.count() == 3  # no column at all
    assert _scans(df.where("id > 1").select("w"))[0][0] == ["id", "w"]
    assert _scans(spark.sql("SELECT w FROM db.t WHERE id > 1"))[0][0] == ["id", "w"]
    df.createOrReplaceTempView("tv")
    try:
        assert spark.sql("SELECT count(*) AS n FROM tv").collect()[0].n == 3
        assert _scans(spark.sql("SELECT w FROM tv WHERE id > 1"))[0][0] == ["id", "w"]
    finally:
        spark.catalog.dropTempView("tv")


def test_a_where_on_a_partition_column_reads_only_that_partition_for_that_query(
    spark: SparkSession, wh: Warehouse, read: Read
) -> None:
    _table(wh)
    # the other partition unreadable: a query that read it would fail
    (bucket,) = [p for p in (Path(wh.root) / "db.db" / "t" / "ds=y").rglob("bucket_*")]
    bucket.write_bytes(b"not an ORC file")
    df = read()
    df.createOrReplaceTempView("tv")
    pruned = df.where("ds = 'x'")
    assert "PartitionFilters: [ds = 'x']" in _scans(pruned)[0][1]
    assert sorted(r.id for r in pruned.collect()) == [1, 2]
    assert sorted(r.id for r in spark.sql("SELECT id FROM tv WHERE ds IN ('x')").collect()) == [
        1,
        2,
    ]
    # the next query, without the WHERE, reads every partition again (and meets the bad file)
    with pytest.raises(Exception, match="ds=y"):
        df.count()
    with pytest.raises(Exception, match="ds=y"):
        spark.sql("SELECT * FROM tv").collect()


def test_a_small_table_is_broadcast_without_a_hint(
    spark: SparkSession, wh: Warehouse, read: Read
) -> None:
    _table(wh)
    big = spark.range(50_000_000).withColumnRenamed("id", "k")  # 400 MB by Spark's estimate
    t = read()
    joined = big.join(t, big.k == t.id)
    plan = _plan(joined)
    assert "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan, plan
    small = spark.range(10).withColumnRenamed("id", "k")
    rows = small.join(t, small.k == t.id).collect()
    assert sorted((r.k, r.v) for r in rows) == [(1, "a"), (2, "b"), (3, "c")]


def test_a_pinned_load_prunes_columns_and_keeps_its_snapshot(
    spark: SparkSession, wh: Warehouse
) -> None:
    _table(wh)
    wh.table("db.t").delete("id = 1")  # write id 2
    pinned = spark.read.format("acid").option("as_of_write_id", "1").load("db.t")
    assert _scans(pinned.select("v")) == [(["v"], "acid table db.t PartitionFilters: []")]
    assert sorted(r.v for r in pinned.select("v").collect()) == ["a", "b", "c"]
    assert spark.read.format("acid").load("db.t").count() == 2


def test_load_resolves_the_format_on_any_thread(spark: SparkSession, wh: Warehouse) -> None:
    """The JVM source is on the driver's class path for every thread, not only the one that
    registered it (Spark looks a format up with the calling thread's class loader)."""
    _table(wh)
    got: list[object] = []

    def read_and_write() -> None:
        try:
            df = spark.read.format("acid").load("db.t")
            got.append(_scans(df.select("id"))[0][0])
            rows = spark.createDataFrame(
                [(4, "d", 4.0, "y")], "id INT, v STRING, w DOUBLE, ds STRING"
            )
            rows.write.format("acid").mode("append").save("db.t")
            got.append(sorted(r.id for r in df.collect()))
        except Exception as exc:  # the assertion below shows it
            got.append(exc)

    thread = threading.Thread(target=read_and_write)
    thread.start()
    thread.join()
    assert got == [["id"], [1, 2, 3, 4]]


def test_a_second_format_name_is_a_python_source_and_leaves_the_first_intact(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    """A warehouse registered under another name reads its own tables (every column: the
    Python data source); ``acid`` keeps its warehouse, its tables by name and its pruning."""
    _table(wh)
    with Warehouse.open(tmp_path / "other") as other:
        other.create_database("db")
        other.create_table("db.t", [("id", "int"), ("v", "string")]).insert({"id": [7], "v": ["z"]})
        other.register_spark(spark, format_name="acid_other")
        second = spark.read.format("acid_other").load("db.t")
        assert [(r.id, r.v) for r in second.collect()] == [(7, "z")]
        first = spark.read.format("acid").load("db.t")
        assert _scans(first.select("id")) == [(["id"], "acid table db.t PartitionFilters: []")]
        assert sorted(r.id for r in first.collect()) == [1, 2, 3]
        assert sorted(r.id for r in spark.table("db.t").collect()) == [1, 2, 3]


def test_decimals_read_as_the_tables_values_by_every_way_and_query(
    spark: SparkSession, wh: Warehouse, read: Read
) -> None:
    """Decimals of at most 18 digits travel from the Python reader as unscaled longs (see
    AcidScans.java): every value, sign, scale, null and extreme reads back as the embedded
    engine reads it — collected, filtered, aggregated, joined — and the scan's types stay the
    table's; wider decimals are unchanged."""
    from decimal import Decimal

    wh.create_database("db")
    t = wh.create_table(
        "db.t",
        [("id", "int"), ("a", "decimal(7,2)"), ("b", "decimal(18,4)"), ("c", "decimal(38,10)")],
        partition_columns=[("ds", "string")],
    )
    values: dict[str, list[Any]] = {
        "id": [1, 2, 3, 4, 5, 6],
        "a": ["-99999.99", "99999.99", "0.01", None, "-0.01", "12345.67"],
        "b": ["99999999999999.9999", "-99999999999999.9999", None, "0", "-1.0001", "42.4242"],
        "c": ["1234567890123456789012345678.0123456789", None, "-1", "0", "0.0000000001", "7"],
        "ds": ["x", "x", "y", "y", "x", "y"],
    }
    t.insert({k: [Decimal(v) if k in "abc" and v else v for v in vs] for k, vs in values.items()})
    expected = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    df = read()
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types == {
        "id": "int",
        "a": "decimal(7,2)",
        "b": "decimal(18,4)",
        "c": "decimal(38,10)",
        "ds": "string",
    }
    assert {r.id: r.asDict() for r in df.collect()} == expected
    assert [(r.id, r.b) for r in df.where("b < 0").orderBy("id").collect()] == [
        (2, Decimal("-99999999999999.9999")),
        (5, Decimal("-1.0001")),
    ]
    sums = df.groupBy("ds").agg({"a": "sum", "b": "max"}).orderBy("ds").collect()
    assert [(r.ds, r["sum(a)"], r["max(b)"]) for r in sums] == [
        ("x", Decimal("-0.01"), Decimal("99999999999999.9999")),
        ("y", Decimal("12345.68"), Decimal("42.4242")),
    ]
    joined = df.alias("l").join(read().alias("r"), "a").select("l.id", "r.b").collect()
    assert sorted((r.id, r.b) for r in joined) == sorted(
        (i, e["b"]) for i, e in expected.items() if e["a"] is not None
    )
