"""Many queries on one loaded DataFrame or view: each sees only its own filters, projection and
snapshot (Spark plans a Python data source's read once per relation and reuses it), and each
reads the latest committed snapshot unless the options pin one."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession

from acid_platform import Warehouse
from acid_platform.table import Table

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(params=["pushdown on", "pushdown off"])
def pushdown(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[None]:
    """Spark's filter pushdown for Python data sources on and off (the session-wide setting
    decides whether Spark offers the source filters at all)."""
    before = spark.conf.get(PUSHDOWN)
    spark.conf.set(PUSHDOWN, "true" if request.param == "pushdown on" else "false")
    yield
    spark.conf.set(PUSHDOWN, before or "false")


def _emp(wh: Warehouse) -> Table:
    t = wh.create_table(
        "emp",
        [("id", "int"), ("name", "string"), ("salary", "int")],
        partition_columns=[("dept", "string")],
    )
    t.insert(
        [
            {"id": i, "name": f"e{i}", "salary": 1000 * (i % 10), "dept": "ab"[i % 2]}
            for i in range(100)
        ]
    )
    return t


def _ids(df: DataFrame) -> list[int]:
    return sorted(r.id for r in df.collect())


def _one(df: DataFrame) -> object:
    """The single value of a one-row, one-column result."""
    return df.collect()[0][0]


@pytest.mark.usefixtures("pushdown")
def test_filter_then_count_on_one_dataframe(spark: SparkSession, wh: Warehouse) -> None:
    _emp(wh)
    df = spark.read.format("acid").load("emp")
    assert df.filter("salary > 6000").count() == 30
    assert df.count() == 100
    assert df.filter("id < 10").count() == 10
    assert df.filter("salary > 6000").count() == 30
    assert df.count() == 100


@pytest.mark.usefixtures("pushdown")
def test_view_with_and_without_where(spark: SparkSession, wh: Warehouse) -> None:
    _emp(wh)
    spark.read.format("acid").load("emp").createOrReplaceTempView("emp_view")
    try:
        assert _one(spark.sql("SELECT count(*) AS n FROM emp_view WHERE id > 90")) == 9
        assert _one(spark.sql("SELECT count(*) AS n FROM emp_view")) == 100
        assert _one(spark.sql("SELECT count(*) AS n FROM emp_view WHERE dept = 'a'")) == 50
        assert _one(spark.sql("SELECT count(*) AS n FROM emp_view")) == 100
    finally:
        spark.catalog.dropTempView("emp_view")


@pytest.mark.usefixtures("pushdown")
def test_projection_then_select_star(spark: SparkSession, wh: Warehouse) -> None:
    t = _emp(wh)
    df = spark.read.format("acid").load("emp")
    assert sorted(r.name for r in df.select("name").where("id < 3").collect()) == [
        "e0",
        "e1",
        "e2",
    ]
    everything = [r.asDict() for r in df.select("*").collect()]
    assert sorted(everything, key=lambda r: r["id"]) == sorted(
        t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]
    )


@pytest.mark.usefixtures("pushdown")
def test_pruned_partition_then_all_partitions(spark: SparkSession, wh: Warehouse) -> None:
    _emp(wh)
    df = spark.read.format("acid").load("emp")
    assert _ids(df.where("dept = 'b'")) == list(range(1, 100, 2))
    assert _ids(df) == list(range(100))
    assert _ids(df.where("dept = 'a' AND id > 90")) == [92, 94, 96, 98]
    both = df.where("dept = 'b'").union(df.where("dept = 'a' AND id < 4"))
    assert _ids(both) == sorted([0, 2, *range(1, 100, 2)])


@pytest.mark.usefixtures("pushdown")
def test_two_scans_of_one_dataframe_in_one_query(spark: SparkSession, wh: Warehouse) -> None:
    _emp(wh)
    df = spark.read.format("acid").load("emp")
    high = df.where("salary > 8000").select("id")
    low = df.where("salary < 1000").select(df.id.alias("other"))
    assert high.crossJoin(low).count() == 10 * 10
    joined = df.alias("x").join(df.where("id < 5").alias("y"), "id")
    assert joined.count() == 5


def test_each_query_reads_the_latest_commit(spark: SparkSession, wh: Warehouse) -> None:
    t = _emp(wh)
    df = spark.read.format("acid").load("emp")
    df.createOrReplaceTempView("emp_latest")
    try:
        assert df.count() == 100
        t.insert([{"id": 100, "name": "new", "salary": 1, "dept": "c"}])  # a new partition
        assert df.count() == 101
        assert _one(spark.sql("SELECT count(*) AS n FROM emp_latest")) == 101
        t.delete("id < 50")
        assert df.count() == 51
        assert _ids(df.where("dept = 'c'")) == [100]
        with wh.transaction():
            t.insert([{"id": 200, "name": "open", "salary": 1, "dept": "c"}])
            t.delete("id = 100")
            # a query inside wh.transaction() joins it: the transaction's own writes
            assert _ids(df.where("id >= 100")) == [200]
        assert _ids(df.where("id >= 100")) == [200]
        assert df.count() == 51
    finally:
        spark.catalog.dropTempView("emp_latest")


def test_a_pinned_snapshot_is_repeatable(spark: SparkSession, wh: Warehouse) -> None:
    t = _emp(wh)
    ms = wh.metastore
    first = ms.valid_write_ids(None, "default", "emp")  # after write id 1
    t.delete("id >= 10")  # write id 2
    t.insert([{"id": 500, "name": "x", "salary": 0, "dept": "a"}])  # write id 3
    pinned = spark.read.format("acid").option("snapshot", str(first)).load("emp")
    as_of_2 = spark.read.format("acid").option("as_of_write_id", "2").load("emp")
    latest = spark.read.format("acid").load("emp")
    assert pinned.count() == 100 and as_of_2.count() == 10 and latest.count() == 11
    t.delete("id = 500")
    assert pinned.count() == 100 and as_of_2.count() == 10 and latest.count() == 10
    assert _ids(pinned.where("dept = 'a' AND id < 6")) == [0, 2, 4]
    assert _ids(as_of_2) == list(range(10))


@pytest.mark.slow
@pytest.mark.usefixtures("pushdown")
def test_random_queries_interleaved_with_commits(spark: SparkSession, wh: Warehouse) -> None:
    """One loaded DataFrame, many random queries; another writer commits between them. Each
    answer equals the embedded engine's at the snapshot of the query (the latest commit)."""
    rng = random.Random(12)
    t = _emp(wh)
    df = spark.read.format("acid").load("emp")
    df.createOrReplaceTempView("emp_random")
    next_id = 100
    predicates = [
        None,
        "salary > 6000",
        "id < 30",
        "dept = 'a'",
        "dept = 'b' AND salary <= 3000",
        "dept IN ('a', 'c')",
        "name = 'e7'",
        "id BETWEEN 20 AND 60 OR dept = 'c'",
    ]
    try:
        for step in range(24):
            writer = rng.choice(["insert", "update", "delete", "none"])
            if writer == "insert":
                rows = [
                    {"id": next_id + k, "name": f"e{next_id + k}", "salary": rng.randrange(10000)}
                    | {"dept": rng.choice("abc")}
                    for k in range(rng.randrange(1, 5))
                ]
                next_id += len(rows)
                t.insert(rows)
            elif writer == "update":
                t.update({"salary": "salary + 500"}, f"id % 7 = {rng.randrange(7)}")
            elif writer == "delete":
                t.delete(f"id % 11 = {rng.randrange(11)} AND salary > {rng.randrange(10000)}")
            where = rng.choice(predicates)
            want = t.scan(["id", "salary"], where=where).to_arrow().to_pylist()
            shape = rng.choice(["count", "ids", "sum", "sql"])
            frame = df if where is None else df.where(where)
            if shape == "count":
                assert frame.count() == len(want), (step, where)
            elif shape == "ids":
                assert _ids(frame.select("id")) == sorted(r["id"] for r in want), (step, where)
            elif shape == "sum":
                got = _one(frame.agg({"salary": "sum"}))
                assert (got or 0) == sum(r["salary"] for r in want), (step, where)
            else:
                sql = "SELECT count(*) AS n FROM emp_random" + (f" WHERE {where}" if where else "")
                assert _one(spark.sql(sql)) == len(want), (step, where)
    finally:
        spark.catalog.dropTempView("emp_random")


def _query_leases(wh: Warehouse) -> set[str]:
    return {
        str(lease["Agent Info"])
        for lease in wh.metastore.show_read_leases()
        if str(lease["Agent Info"]).startswith("spark query")
    }


def test_one_query_reads_all_its_tables_at_one_snapshot(spark: SparkSession, wh: Warehouse) -> None:
    _emp(wh)
    other = wh.create_table("other", [("id", "int"), ("tag", "string")])
    other.insert([{"id": i, "tag": f"t{i}"} for i in range(0, 100, 10)])
    emp = spark.read.format("acid").load("emp")
    tags = spark.read.format("acid").load("other")
    again = spark.read.format("acid").load("emp")  # another relation of the same table
    before = _query_leases(wh)
    assert emp.join(tags, "id").join(again.select("id"), "id").count() == 10
    assert len(_query_leases(wh) - before) == 1  # one snapshot, shared by the three scans
    assert emp.count() == 100
    assert len(_query_leases(wh) - before) == 2  # the next query: its own


def test_a_table_by_name_and_a_view_of_it(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_database("db")
    spark.sql("CREATE TABLE db.named (id INT, ds STRING) USING acid PARTITIONED BY (ds)")
    spark.sql("INSERT INTO db.named VALUES (1, 'x'), (2, 'y'), (3, 'x')")
    table = spark.table("db.named")
    table.createOrReplaceTempView("named_view")
    try:
        assert _one(spark.sql("SELECT count(*) FROM db.named WHERE ds = 'x'")) == 2
        assert _one(spark.sql("SELECT count(*) FROM db.named")) == 3
        assert _one(spark.sql("SELECT count(*) FROM named_view WHERE id > 1")) == 2
        assert _one(spark.sql("SELECT count(*) FROM named_view")) == 3
        wh.table("db.named").insert([{"id": 4, "ds": "z"}])  # another writer
        assert _one(spark.sql("SELECT count(*) FROM named_view")) == 4
        assert table.where("ds = 'z'").count() == 1 and table.count() == 4
        assert _one(spark.sql("SELECT count(*) FROM db.named")) == 4
    finally:
        spark.catalog.dropTempView("named_view")
