"""Tables by name in Spark (the session catalog extension, :mod:`acid_platform.engines.spark.catalog`):
Spark SQL DDL and DML, ``saveAsTable`` in every save mode, ``save`` / ``load`` by name and by
path — each checked against the embedded engine's view of the same table — and bad input that
fails with a clear error and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import Row, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from acid_platform import Warehouse
from acid_platform.table.schema import not_null_columns
from acid_platform_tests.engines.spark.conftest import rows_of

pytestmark = pytest.mark.slow


class _CountSink(DataSource):
    """Another Python data source: its writes leave the row count in :attr:`target`."""

    target: ClassVar[str] = ""

    @classmethod
    def name(cls) -> str:
        return "acid_test_count"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return _CountWriter(self.target)


class _CountWriter(DataSourceWriter):
    def __init__(self, target: str) -> None:
        self.target = target

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _Count(sum(1 for _ in iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        n = sum(m.n for m in messages if isinstance(m, _Count))
        Path(self.target).write_text(str(n))


@dataclass
class _Count(WriterCommitMessage):
    n: int


def _files(wh: Warehouse) -> list[str]:
    root = Path(wh.root)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "_metastore" not in p.name)


def _spark_rows(spark: SparkSession, sql: str) -> list[dict[str, object]]:
    return sorted(
        (r.asDict() for r in spark.sql(sql).collect()), key=lambda r: str(sorted(r.items()))
    )


def rows_of_spark(rows: list[Row]) -> list[dict[str, object]]:
    return sorted((r.asDict() for r in rows), key=lambda r: (r["id"] is None, r["id"]))


def _embedded(wh: Warehouse, sql: str) -> list[dict[str, object]]:
    return sorted(wh.query(sql).to_pylist(), key=lambda r: str(sorted(r.items())))


def test_spark_sql_ddl_and_dml_act_on_the_warehouse(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_database("db")
    spark.sql(
        "CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid "
        "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 2 BUCKETS TBLPROPERTIES ('owner_team' = 'x')"
    )
    spec = wh.table("db.t").spec
    assert spec.columns == (("id", "int"), ("v", "string"))
    assert spec.partition_column_names == ("ds",)
    assert (spec.bucket_columns, spec.num_buckets) == (("id",), 2)
    assert spec.properties["owner_team"] == "x" and spec.properties["transactional"] == "true"

    described = {
        r.col_name: r.data_type for r in spark.sql("DESCRIBE TABLE EXTENDED db.t").collect()
    }
    assert described["id"] == "int" and described["ds"] == "string"
    assert described["Part 0"] == "ds" and described["Part 1"] == "bucket(2, id)"
    assert described["Provider"] == "acid" and described["Location"] == spec.location

    spark.sql("INSERT INTO db.t VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")
    want = [
        {"id": 1, "v": "a", "ds": "x"},
        {"id": 2, "v": "b", "ds": "y"},
        {"id": 3, "v": "c", "ds": "x"},
    ]
    assert rows_of(wh.table("db.t").scan().to_arrow()) == want
    assert _spark_rows(spark, "SELECT * FROM db.t") == _embedded(wh, "SELECT * FROM db.t")
    assert spark.sql("SELECT * FROM db.t WHERE ds = 'x'").count() == 2

    # INSERT OVERWRITE: one transaction replacing what it writes (unpartitioned: the table)
    spark.sql("CREATE TABLE db.u (id BIGINT NOT NULL, v STRING) USING acid")
    assert list(not_null_columns(wh.table("db.u").spec)) == ["id"]
    spark.sql("INSERT INTO db.u SELECT id, v FROM db.t")
    spark.createDataFrame([(4, "d")], "id BIGINT, v STRING").write.insertInto("db.u")
    assert sorted(r["id"] for r in wh.table("db.u").scan().to_arrow().to_pylist()) == [1, 2, 3, 4]
    spark.sql("INSERT OVERWRITE db.u VALUES (10, 'new')")
    assert rows_of(wh.table("db.u").scan().to_arrow()) == [{"id": 10, "v": "new"}]
    assert _spark_rows(spark, "SELECT * FROM db.u") == _embedded(wh, "SELECT * FROM db.u")

    # static partitions; an overwrite replaces the partitions it writes (Hive's semantics)
    spark.sql("CREATE TABLE db.p (id INT, v STRING, ds STRING) USING acid PARTITIONED BY (ds)")
    spark.sql("INSERT INTO db.p VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    spark.sql("INSERT INTO db.p PARTITION (ds = 'z') VALUES (3, 'c')")
    spark.sql("INSERT OVERWRITE db.p PARTITION (ds = 'x') VALUES (4, 'd')")
    assert rows_of(wh.table("db.p").scan().to_arrow()) == [
        {"id": 2, "v": "b", "ds": "y"},
        {"id": 3, "v": "c", "ds": "z"},
        {"id": 4, "v": "d", "ds": "x"},
    ]
    spark.sql("INSERT OVERWRITE db.p VALUES (5, 'e', 'y')")
    assert sorted(r["id"] for r in wh.table("db.p").scan().to_arrow().to_pylist()) == [3, 4, 5]
    assert _spark_rows(spark, "SELECT * FROM db.p") == _embedded(wh, "SELECT * FROM db.p")
    with pytest.raises(Exception, match="INSERT OVERWRITE replaces whole partitions"):
        spark.sql("INSERT INTO db.p REPLACE WHERE id > 3 SELECT 6, 'f', 'y'")
    assert sorted(r["id"] for r in wh.table("db.p").scan().to_arrow().to_pylist()) == [3, 4, 5]

    # a table the warehouse made is a Spark table too; SHOW TABLES lists the warehouse's
    wh.create_table("db.w", [("k", "string")]).insert([{"k": "z"}])
    assert [r.k for r in spark.sql("SELECT k FROM db.w").collect()] == ["z"]
    assert {r.tableName for r in spark.sql("SHOW TABLES IN db").collect()} >= {"t", "u", "w"}
    assert "db" in {r.namespace for r in spark.sql("SHOW DATABASES").collect()}

    spark.sql("DROP TABLE db.u")
    assert not wh.table_exists("db.u")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM db.u").collect()
    # other sources keep working: a CTAS of another Python data source, Spark's own tables
    sink = type("CountSink", (_CountSink,), {"target": str(Path(wh.root) / "count.txt")})
    spark.dataSource.register(sink)
    spark.sql("CREATE TABLE default.counted USING acid_test_count AS SELECT * FROM db.t")
    assert (Path(wh.root) / "count.txt").read_text() == "3"
    assert not wh.table_exists("default.counted")
    spark.sql("DROP TABLE default.counted")
    spark.sql("CREATE TABLE IF NOT EXISTS default.spark_own (i INT) USING parquet")
    spark.sql("INSERT INTO default.spark_own VALUES (7)")
    assert [r.i for r in spark.sql("SELECT i FROM default.spark_own").collect()] == [7]
    spark.sql("DROP TABLE default.spark_own")
    assert not wh.table_exists("default.spark_own")


def test_save_as_table_honours_every_save_mode(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_database("db")
    df = spark.createDataFrame(
        [(1, "a", "p"), (2, "b", "q"), (3, "c", "q")], "id INT, v STRING, ds STRING"
    )
    # error (the default): creates with partitionBy on first write
    df.write.format("acid").partitionBy("ds").saveAsTable("db.s")
    spec = wh.table("db.s").spec
    assert spec.partition_column_names == ("ds",) and spec.columns == (
        ("id", "int"),
        ("v", "string"),
    )
    assert _embedded(wh, "SELECT * FROM db.s") == sorted(
        (r.asDict() for r in df.collect()), key=lambda r: str(sorted(r.items()))
    )
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_ALREADY_EXISTS"):
        df.write.format("acid").mode("error").saveAsTable("db.s")
    assert wh.table("db.s").scan().to_arrow().num_rows == 3

    # ignore: an existing table is left alone
    df.write.format("acid").mode("ignore").saveAsTable("db.s")
    assert wh.table("db.s").scan().to_arrow().num_rows == 3

    # append: one more transaction
    df.where("id = 1").write.format("acid").mode("append").saveAsTable("db.s")
    assert sorted(r["id"] for r in wh.table("db.s").scan().to_arrow().to_pylist()) == [1, 1, 2, 3]

    # overwrite: INSERT OVERWRITE of the partitions written, the table kept
    spark.createDataFrame([(9, "z", "q")], "id INT, v STRING, ds STRING").write.format("acid").mode(
        "overwrite"
    ).saveAsTable("db.s")
    assert rows_of(wh.table("db.s").scan().to_arrow()) == [
        {"id": 1, "v": "a", "ds": "p"},
        {"id": 1, "v": "a", "ds": "p"},
        {"id": 9, "v": "z", "ds": "q"},
    ]
    assert _spark_rows(spark, "SELECT * FROM db.s") == _embedded(wh, "SELECT * FROM db.s")

    # overwrite and ignore on a missing table create it; bucketBy too
    df.write.format("acid").mode("overwrite").bucketBy(2, "id").saveAsTable("db.b")
    assert (wh.table("db.b").spec.bucket_columns, wh.table("db.b").spec.num_buckets) == (("id",), 2)
    df.write.format("acid").mode("ignore").saveAsTable("db.i")
    assert _embedded(wh, "SELECT * FROM db.b") == _embedded(wh, "SELECT * FROM db.i")
    assert len(_embedded(wh, "SELECT * FROM db.i")) == 3
    # CREATE TABLE … AS SELECT
    spark.sql("CREATE TABLE db.c USING acid AS SELECT id, v FROM db.i WHERE id > 1")
    assert sorted(r["id"] for r in wh.table("db.c").scan().to_arrow().to_pylist()) == [2, 3]
    # an unpartitioned table's overwrite replaces every row, keeping the table
    df.where("id = 2").write.format("acid").mode("overwrite").saveAsTable("db.i")
    assert rows_of(wh.table("db.i").scan().to_arrow()) == [{"id": 2, "v": "b", "ds": "q"}]


def test_save_and_load_by_name_and_by_warehouse_path(spark: SparkSession, wh: Warehouse) -> None:
    wh.create_database("db")
    df = spark.createDataFrame([(1, "a", "p"), (2, "b", "q")], "id INT, v STRING, ds STRING")
    df.write.format("acid").mode("append").option("partition_by", "ds").save("db.n")
    t = wh.table("db.n")
    assert t.spec.partition_column_names == ("ds",)
    df.write.format("acid").mode("append").save("db.n")
    assert len(t.scan().to_arrow().to_pylist()) == 4
    df.where("id = 1").write.format("acid").mode("overwrite").save("db.n")
    assert (
        rows_of(t.scan().to_arrow())
        == [{"id": 1, "v": "a", "ds": "p"}] + [{"id": 2, "v": "b", "ds": "q"}] * 2
    )

    by_path = spark.read.format("acid").load(t.spec.location)
    assert rows_of_spark(by_path.collect()) == rows_of(t.scan().to_arrow())
    assert by_path.count() == t.scan().to_arrow().num_rows
    # a path with .. that stays inside the warehouse is the same table
    assert spark.read.format("acid").load(t.spec.location + "/../n").count() == 3


def test_bad_input_gets_a_clear_error_and_writes_nothing(
    spark: SparkSession, wh: Warehouse, tmp_path: Path
) -> None:
    wh.create_database("db")
    t = wh.create_table("db.t", [("id", "int"), ("v", "string")])
    t.insert([{"id": 1, "v": "a"}])
    before = _files(wh)

    wrong = spark.createDataFrame([(1, "a", 2.0)], "id INT, v STRING, extra DOUBLE")
    with pytest.raises(AnalysisException, match="extra"):
        wrong.write.format("acid").mode("append").saveAsTable("db.t")
    with pytest.raises(AnalysisException, match="too many data columns"):
        spark.sql("INSERT INTO db.t SELECT 1, 'a', 2.0")
    with pytest.raises(Exception, match="UnknownColumnError"):
        wrong.write.format("acid").mode("append").save("db.t")
    # an overwrite may not redefine the table
    with pytest.raises(Exception, match="SchemaMismatchError"):
        wrong.write.format("acid").mode("overwrite").saveAsTable("db.t")

    ok = spark.createDataFrame([(5, "e")], "id INT, v STRING")
    with pytest.raises(AnalysisException, match="nope"):
        ok.write.format("acid").partitionBy("nope").saveAsTable("db.new1")
    with pytest.raises(Exception, match="UnknownColumnError"):
        ok.write.format("acid").mode("append").option("partition_by", "nope").save("db.new2")
    with pytest.raises(Exception, match="acid tables are partitioned by columns"):
        spark.sql("CREATE TABLE db.new3 (ts TIMESTAMP) USING acid PARTITIONED BY (days(ts))")
    with pytest.raises(Exception, match="LOCATION is not supported"):
        spark.sql(f"CREATE TABLE db.new4 (i INT) USING acid LOCATION '{tmp_path}'")

    # save() of a Python data source: Spark itself refuses error / ignore (saveAsTable has them)
    for mode in ("error", "ignore"):
        with pytest.raises(AnalysisException, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            ok.write.format("acid").mode(mode).save("db.new5")
    # …and partitionBy (it checks the columns against the Python source's table, which has no
    # partitioning): option("partition_by", …) with save(), or partitionBy with saveAsTable
    for mode in ("append", "overwrite"):
        with pytest.raises(
            IllegalArgumentException,
            match="provided partitioning or clustering columns do not match the existing table",
        ):
            ok.write.format("acid").mode(mode).partitionBy("v").save("db.new6")

    # paths: outside the warehouse, and a directory of it that is no ACID table
    outside = tmp_path / "elsewhere"
    with pytest.raises(Exception, match="InvalidNameError: path .* is outside the warehouse"):
        ok.write.format("acid").mode("append").save(str(outside))
    with pytest.raises(Exception, match="InvalidNameError: path .* is outside the warehouse"):
        spark.read.format("acid").load(f"{wh.root}/../{Path(wh.root).name}x/t").count()
    plain = Path(wh.root) / "db.db" / "plain"
    plain.mkdir(parents=True)
    (plain / "data.csv").write_text("1,a\n")
    with pytest.raises(Exception, match="is not an ACID table of the warehouse"):
        ok.write.format("acid").mode("append").save(str(plain))

    assert _files(wh) == sorted([*before, "db.db/plain", "db.db/plain/data.csv"])
    assert sorted(wh.list_tables("db")) == ["t"]
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "v": "a"}]
    assert not outside.exists()
