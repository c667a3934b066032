"""Reading through the ``acid`` data source: the embedded engine's rows, one snapshot, pushdown
(for the engine's statement reads)."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, LessThan, Not

from acid_platform import Warehouse
from acid_platform.engines.spark.options import SourceOptions, warehouse_options
from acid_platform.engines.spark.reader import PushdownReader, SplitPartition
from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform.table import Table
from acid_platform_tests.engines.spark.conftest import rows_of


def _sales(wh: Warehouse) -> Table:
    """A partitioned table with inserts, an update and a delete by the embedded engine."""
    t = (
        wh.create_table(
            "db.sales",
            [("id", "int"), ("name", "string"), ("ts", "timestamp"), ("amount", "decimal(10,2)")],
            partition_columns=[("ds", "string")],
        )
        if "db" in wh.list_databases()
        else None
    )
    assert t is not None
    rows = [
        {
            "id": i,
            "name": f"n{i}",
            "ts": dt.datetime(2024, 1, 1, 12, 0, i % 60),
            "amount": decimal.Decimal(i) / 4,
            "ds": "2024-01-01" if i % 2 else "2024-01-02",
        }
        for i in range(60)
    ]
    t.insert(rows[:40])
    t.insert(rows[40:])
    t.update({"name": "concat(name, '!')"}, "id % 5 = 0")
    t.delete("id < 6")
    return t


@pytest.fixture
def sales(wh: Warehouse) -> Table:
    wh.create_database("db")
    return _sales(wh)


def test_reads_exactly_the_rows_the_embedded_engine_sees(spark: SparkSession, sales: Table) -> None:
    df = spark.read.format("acid").load("db.sales")
    assert df.columns == ["id", "name", "ts", "amount", "ds"]
    assert dict(df.dtypes)["ts"] == "timestamp_ntz"
    got = [r.asDict() for r in df.collect()]
    assert sorted(got, key=lambda r: r["id"]) == rows_of(sales.scan().to_arrow())
    assert len(got) == 54


def test_row_id_matches_the_embedded_scan(spark: SparkSession, sales: Table) -> None:
    df = spark.read.format("acid").option("with_row_id", "true").load("db.sales")
    assert df.columns[0] == "row__id"
    got = {r.id: r.row__id.asDict() for r in df.select("row__id", "id").collect()}
    want = {
        r["id"]: r["row__id"] for r in sales.scan(["id"], with_row_id=True).to_arrow().to_pylist()
    }
    assert got == want


def test_filters_stay_in_spark_for_a_loaded_dataframe(spark: SparkSession, sales: Table) -> None:
    # Spark reuses a loaded relation's planned reader for every query on it: the reader takes
    # no filters, so none can leak into another query (test_read_queries.py).
    df = spark.read.format("acid").load("db.sales")
    query = df.where("ds = '2024-01-01' AND id > 40 AND name <> 'n43'").select("id")
    plan = query._jdf.queryExecution().executedPlan().toString()
    assert "> 40" in plan and "2024-01-01" in plan  # Spark evaluates them
    assert sorted(r.id for r in query.collect()) == [i for i in range(41, 60, 2) if i != 43]
    either = df.where("amount IN (2.50, 3.75) OR id = 59").collect()
    assert sorted(r.id for r in either) == [10, 15, 59]


def test_projection_reads_only_the_given_columns(spark: SparkSession, sales: Table) -> None:
    df = spark.read.format("acid").schema("ds STRING, id INT").load("db.sales")
    got = sorted((r.id, r.ds) for r in df.where("id BETWEEN 6 AND 9").collect())
    assert got == [(6, "2024-01-02"), (7, "2024-01-01"), (8, "2024-01-02"), (9, "2024-01-01")]
    assert spark.read.format("acid").schema("ds STRING").load("db.sales").count() == 54


def test_one_snapshot_per_query_and_a_reader_lease(
    spark: SparkSession, wh: Warehouse, sales: Table
) -> None:
    df = spark.read.format("acid").load("db.sales")
    other = Warehouse.open(wh.root)  # another session
    with wh.transaction():
        sales.insert([{"id": 100, "name": "open", "ds": "2024-01-01"}])
        # the session's queries join the open transaction: they read its own insert ...
        assert df.where("id = 100").count() == 1
        # ... which no other session sees before the commit
        assert other.query("SELECT count(*) AS n FROM db.sales WHERE id = 100")["n"][0].as_py() == 0
    assert df.where("id = 100").count() == 1
    assert other.query("SELECT count(*) AS n FROM db.sales WHERE id = 100")["n"][0].as_py() == 1
    other.close()
    leases = wh.metastore.show_read_leases()
    assert any("spark scan db.sales" in str(lease) for lease in leases)


def test_reads_an_older_snapshot_given_as_options(spark: SparkSession, wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")])
    t.insert([{"id": 1}])
    ms = wh.metastore
    txns = ms.valid_txns()
    ids = ms.valid_write_ids(None, "default", "t", valid_txns=txns)
    t.insert([{"id": 2}])
    t.delete("id = 1")
    old = (
        spark.read.format("acid").options(valid_txns=str(txns), valid_write_ids=str(ids)).load("t")
    )
    assert [r.id for r in old.collect()] == [1]
    assert [r.id for r in spark.read.format("acid").load("t").collect()] == [2]


def test_small_bucket_splits_share_tasks(spark: SparkSession, wh: Warehouse) -> None:
    """Each bucket is one split, never cut; tiny ones are combined (issue 34 item 3:
    table.scan_combine) so that a 2-core machine reads 4 tiny buckets in fewer than 4 tasks,
    and every row is read once."""
    t = wh.create_table("b", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=4)
    t.insert([{"id": i, "v": str(i)} for i in range(100)])
    df = spark.read.format("acid").load("b")
    tasks = df.rdd.getNumPartitions()
    assert 1 <= tasks <= 4
    if (os.cpu_count() or 1) <= 2:
        assert tasks < 4
    assert sorted(r.id for r in df.collect()) == list(range(100))


def test_empty_and_unknown(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_table("empty", [("id", "int")], partition_columns=[("p", "int")])
    assert spark.read.format("acid").load("empty").collect() == []
    with pytest.raises(Exception, match="does not exist|no table"):
        spark.read.format("acid").load("nope").collect()


# --------------------------------------------------------------------------- the reader itself


def test_push_filters_keeps_what_it_evaluates_exactly(wh: Warehouse) -> None:
    wh.create_database("db")
    t = _sales(wh)
    pinned = str(wh.metastore.valid_write_ids(None, "db", "sales"))
    given = {"path": "db.sales", "pushdown": "true", "snapshot": pinned}
    options = SourceOptions.parse(given, warehouse_options(wh))
    schema = spark_schema(table_arrow_schema(t.spec))
    reader = PushdownReader(options, t.spec, schema)
    pushed = [
        EqualTo(("ds",), "2024-01-01"),
        GreaterThan(("id",), 50),
        In(("name",), ("n51", "n53", "n55!")),
        Not(EqualTo(("id",), 53)),
        LessThan(("amount",), decimal.Decimal("100")),
        IsNotNull(("id",)),  # handed back
        EqualTo(("ts",), "not a timestamp"),  # wrong literal type: handed back
    ]
    back = list(reader.pushFilters(pushed))
    assert back == pushed[5:]
    splits = reader.partitions()
    assert all(isinstance(s, SplitPartition) for s in splits)
    assert {s.split.partition for s in splits if isinstance(s, SplitPartition)} == {"ds=2024-01-01"}
    rows = [r for s in splits for b in reader.read(s) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == [51, 55]


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["orc", "parquet", "textfile"])
def test_reads_an_insert_only_table_and_refuses_to_write_it(
    spark: SparkSession, wh: Warehouse, fmt: str
) -> None:
    from acid_platform.errors import UnsupportedOperationError

    mm = {"transactional": "true", "transactional_properties": "insert_only"}
    t = wh.create_table("mm", [("id", "int"), ("name", "string")], properties=mm, stored_as=fmt)
    t.insert([{"id": 1, "name": "a"}, {"id": 2, "name": None}])
    with pytest.raises(RuntimeError), wh.transaction():
        t.insert([{"id": 3, "name": "aborted"}])
        raise RuntimeError("roll back")
    t.insert([{"id": 4, "name": "d"}])
    got = sorted((r.id, r.name) for r in spark.read.format("acid").load("default.mm").collect())
    assert got == [(1, "a"), (2, None), (4, "d")]
    before = sorted(p.name for p in Path(t.spec.location).iterdir())
    with pytest.raises(Exception, match="insert-only table"):
        spark.createDataFrame([(5, "e")], "id int, name string").write.format("acid").mode(
            "append"
        ).save("default.mm")
    assert sorted(p.name for p in Path(t.spec.location).iterdir()) == before
    with pytest.raises(UnsupportedOperationError, match="insert-only table"):
        t.insert(spark.createDataFrame([(5, "e")], "id int, name string"))


def test_a_split_larger_than_one_batch_reads_every_row_once(
    spark: SparkSession, wh: Warehouse
) -> None:
    # One stripe decodes as one Arrow batch; Spark gets it in slices of BATCH_ROWS rows.
    from acid_platform.engines.spark.schema import BATCH_ROWS

    n = BATCH_ROWS * 2 + 123
    t = wh.create_table("big", [("id", "bigint"), ("name", "string")])
    t.insert({"id": list(range(n)), "name": [f"n{i}" for i in range(n)]})
    t.delete(f"id % 1000 = 7 OR id = {BATCH_ROWS}")
    df = spark.read.format("acid").option("with_row_id", "true").load("big")
    got = df.select("row__id", "id", "name").collect()
    want = t.scan(["id", "name"], with_row_id=True).to_arrow().to_pylist()
    kept = [i for i in range(n) if i % 1000 != 7 and i != BATCH_ROWS]
    assert len(got) == len(want) == len(kept)
    assert sorted((r.id, r.name, r.row__id.asDict()) for r in got) == sorted(
        (r["id"], r["name"], r["row__id"]) for r in want
    )
    assert spark.read.format("acid").load("big").where("id >= 0").count() == len(want)


def test_spark_batches_slice_without_losing_or_repeating_rows() -> None:
    import pyarrow as pa

    from acid_platform.engines.spark.schema import spark_batches

    target = pa.schema([("id", pa.int64())])
    for n in (0, 1, 9, 10, 11, 35):
        batch = pa.record_batch([pa.array(range(n), pa.int32())], names=["id"])
        out = list(spark_batches(batch, target, rows=10))
        sizes = [min(10, n - start) for start in range(0, n, 10)] if n > 10 else [n]
        assert [b.num_rows for b in out] == sizes
        assert all(b.schema == target for b in out)
        assert [v for b in out for v in b.column(0).to_pylist()] == list(range(n))
