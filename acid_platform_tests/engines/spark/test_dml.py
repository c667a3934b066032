"""UPDATE / DELETE / MERGE on Spark give the same table as the embedded engine on the same input.

Every scenario builds the same table twice with the embedded engine, runs each statement once
embedded and once on Spark (Spark DataFrames as MERGE sources), and compares the tables' rows,
the statements' row counts, and the invariants Hive relies on (unique ROW__IDs, rows in the
bucket Hive's hash gives them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.engines.spark import SparkEngine
from acid_platform.errors import CardinalityViolationError
from acid_platform.format import bucket_for, decode_bucket
from acid_platform.table import Table
from acid_platform.table.statement import StatementMetrics
from acid_platform_tests.engines.spark.conftest import rows_of

COLUMNS = [("id", "int"), ("v", "int"), ("s", "string")]


def _twins(wh: Warehouse, **layout: Any) -> tuple[Table, Table]:
    tables = []
    for name in ("emb", "spk"):
        t = wh.create_table(name, COLUMNS, **layout)
        parted = bool(layout.get("partition_columns"))
        rows = [
            {
                "id": i,
                "v": i * 10,
                "s": f"s{i}",
                **({"ds": "a" if i % 2 else "b"} if parted else {}),
            }
            for i in range(40)
        ]
        t.insert(rows[:25])
        t.insert(rows[25:])
        t.delete("id = 7")
        tables.append(t)
    return tables[0], tables[1]


def _same(emb: Table, spk: Table) -> None:
    assert rows_of(spk.scan().to_arrow()) == rows_of(emb.scan().to_arrow())
    spec = spk.spec
    rows = spk.scan(with_row_id=True).to_arrow().to_pylist()
    keys = [(*r["row__id"].values(), *(r[c] for c in spec.partition_column_names)) for r in rows]
    assert len(set(keys)) == len(keys), "ROW__IDs must be unique within a partition"
    if spec.num_buckets:
        types = dict(spec.columns)
        for r in rows:
            want = bucket_for(
                [r[c] for c in spec.bucket_columns],
                [types[c] for c in spec.bucket_columns],
                spec.num_buckets,
                spec.bucketing_version,
            )
            assert decode_bucket(r["row__id"]["bucketid"])[0] == want


def _counts(out: StatementMetrics) -> tuple[int, int, int]:
    return (out.rows_inserted, out.rows_updated, out.rows_deleted)


def _both(
    emb: Table, spk: Table, run: Callable[[Table, bool], StatementMetrics]
) -> StatementMetrics:
    want = run(emb, False)
    got = run(spk, True)
    assert _counts(got) == _counts(want)
    _same(emb, spk)
    return got


@pytest.mark.parametrize(
    "layout",
    [
        {"partition_columns": [("ds", "string")]},
        {"bucket_columns": ["id"], "num_buckets": 3},
    ],
    ids=["partitioned", "bucketed"],
)
@pytest.mark.slow
def test_update_delete_merge_match_the_embedded_engine(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine, layout: dict[str, Any]
) -> None:
    emb, spk = _twins(wh, **layout)
    parted = "partition_columns" in layout

    out = _both(
        emb,
        spk,
        lambda t, on_spark: (engine.update if on_spark else _embedded_update)(
            t, {"v": "v * 2 + 1", "s": "concat(s, '!')"}, "id % 3 = 0 OR s = 's5'"
        ),
    )
    assert out.rows_updated == 15 and out.tasks  # the Spark tasks that wrote, in the metrics

    delete_where = "ds = 'a' AND id > 20" if parted else "id > 30"
    _both(
        emb,
        spk,
        lambda t, on_spark: engine.delete(t, delete_where) if on_spark else t.delete(delete_where),
    )

    source_rows = [
        {"id": i, "v": -i, "s": f"new{i}", **({"ds": "c"} if parted else {})}
        for i in (1, 2, 3, 7, 50, 51, 52)
    ]
    source_df = spark.createDataFrame(pa.Table.from_pylist(source_rows))

    def merge(t: Table, on_spark: bool) -> StatementMetrics:
        m = (
            engine.merge(t, source_df, "t.id = s.id")
            if on_spark
            else t.merge(pa.Table.from_pylist(source_rows), "t.id = s.id")
        )
        return (
            m.when_matched_update({"v": "s.v", "s": "concat(t.s, s.s)"}, "s.id <> 2")
            .when_matched_delete()
            .when_not_matched_insert_all("s.id <> 52")
            .when_not_matched_by_source_delete("t.v > 350")
            .execute()
        )

    out = _both(emb, spk, merge)
    assert out.rows_inserted == 3 and out.rows_deleted >= 1


@pytest.mark.slow
def test_merge_cardinality_violation_commits_nothing(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine
) -> None:
    t = wh.create_table("c", COLUMNS)
    t.insert([{"id": i, "v": i, "s": "x"} for i in range(5)])
    dup = spark.createDataFrame([(1, 100, "a"), (1, 200, "b")], "id INT, v INT, s STRING")
    before = rows_of(t.scan().to_arrow())
    with pytest.raises(CardinalityViolationError, match="more than one source row"):
        engine.merge(t, dup, "t.id = s.id").when_matched_update_all().execute()
    assert rows_of(t.scan().to_arrow()) == before


@pytest.mark.slow
def test_spark_statements_join_a_multi_statement_transaction(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine
) -> None:
    t = wh.create_table("x", COLUMNS)
    t.insert([{"id": i, "v": i, "s": "x"} for i in range(5)])
    wh.transaction()
    engine.update(t, {"v": "v + 100"}, "id < 2")
    engine.delete(t, "id = 4")
    rows = spark.createDataFrame([(9, 9, "n")], "id INT, v INT, s STRING")
    engine.write(rows, t)
    own_writes = sorted(r["v"] for r in t.scan().to_arrow().to_pylist())
    assert own_writes == [2, 3, 9, 100, 101]
    wh.rollback()
    assert sorted(r["v"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3, 4]
    with wh.transaction():
        engine.delete(t, "id = 0")
        engine.merge(t, rows, "t.id = s.id").when_not_matched_insert_all().execute()
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2, 3, 4, 9]


def test_engine_protocol_runs_plans_over_arrow_and_dataframes(
    spark: SparkSession, engine: SparkEngine
) -> None:
    r = pa.table({"a": pa.array([1, 2, None], pa.int32()), "s": ["x", "y", None]})
    out = engine.execute(
        "SELECT a DIV 2 AS d, CAST(s AS INT) AS bad, nvl(s, 'z') AS s2 FROM r ORDER BY a", {"r": r}
    )
    assert out.to_pylist() == [
        {"d": None, "bad": None, "s2": "z"},
        {"d": 0, "bad": None, "s2": "x"},
        {"d": 1, "bad": None, "s2": "y"},
    ]
    df = spark.createDataFrame([(1,)], "a INT")
    assert engine.execute("SELECT a + 1 AS b FROM q", {"q": df}).to_pylist() == [{"b": 2}]


def _embedded_update(t: Table, values: dict[str, Any], where: str) -> StatementMetrics:
    return t.update(values, where)
