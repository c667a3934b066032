"""SHOW LOCKS as Hive 4 prints it: the header of ``ShowLocksOperation.dumpLockInfo`` column by
column, ``SHOW LOCKS t PARTITION (…)`` (exactly that partition's lock components, as Hive's
``ShowLocksRequest.partname``), and times as UTC timestamps (issue 14 item 7)."""

from __future__ import annotations

import re

import pytest

from acid_platform import Warehouse
from acid_platform.errors import SemanticError
from acid_platform.sql import SqlSession
from acid_platform.sql import statements as st
from acid_platform.sql.parser import parse_statement

# Hive 4's ShowLocksOperation.dumpLockInfo header, in its order.
HIVE4_HEADER = [
    "Lock ID",
    "Database",
    "Table",
    "Partition",
    "State",
    "Blocked By",
    "Type",
    "Transaction ID",
    "Last Heartbeat",
    "Acquired At",
    "User",
    "Hostname",
    "Agent Info",
]
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


def _table(sql: SqlSession) -> None:
    sql.execute(
        "CREATE TABLE p (k int, v string) PARTITIONED BY (ds string) "
        "STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    )
    sql.execute("INSERT INTO p PARTITION (ds='a') VALUES (1, 'x')")
    sql.execute("INSERT INTO p PARTITION (ds='b/c') VALUES (2, 'y')")


def test_show_locks_partition_keeps_that_partitions_locks(wh: Warehouse, sql: SqlSession) -> None:
    _table(sql)
    sql.execute("BEGIN; INSERT INTO p PARTITION (ds='b/c') VALUES (3, 'w')")
    every = sql.execute("SHOW LOCKS p")
    assert every.column_names == HIVE4_HEADER
    (row,) = every.to_pylist()
    assert row["Partition"] == "ds=b%2Fc"  # Hive's makePartName escaping
    shown = sql.execute("SHOW LOCKS p PARTITION (ds='b/c')")
    assert shown.column_names == HIVE4_HEADER
    assert shown.to_pylist() == [row]
    assert sql.execute("SHOW LOCKS p PARTITION (ds='a')").num_rows == 0
    assert sql.execute("SHOW LOCKS default.p PARTITION (ds='b/c') EXTENDED").num_rows == 1
    assert STAMP.fullmatch(row["Acquired At"])
    assert row["Transaction ID"] == wh.current_transaction.id  # type: ignore[union-attr]
    sql.execute("COMMIT")
    assert sql.execute("SHOW LOCKS p PARTITION (ds='b/c')").num_rows == 0


def test_show_locks_partition_needs_every_partition_column(sql: SqlSession) -> None:
    _table(sql)
    with pytest.raises(SemanticError, match=r"SHOW LOCKS … PARTITION: give every partition column"):
        sql.execute("SHOW LOCKS p PARTITION (x='a')")


def test_show_locks_partition_parses() -> None:
    stmt = parse_statement("SHOW LOCKS db.t PARTITION (ds='2024-01-01', h=3)")
    assert isinstance(stmt, st.Show) and stmt.what == "locks"
    assert stmt.table == st.TableName("t", "db")
    assert stmt.partition == (("ds", "2024-01-01"), ("h", 3))
