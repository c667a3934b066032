"""Spark SQL DELETE / UPDATE / MERGE INTO on tables by name (:mod:`acid_platform.engines.spark.row_level`):
Spark's analyser and rewrite, the acid writer's events — checked against the embedded engine's view
of the same table, ROW__IDs of untouched rows kept, Hive's layout on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow


def _rows(wh: Warehouse, table: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in wh.query(f"SELECT * FROM {table}").to_pylist())


def _row_ids(spark: SparkSession, table: str) -> dict[int, tuple[int, int, int]]:
    rows = spark.sql(
        f"SELECT id, _acid_writeid, _acid_bucketid, _acid_rowid FROM {table}"
    ).collect()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _dirs(wh: Warehouse, table: str) -> list[str]:
    root = Path(wh.root)
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_dir() and ("delta_" in p.name or "base_" in p.name) and table in str(p)
    )


@pytest.mark.parametrize("layout", ["plain", "partitioned", "bucketed"])
def test_delete_update_merge_by_name(spark: SparkSession, wh: Warehouse, layout: str) -> None:
    wh.create_database("db")
    ddl = {
        "plain": "",
        "partitioned": "PARTITIONED BY (ds)",
        "bucketed": "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 4 BUCKETS",
    }[layout]
    spark.sql(f"CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid {ddl}")
    spark.sql(
        "INSERT INTO db.t VALUES (1,'a','d1'),(2,'b','d1'),(3,'c','d2'),(4,'d','d2'),(5,'e','d3')"
    )
    spark.createDataFrame([(2,), (4,)], "k INT").createOrReplaceTempView("gone")
    before = _row_ids(spark, "db.t")

    spark.sql("DELETE FROM db.t WHERE id IN (SELECT k FROM gone)")
    assert _rows(wh, "db.t") == [(1, "a", "d1"), (3, "c", "d2"), (5, "e", "d3")]
    after = _row_ids(spark, "db.t")
    assert all(after[i] == before[i] for i in (1, 3, 5))

    spark.sql("UPDATE db.t SET v = upper(v) WHERE id >= (SELECT max(k) FROM gone)")
    assert _rows(wh, "db.t") == [(1, "a", "d1"), (3, "c", "d2"), (5, "E", "d3")]
    assert _row_ids(spark, "db.t")[1] == before[1]

    spark.createDataFrame(
        [(1, "x", "d1"), (3, None, "d2"), (7, "g", "d4"), (8, "h", "d1")],
        "id INT, v STRING, ds STRING",
    ).createOrReplaceTempView("src")
    spark.sql(
        "MERGE INTO db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED AND s.id > 7 THEN INSERT * "
        "WHEN NOT MATCHED THEN INSERT (id, v, ds) VALUES (s.id, 'new', s.ds) "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = concat(t.v, '!')"
    )
    assert _rows(wh, "db.t") == [
        (1, "x", "d1"),
        (5, "E!", "d3"),
        (7, "new", "d4"),
        (8, "h", "d1"),
    ]
    assert any("delete_delta_" in d for d in _dirs(wh, "t"))


def _table(spark: SparkSession, wh: Warehouse, ddl: str = "") -> None:
    wh.create_database("db")
    spark.sql(f"CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid {ddl}")
    spark.sql(
        "INSERT INTO db.t VALUES (1,'a','d1'),(2,'b','d1'),(3,'c','d2'),(4,'d','d2'),(5,'e','d3')"
    )


def test_subqueries_joins_and_views_as_conditions(spark: SparkSession, wh: Warehouse) -> None:
    _table(spark, wh, "PARTITIONED BY (ds)")
    spark.createDataFrame(
        [(1, "d1"), (2, "d2"), (3, "d9")], "k INT, day STRING"
    ).createOrReplaceTempView("days")
    # scalar subqueries as bounds
    spark.sql(
        "DELETE FROM db.t WHERE id >= (SELECT min(k) FROM days) AND id < (SELECT max(k) FROM days)"
    )
    assert [r[0] for r in _rows(wh, "db.t")] == [3, 4, 5]
    # EXISTS, correlated
    spark.sql("DELETE FROM db.t WHERE EXISTS (SELECT 1 FROM days d WHERE d.day = db.t.ds)")
    assert [r[0] for r in _rows(wh, "db.t")] == [5]
    # a join of a Spark table and the acid table itself as MERGE source
    spark.sql("INSERT INTO db.t VALUES (6,'f','d1'),(7,'g','d2')")
    spark.sql(
        "MERGE INTO db.t USING (SELECT t2.id, d.day FROM db.t t2 JOIN days d ON t2.ds = d.day) s "
        "ON db.t.id = s.id WHEN MATCHED THEN UPDATE SET v = concat(s.day, '+')"
    )
    assert _rows(wh, "db.t") == [(5, "e", "d3"), (6, "d1+", "d1"), (7, "d2+", "d2")]


def test_merge_cardinality_as_spark_sql_knows_it(spark: SparkSession, wh: Warehouse) -> None:
    _table(spark, wh, "PARTITIONED BY (ds)")
    spark.createDataFrame([(1,), (1,), (3,), (3,), (3,)], "k INT").createOrReplaceTempView("dup")
    before, dirs = _rows(wh, "db.t"), _dirs(wh, "t")
    with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
        spark.sql("MERGE INTO db.t USING dup ON id = k WHEN MATCHED THEN UPDATE SET v = 'x'")
    assert _rows(wh, "db.t") == before  # nothing visible: the transaction aborted
    # the only MATCHED action an unconditional DELETE: allowed, each row deleted once
    spark.sql("MERGE INTO db.t USING dup ON id = k WHEN MATCHED THEN DELETE")
    assert [r[0] for r in _rows(wh, "db.t")] == [2, 4, 5]
    events = [
        p
        for p in Path(wh.root).rglob("bucket_*")
        if "delete_delta" in str(p.parent) and p.parent.is_dir()
    ]
    import pyarrow.orc as orc

    new = [p for p in events if str(p.parent) not in {str(Path(wh.root) / d) for d in dirs}]
    assert sum(orc.ORCFile(str(p)).nrows for p in new) == 2


def test_bad_input_fails_with_one_line_and_writes_nothing(
    spark: SparkSession, wh: Warehouse
) -> None:
    from pyspark.errors import AnalysisException
    from pyspark.errors import UnsupportedOperationException as Unsupported

    _table(spark, wh)
    mm = {"transactional": "true", "transactional_properties": "insert_only"}
    wh.create_table("mm", [("id", "int")], properties=mm).insert([{"id": 1}])
    wh.create_table("plain", [("id", "int")], properties={"transactional": "false"})
    before = _dirs(wh, "")
    with pytest.raises(Unsupported, match="that is insert-only transactional") as e:
        spark.sql("DELETE FROM default.mm WHERE id = 1")
    assert "\n" not in str(e.value).strip()
    with pytest.raises(Unsupported, match="that is not transactional"):
        spark.sql("UPDATE default.plain SET id = 2")
    with pytest.raises(AnalysisException, match="nope"):
        spark.sql("DELETE FROM db.t WHERE nope = 1")
    with pytest.raises(AnalysisException, match="v"):
        spark.sql("UPDATE db.t SET v = array(1)")
    with pytest.raises(AnalysisException, match="AMBIGUOUS|ambiguous"):
        spark.createDataFrame([(1, "z")], "id INT, v STRING").createOrReplaceTempView("s2")
        spark.sql("MERGE INTO db.t USING s2 ON id = id WHEN MATCHED THEN DELETE")
    assert _dirs(wh, "") == before
    assert [r[0] for r in _rows(wh, "db.t")] == [1, 2, 3, 4, 5]


def test_a_small_delete_writes_delete_events_not_a_rewrite(
    spark: SparkSession, wh: Warehouse
) -> None:
    wh.create_database("db")
    spark.sql("CREATE TABLE db.kv (k INT, v STRING) USING acid")
    spark.range(1000).selectExpr("CAST(id AS INT) AS k", "concat('v', id) AS v").writeTo(
        "db.kv"
    ).append()
    location = Path(wh.table("db.kv").spec.location)
    before = sorted(p.name for p in location.iterdir())
    spark.sql("DELETE FROM db.kv WHERE k % 100 = 7")  # 1%
    added = sorted(set(p.name for p in location.iterdir()) - set(before))
    assert added and all(d.startswith("delete_delta_") for d in added)
    spark.sql("UPDATE db.kv SET v = 'u' WHERE k < 5")
    spark.sql(
        "MERGE INTO db.kv t USING (SELECT 5 AS k, 'm' AS v UNION ALL SELECT 2000, 'n') s "
        "ON t.k = s.k WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *"
    )
    embedded = sorted((r["k"], r["v"]) for r in wh.query("SELECT * FROM db.kv").to_pylist())
    assert len(embedded) == 1000 - 10 - 1 + 1
    assert (0, "u") in embedded and (5, "v5") not in embedded and (2000, "n") in embedded


def test_statements_return_their_committed_counts_in_deltas_columns(
    spark: SparkSession, wh: Warehouse
) -> None:
    _table(spark, wh, "PARTITIONED BY (ds)")
    deleted = spark.sql("DELETE FROM db.t WHERE id IN (1, 2)")
    assert deleted.schema.simpleString() == "struct<num_affected_rows:bigint>"
    assert [r.asDict() for r in deleted.collect()] == [{"num_affected_rows": 2}]
    assert [r[0] for r in _rows(wh, "db.t")] == [3, 4, 5]  # ran once, when spark.sql returned
    updated = spark.sql("UPDATE db.t SET v = 'x' WHERE id >= 4")
    assert updated.collect()[0].asDict() == {"num_affected_rows": 2}
    nothing = spark.sql("DELETE FROM db.t WHERE id = 100")
    assert nothing.collect()[0].num_affected_rows == 0
    spark.createDataFrame(
        [(3, "u", "d2"), (5, None, "d3"), (9, "n", "d9")], "id INT, v STRING, ds STRING"
    ).createOrReplaceTempView("src")
    merged = spark.sql(
        "MERGE INTO db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED AND s.v IS NULL THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *"
    )
    assert merged.columns == [
        "num_affected_rows",
        "num_updated_rows",
        "num_deleted_rows",
        "num_inserted_rows",
    ]
    assert tuple(merged.collect()[0]) == (3, 1, 1, 1)
    assert _rows(wh, "db.t") == [(3, "u", "d2"), (4, "x", "d2"), (9, "n", "d9")]
    # the inserted rows under a statement id of their own, the updated ones under the deletes'
    inserts = [d for d in _dirs(wh, "t") if d.split("/")[-1].startswith("delta_")]
    assert [d[-4:] for d in inserts if "ds=d9" in d] == ["0001"]
    assert {d[-4:] for d in inserts if "ds=d2" in d} == {"0000"}
