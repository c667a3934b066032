"""Spark SQL DELETE / UPDATE / MERGE on acid tables against DuckDB on a plain table (the oracle):
seeded random statements with IN / EXISTS / scalar subqueries, joins and every MERGE clause form,
over plain, partitioned and bucketed targets. After each statement the rows (read by the
embedded engine) are the oracle's, and a row the statement left alone keeps its ROW__ID."""

from __future__ import annotations

import random
from dataclasses import dataclass

import duckdb
import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow
COLUMNS = "id INT, v INT, s STRING, ds STRING"
STATEMENTS = 9
Row = tuple[object, ...]


@dataclass
class Generator:
    rng: random.Random
    n: int = 0  # statements so far: each marks the rows it updates with s = 'u<n>'

    def plain_atom(self) -> str:
        """A condition on the target without a subquery (what a MERGE clause may have)."""
        r = self.rng
        return r.choice(
            [
                f"t.id < {r.randint(0, 60)}",
                f"t.v % 3 = {r.randint(0, 2)}",
                f"t.ds = 'd{r.randint(0, 3)}'",
                "t.s IS NULL",
            ]
        )

    def atom(self) -> str:
        r = self.rng
        return r.choice(
            [
                self.plain_atom(),
                self.plain_atom(),
                "t.id IN (SELECT k FROM aux)",
                "EXISTS (SELECT 1 FROM aux WHERE aux.k = t.v)",
                "t.v > (SELECT avg(k) FROM aux)",
                "t.id IN (SELECT a.k FROM aux a JOIN src b ON a.k = b.v)",
            ]
        )

    def condition(self) -> str:
        r = self.rng
        c = self.atom()
        if r.random() < 0.5:
            c = f"({c}) {r.choice(['AND', 'OR'])} ({self.atom()})"
        return f"NOT ({c})" if r.random() < 0.2 else c

    def statement(self) -> tuple[str, str]:
        """(Spark SQL, DuckDB SQL)."""
        self.n += 1
        kind = self.rng.choice(["delete", "update", "merge", "merge"])
        if kind == "delete":
            where = self.condition()
            return (f"DELETE FROM db.t AS t WHERE {where}", f"DELETE FROM t WHERE {where}")
        if kind == "update":
            where = self.condition()
            moved = ", ds = 'd9'" if self.rng.random() < 0.2 else ""
            sets = f"v = t.v + 1, s = 'u{self.n}'{moved}"
            return (
                f"UPDATE db.t AS t SET {sets} WHERE {where}",
                f"UPDATE t SET {sets.replace('t.v', 'v')} WHERE {where}",
            )
        return self.merge()

    def merge(self) -> tuple[str, str]:
        r, mark = self.rng, f"'u{self.n}'"
        clauses: list[str] = []
        matched = r.sample(["DELETE", f"UPDATE SET v = s.v, s = {mark}"], r.randint(0, 2))
        for i, action in enumerate(matched):
            cond = (
                f" AND s.v % 2 = {r.randint(0, 1)}"
                if i < len(matched) - 1 or r.random() < 0.5
                else ""
            )
            clauses.append(f"WHEN MATCHED{cond} THEN {action}")
        if r.random() < 0.7:
            cond = f" AND s.v > {r.randint(0, 20)}" if r.random() < 0.5 else ""
            clauses.append(
                f"WHEN NOT MATCHED{cond} THEN INSERT (id, v, s, ds) VALUES (s.id, s.v, s.s, s.ds)"
            )
        by_source = r.sample(["DELETE", f"UPDATE SET v = t.v + 100, s = {mark}"], r.randint(0, 2))
        for i, action in enumerate(by_source):
            cond = f" AND {self.plain_atom()}" if i < len(by_source) - 1 else ""
            clauses.append(f"WHEN NOT MATCHED BY SOURCE{cond} THEN {action}")
        if not clauses:
            clauses.append("WHEN MATCHED THEN DELETE")
        on = "t.id = s.id" + (f" AND t.ds <> 'd{r.randint(0, 3)}'" if r.random() < 0.3 else "")
        body = f"USING src AS s ON {on} " + " ".join(clauses)
        return (f"MERGE INTO db.t AS t {body}", f"MERGE INTO t {body}")


def _source(rng: random.Random, start: int) -> list[Row]:
    ids = rng.sample(range(start, start + 70), 8)  # unique: no cardinality violation
    return [
        (i, rng.randint(0, 30), rng.choice(["a", "b", None]), f"d{rng.randint(0, 3)}") for i in ids
    ]


@pytest.mark.parametrize(
    "layout",
    ["", "PARTITIONED BY (ds)", "PARTITIONED BY (ds) CLUSTERED BY (id) INTO 3 BUCKETS"],
    ids=["plain", "partitioned", "bucketed"],
)
def test_random_statements_match_duckdb(spark: SparkSession, wh: Warehouse, layout: str) -> None:
    rng = random.Random(f"dml-{layout}")
    wh.create_database("db")
    spark.sql(f"CREATE TABLE db.t ({COLUMNS}) USING acid {layout}")
    oracle = duckdb.connect()
    oracle.sql("CREATE TABLE t (id INT, v INT, s VARCHAR, ds VARCHAR)")
    oracle.sql("CREATE TABLE src (id INT, v INT, s VARCHAR, ds VARCHAR)")
    oracle.sql("CREATE TABLE aux (k INT)")
    rows = [(i, rng.randint(0, 30), rng.choice(["a", "b", None]), f"d{i % 4}") for i in range(50)]
    spark.createDataFrame(rows, COLUMNS).writeTo("db.t").append()
    oracle.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    gen = Generator(rng)
    for _ in range(STATEMENTS):
        src, aux = _source(rng, rng.randint(0, 40)), rng.sample(range(0, 60), 6)
        spark.createDataFrame(src, COLUMNS).createOrReplaceTempView("src")
        spark.createDataFrame([(k,) for k in aux], "k INT").createOrReplaceTempView("aux")
        oracle.sql("DELETE FROM src")
        oracle.sql("DELETE FROM aux")
        oracle.executemany("INSERT INTO src VALUES (?, ?, ?, ?)", src)
        oracle.executemany("INSERT INTO aux VALUES (?)", [(k,) for k in aux])
        before = _row_ids(spark)
        spark_sql, duck_sql = gen.statement()
        spark.sql(spark_sql)
        oracle.sql(duck_sql)
        want = sorted(oracle.sql("SELECT * FROM t").fetchall(), key=repr)
        got = sorted(
            (tuple(r.values()) for r in wh.query("SELECT * FROM db.t").to_pylist()), key=repr
        )
        assert got == want, spark_sql
        after = _row_ids(spark)
        kept = set(before) & set(after)
        assert all(before[row] == after[row] for row in kept), spark_sql


def _row_ids(spark: SparkSession) -> dict[Row, tuple[int, int, int]]:
    """ROW__ID of each row (the rows are distinct: ids are unique)."""
    out = spark.sql(
        "SELECT id, v, s, ds, _acid_writeid, _acid_bucketid, _acid_rowid FROM db.t"
    ).collect()
    return {tuple(r[:4]): tuple(r[4:]) for r in out}
