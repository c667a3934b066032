"""Spark SQL's statements inside ``wh.transaction()`` join it (the shared transaction,
:class:`acid_platform.table.transaction.SharedTransaction`): they read the transaction's
snapshot with its own earlier writes, write under its one write id with statement ids of their
own, commit with it, vanish with its rollback, and a failed one aborts it — as Hive runs the
statements of ``START TRANSACTION … COMMIT``. Checked against a second warehouse handle (another
session: sees nothing before the commit) and an oracle of the rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.errors import TxnAbortedError

pytestmark = pytest.mark.slow

ROWS = [(1, "a", "d1"), (2, "b", "d1"), (3, "c", "d2"), (4, "d", "d2"), (5, "e", "d3")]


def _rows(wh: Warehouse, table: str = "db.t") -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in wh.query(f"SELECT * FROM {table}").to_pylist())


def _spark_rows(spark: SparkSession, table: str = "db.t") -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, v, ds FROM {table}").collect())


def _deltas(wh: Warehouse, table: str = "t") -> set[tuple[str, int, int]]:
    """(kind, write id, statement id) of every delta directory of the table."""
    found = set()
    for p in Path(wh.root).rglob("*delta_*"):
        m = re.fullmatch(r"(delete_delta|delta)_(\d+)_(\d+)_(\d+)", p.name)
        if p.is_dir() and m and f"/{table}/" in f"{p}/":
            assert m.group(2) == m.group(3)
            found.add((m.group(1), int(m.group(2)), int(m.group(4))))
    return found


@pytest.fixture
def table(spark: SparkSession, wh: Warehouse) -> str:
    wh.create_database("db")
    spark.sql("CREATE TABLE db.t (id INT, v STRING, ds STRING) USING acid PARTITIONED BY (ds)")
    values = ",".join(f"({i},'{v}','{d}')" for i, v, d in ROWS)
    spark.sql(f"INSERT INTO db.t VALUES {values}")
    return "db.t"


def test_statements_join_and_commit_with_it(spark: SparkSession, wh: Warehouse, table: str) -> None:
    other = Warehouse.open(wh.root)  # another session of the same warehouse
    first = _deltas(wh)
    with wh.transaction() as txn:
        wh.table(table).insert([{"id": 6, "v": "f", "ds": "d1"}])  # the Python API, embedded
        # Spark SQL sees the transaction's own insert, and deletes it with row 1
        (deleted,) = spark.sql("DELETE FROM db.t WHERE id IN (1, 6)").collect()
        assert deleted.num_affected_rows == 2
        spark.sql("UPDATE db.t SET v = 'u' WHERE id = 2")
        spark.createDataFrame(
            [(3, "m", "d2"), (9, "n", "d4")], "id INT, v STRING, ds STRING"
        ).createOrReplaceTempView("src")
        spark.sql(
            "MERGE INTO db.t t USING src s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        inside = [(2, "u", "d1"), (3, "m", "d2"), (4, "d", "d2"), (5, "e", "d3"), (9, "n", "d4")]
        assert _spark_rows(spark) == inside  # Spark SQL reads the transaction's snapshot
        assert _rows(wh) == inside  # so does the Python API, Spark's writes included
        wh.table(table).delete("id = 4")  # a Python statement after Spark's
        assert _rows(other) == sorted(ROWS)  # nothing is visible outside before the commit
        txn_id = txn.id
    expected = [(2, "u", "d1"), (3, "m", "d2"), (5, "e", "d3"), (9, "n", "d4")]
    assert _rows(other) == expected
    assert _spark_rows(spark) == expected
    assert spark.conf.get("spark.acid.transaction", None) is None  # the session left it
    new = _deltas(wh) - first
    assert len({w for _, w, _ in new}) == 1, new  # one write id for the whole transaction
    # each statement its own statement id: insert, delete, update, merge (2: its inserts),
    # delete; the delete and insert halves of a statement share one
    statements = sorted({s for _, _, s in new})
    assert len(statements) == 6, new
    assert other.metastore.get_txn_state(txn_id) == "committed"


def test_rollback_discards_spark_statements(spark: SparkSession, wh: Warehouse, table: str) -> None:
    with pytest.raises(RuntimeError, match="changed my mind"), wh.transaction():
        spark.sql("DELETE FROM db.t WHERE ds = 'd1'")
        spark.sql("INSERT INTO db.t VALUES (7, 'g', 'd5')")
        assert _spark_rows(spark) == [
            (3, "c", "d2"),
            (4, "d", "d2"),
            (5, "e", "d3"),
            (7, "g", "d5"),
        ]
        raise RuntimeError("changed my mind")
    assert _rows(wh) == sorted(ROWS)
    assert _spark_rows(spark) == sorted(ROWS)
    assert spark.conf.get("spark.acid.transaction", None) is None


def test_failed_spark_statement_aborts_the_transaction(
    spark: SparkSession, wh: Warehouse, table: str
) -> None:
    spark.createDataFrame([(1, "x"), (1, "y")], "id INT, v STRING").createOrReplaceTempView("dup")
    merge = "MERGE INTO db.t t USING dup s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v"
    with (  # noqa: PT012
        pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"),
        wh.transaction(),
    ):
        wh.table(table).insert([{"id": 8, "v": "h", "ds": "d1"}])
        spark.sql(merge)
    assert _rows(wh) == sorted(ROWS)  # the insert before it is gone too

    # a transaction the failed statement aborted cannot commit what came before it
    txn = wh.transaction()
    try:
        wh.table(table).insert([{"id": 8, "v": "h", "ds": "d1"}])
        with pytest.raises(Exception, match="MERGE_CARDINALITY_VIOLATION"):
            spark.sql(merge)  # fails before its write began: it still aborts the transaction
        with pytest.raises(TxnAbortedError):
            wh.commit()
    finally:
        if wh.in_transaction:
            wh.rollback()
    assert txn.state == "aborted"
    assert _rows(wh) == sorted(ROWS)
