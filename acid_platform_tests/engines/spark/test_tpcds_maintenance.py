"""TPC-DS data maintenance in Spark SQL on acid tables (issue 32's proof), in the TPC-DS
specification's style (its DF_SS and DF_I functions: deletes of fact rows by date ranges found
through ``date_dim``, deletes of returns by the tickets of those sales, inventory deletes), at
SF 0.1, against DuckDB running the same statements on the same rows as the oracle. The returns
deletes also run as ``MERGE … WHEN MATCHED THEN DELETE`` (several sales lines match one ticket:
Spark's cardinality rule allows it for an unconditional DELETE) on a copy, which must end equal.

``date_dim`` is a Spark temp view over Parquet, not an acid table: the subqueries read another
source; ``inventory`` is partitioned by ``inv_date_sk``, pruned by the scalar-subquery bounds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform_tests.tpcds import tpcds_tables

pytestmark = pytest.mark.slow
TABLES = ("store_sales", "store_returns", "date_dim", "inventory")
#: (DATE1, DATE2) pairs in the style of the specification's delete_N.dat / inventory_delete_N.dat
SALES_RANGES = [
    ("2000-05-20", "2000-05-21"),
    ("1999-09-18", "1999-09-19"),
    ("2002-11-12", "2002-11-13"),
]
INVENTORY_RANGES = [("2000-05-18", "2000-05-25"), ("2001-01-04", "2001-01-11")]


def _between(d1: str, d2: str) -> str:
    return f"d_date BETWEEN DATE '{d1}' AND DATE '{d2}'"


def _date_bounds(column: str, d1: str, d2: str) -> str:
    dates = f"FROM date_dim WHERE {_between(d1, d2)}"
    return f"{column} >= (SELECT min(d_date_sk) {dates}) AND {column} <= (SELECT max(d_date_sk) {dates})"


def maintenance(schema: str) -> Iterator[tuple[str, str]]:
    """(what, statement) of the data maintenance, its tables in ``schema`` (``date_dim`` not)."""
    for d1, d2 in SALES_RANGES:
        tickets = (
            f"SELECT ss_ticket_number FROM {schema}store_sales, date_dim "
            f"WHERE ss_sold_date_sk = d_date_sk AND {_between(d1, d2)}"
        )
        yield "returns", f"DELETE FROM {schema}store_returns WHERE sr_ticket_number IN ({tickets})"
        yield (
            "returns_merge",
            f"MERGE INTO {schema}store_returns_m t USING ({tickets}) s "
            "ON t.sr_ticket_number = s.ss_ticket_number WHEN MATCHED THEN DELETE",
        )
        yield (
            "sales",
            f"DELETE FROM {schema}store_sales WHERE {_date_bounds('ss_sold_date_sk', d1, d2)}",
        )
    for d1, d2 in INVENTORY_RANGES:
        yield (
            "inventory",
            f"DELETE FROM {schema}inventory WHERE {_date_bounds('inv_date_sk', d1, d2)}",
        )


def _differ(con: duckdb.DuckDBPyConnection, ours: pa.Table, oracle: str) -> int:
    """Rows in one and not the other (multisets), ``ours`` against the oracle's table."""
    con.register("ours", ours)
    try:
        return sum(
            con.execute(f"SELECT count(*) FROM ({q})").fetchone()[0]  # type: ignore[index]
            for q in (
                f"SELECT * FROM ours EXCEPT ALL SELECT * FROM {oracle}",
                f"SELECT * FROM {oracle} EXCEPT ALL SELECT * FROM ours",
            )
        )
    finally:
        con.unregister("ours")


def test_tpcds_data_maintenance_sf01(spark: SparkSession, wh: Warehouse, tmp_path: Path) -> None:
    data = tpcds_tables(0.1, TABLES)
    oracle = duckdb.connect()
    for name, rows in data.items():
        oracle.register(f"{name}_arrow", rows)
        oracle.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
        pq.write_table(rows, tmp_path / f"{name}.parquet")
        spark.read.parquet(str(tmp_path / f"{name}.parquet")).createOrReplaceTempView(f"{name}_src")
    oracle.execute("CREATE TABLE store_returns_m AS SELECT * FROM store_returns")
    spark.sql("CREATE OR REPLACE TEMP VIEW date_dim AS SELECT * FROM date_dim_src")

    wh.create_database("tpcds")
    spark.sql("CREATE TABLE tpcds.store_sales USING acid AS SELECT * FROM store_sales_src")
    spark.sql("CREATE TABLE tpcds.store_returns USING acid AS SELECT * FROM store_returns_src")
    spark.sql("CREATE TABLE tpcds.store_returns_m USING acid AS SELECT * FROM store_returns_src")
    inventory_columns = ", ".join(c for c in data["inventory"].column_names if c != "inv_date_sk")
    spark.sql(
        "CREATE TABLE tpcds.inventory USING acid PARTITIONED BY (inv_date_sk) AS "
        f"SELECT {inventory_columns}, inv_date_sk FROM inventory_src"
    )

    deleted: dict[str, int] = {}
    for what, statement in maintenance("tpcds."):
        spark.sql(statement)
        oracle_statement = statement.replace("tpcds.", "")
        if what == "returns_merge":  # the same rows as the DELETE … IN form
            oracle_statement = (
                oracle_statement.replace(
                    "MERGE INTO store_returns_m t USING (",
                    "DELETE FROM store_returns_m WHERE sr_ticket_number IN (",
                ).split(") s ON")[0]
                + ")"
            )
        before = oracle.execute(f"SELECT count(*) FROM {_target(what)}").fetchone()[0]  # type: ignore[index]
        oracle.execute(oracle_statement)
        after = oracle.execute(f"SELECT count(*) FROM {_target(what)}").fetchone()[0]  # type: ignore[index]
        deleted[what] = deleted.get(what, 0) + before - after

    # each kind of statement deleted rows: the comparison below can fail
    assert all(deleted[w] > 0 for w in ("returns", "returns_merge", "sales", "inventory")), deleted
    for table in ("store_sales", "store_returns", "store_returns_m", "inventory"):
        columns = ", ".join(data[table.removesuffix("_m")].column_names)
        ours = wh.query(f"SELECT {columns} FROM tpcds.{table}")
        assert ours.num_rows == oracle.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
        assert _differ(oracle, ours, table) == 0, table
        assert spark.sql(f"SELECT count(*) FROM tpcds.{table}").first()[0] == ours.num_rows  # type: ignore[index]


def _target(what: str) -> str:
    return {
        "returns": "store_returns",
        "returns_merge": "store_returns_m",
        "sales": "store_sales",
        "inventory": "inventory",
    }[what]
