"""A Spark SQL DELETE / UPDATE / MERGE racing another writer never loses an update.

Spark runs the statement's scan of the target (its shuffle stages, under adaptive execution)
before it asks for the writer that opens the transaction and takes the lock, so another
transaction can commit a change of the scanned rows in between. Found by this test: the row an
UPDATE read was updated by the other writer meanwhile, and both new versions stayed (two rows
with one key). The commit now checks the write set from the snapshot the scan read at (Hive's
first-committer-wins rule): the later statement fails with a write conflict and writes nothing.

The race is made deterministic: a Python UDF in the statement's WHERE runs inside the scan and,
on the first row it sees, commits the other writer's statement through a second warehouse
handle (another session, its own metastore connection) before the scan goes on.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow


def _rows(wh: Warehouse) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in wh.query("SELECT * FROM db.r").to_pylist())


def _interfering(
    spark: SparkSession, root: str, marker: Path, other_write: Callable[[Warehouse], object]
) -> None:
    """Register ``interfere(id)``: true for every row; on the first call, ``other_write`` runs
    and commits in another session (a marker file records that it committed)."""

    def interfere(key: int) -> bool:
        if not os.path.exists(marker):
            marker.write_text("started")
            other = Warehouse.open(root, conf={"acid.lock.wait.timeout.s": "5"})
            try:
                other_write(other)
                marker.write_text("committed")
            finally:
                other.close()
        return True

    spark.udf.register("interfere", interfere, "boolean")


@pytest.fixture
def table(spark: SparkSession, wh: Warehouse) -> str:
    wh.create_database("db")
    spark.sql("CREATE TABLE db.r (id INT, v STRING) USING acid")
    spark.sql("INSERT INTO db.r VALUES (1, 'orig'), (2, 'two')")
    return "db.r"


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE db.r SET v = 'A' WHERE id = 1 AND interfere(id)",
        "DELETE FROM db.r WHERE id = 1 AND interfere(id)",
        "MERGE INTO db.r t USING (SELECT 1 AS id, 'A' AS v) s ON t.id = s.id "
        "WHEN MATCHED AND interfere(t.id) THEN UPDATE SET *",
    ],
    ids=["update", "delete", "merge"],
)
def test_a_concurrent_update_of_the_scanned_rows_is_a_write_conflict(
    spark: SparkSession, wh: Warehouse, table: str, tmp_path: Path, statement: str
) -> None:
    marker = tmp_path / "other"
    _interfering(spark, wh.root, marker, lambda o: o.table(table).update({"v": "'B'"}, "id = 1"))
    with pytest.raises(Exception, match="write conflict on db/r"):
        spark.sql(statement)
    assert marker.read_text() == "committed"  # the other writer committed during the scan
    assert _rows(wh) == [(1, "B"), (2, "two")]  # its update stands; nothing of ours is visible
    # the conflict is not sticky: run again, the statement reads the new row and succeeds
    spark.sql(statement.replace("interfere(id)", "true").replace("interfere(t.id)", "true"))
    assert _rows(wh) == ([(2, "two")] if "DELETE" in statement else [(1, "A"), (2, "two")])


def test_a_concurrent_insert_is_no_conflict(
    spark: SparkSession, wh: Warehouse, table: str, tmp_path: Path
) -> None:
    marker = tmp_path / "other"
    _interfering(spark, wh.root, marker, lambda o: o.table(table).insert([{"id": 3, "v": "new"}]))
    (result,) = spark.sql("UPDATE db.r SET v = 'A' WHERE interfere(id)").collect()
    assert marker.read_text() == "committed"
    assert result.num_affected_rows == 2  # the rows its scan read
    assert _rows(wh) == [(1, "A"), (2, "A"), (3, "new")]  # Hive: inserts never conflict
