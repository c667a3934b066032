"""Statements end to end: transactions, SHOW, DDL, partitions, sub-queries, and bad input."""

from __future__ import annotations

import os
import typing
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.engines import default_engine
from acid_platform.errors import (
    AcidError,
    CardinalityViolationError,
    InvalidPartitionError,
    NoSuchObjectError,
    NotNullViolationError,
    SchemaMismatchError,
    SemanticError,
    TransactionStateError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.metastore.show import SHOW_LOCKS_COLUMNS, SHOW_TRANSACTIONS_COLUMNS
from acid_platform.sql import SqlSession
from acid_platform.table.warehouse import TableWarehouse
from acid_platform_tests.helpers import acid_dirs, data_files

EMPLOYEE = """
CREATE TABLE employee (id int NOT NULL, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
INSERT INTO employee VALUES (1, 'Jerry', 5000), (2, 'Tom', 8000), (3, 'Kate', 6000);
"""


def names(sql: SqlSession, query: str = "SELECT name FROM employee ORDER BY name") -> list[str]:
    return [r["name"] for r in sql.execute(query).to_pylist()]


# --------------------------------------------------------------------------- transactions
def test_begin_commit_is_one_write_id_with_statement_ids(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    other = Warehouse.open(wh.root).sql_session
    try:
        sql.execute("START TRANSACTION; INSERT INTO employee VALUES (4, 'Mary', 9000)")
        assert "Mary" in names(sql)  # the transaction sees its own write
        assert "Mary" not in names(other)  # nobody else does before COMMIT
        txns = sql.execute("SHOW TRANSACTIONS")
        assert txns.column_names == list(SHOW_TRANSACTIONS_COLUMNS)
        assert txns.column("Transaction State").to_pylist() == ["OPEN"]
        sql.execute("UPDATE employee SET salary = 1 WHERE id = 4; COMMIT")
        assert other.execute("SELECT salary FROM employee WHERE id = 4").to_pylist() == [
            {"salary": 1}
        ]
    finally:
        other.warehouse.close()
    assert acid_dirs(Path(wh.root) / "employee") == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]


def test_rollback_discards_the_transaction(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute(
        "BEGIN; DELETE FROM employee WHERE id = 1; INSERT INTO employee VALUES (9, 'Zed', 1)"
    )
    assert names(sql) == ["Kate", "Tom", "Zed"]
    sql.execute("ROLLBACK")
    assert names(sql) == ["Jerry", "Kate", "Tom"]
    assert not wh.in_transaction
    with pytest.raises(TransactionStateError):
        sql.execute("COMMIT")


def test_show_locks_while_a_transaction_holds_them(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute("BEGIN; UPDATE employee SET salary = 0 WHERE id = 1")
    locks = sql.execute("SHOW LOCKS")
    assert locks.column_names == list(SHOW_LOCKS_COLUMNS)
    rows = locks.to_pylist()
    assert [(r["Database"], r["Table"], r["State"], r["Type"]) for r in rows] == [
        ("default", "employee", "ACQUIRED", "EXCL_WRITE")
    ]
    assert sql.execute("SHOW LOCKS employee").num_rows == 1
    assert sql.execute("SHOW LOCKS other_table").num_rows == 0
    sql.execute("COMMIT")
    assert sql.execute("SHOW LOCKS").num_rows == 0
    assert sql.execute("SHOW COMPACTIONS").num_rows == 0


def test_abort_transactions_of_another_session(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    other = Warehouse.open(wh.root)
    try:
        other.sql("BEGIN; INSERT INTO employee VALUES (7, 'Ghost', 0)")
        txn_id = other.current_transaction.id  # type: ignore[union-attr]
        sql.execute(f"ABORT TRANSACTIONS {txn_id}")
        assert sql.execute("SHOW TRANSACTIONS").to_pylist()[0]["Transaction State"] == "ABORTED"
        with pytest.raises(AcidError):
            other.sql("COMMIT")
    finally:
        other.close()
    assert "Ghost" not in names(sql)


# --------------------------------------------------------------------------- queries
def test_select_join_aggregate_and_row_id(sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute(
        """CREATE TABLE dept (emp_id int, dept string);
           INSERT INTO dept VALUES (1, 'eng'), (2, 'eng'), (3, 'ops');
           UPDATE employee SET salary = salary + 1 WHERE id = 3"""
    )
    result = sql.execute(
        """SELECT d.dept, count(*), sum(e.salary) AS total, max(e.row__id.writeid) AS newest
           FROM employee e JOIN dept d ON e.id = d.emp_id
           GROUP BY d.dept ORDER BY d.dept"""
    )
    assert result.column_names == ["dept", "_c1", "total", "newest"]
    assert result.to_pylist() == [
        {"dept": "eng", "_c1": 2, "total": 13000, "newest": 1},
        {"dept": "ops", "_c1": 1, "total": 6001, "newest": 2},
    ]


def test_select_unknown_table_and_column(sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    with pytest.raises(NoSuchObjectError, match="nope"):
        sql.execute("SELECT * FROM nope")
    with pytest.raises(
        UnknownColumnError, match=r"unknown column 'wage' .*default\.employee: id, name, salary"
    ):
        sql.execute("SELECT wage FROM employee")
    with pytest.raises(AcidError, match="no_such_udf"):
        sql.execute("SELECT no_such_udf(id) FROM employee")


def test_merge_when_not_matched_by_source(sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute(
        """MERGE INTO employee AS t
           USING (SELECT 2 AS id, 'Tom' AS name, 1 AS salary UNION ALL SELECT 5, 'Eve', 2) AS s ON t.id = s.id
           WHEN MATCHED THEN UPDATE SET salary = s.salary
           WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, s.salary)
           WHEN NOT MATCHED BY SOURCE AND t.name = 'Kate' THEN DELETE"""
    )
    assert sql.execute("SELECT name, salary FROM employee ORDER BY id").to_pylist() == [
        {"name": "Jerry", "salary": 5000},
        {"name": "Tom", "salary": 1},
        {"name": "Eve", "salary": 2},
    ]


def test_wh_sql_keeps_the_session_on_the_warehouse(wh: Warehouse) -> None:
    wh.sql("CREATE DATABASE hr; USE hr; CREATE TABLE t (a int)")
    assert wh.sql("INSERT INTO t VALUES (1); SELECT a FROM t").to_pylist() == [{"a": 1}]
    assert wh.sql_session.database == "hr"
    assert wh.list_tables("hr") == ["t"]
    # another warehouse object is another session: its own current database
    other = Warehouse.open(wh.root)
    try:
        assert other.sql_session is not wh.sql_session
        assert other.sql_session.database == "default"
    finally:
        other.close()


def test_a_session_on_the_table_layer_warehouse(wh: Warehouse) -> None:
    """The SQL layer is typed against the table layer's warehouse: a plain TableWarehouse with
    an engine runs HiveQL through its own SqlSession, nothing attached to it."""
    assert typing.get_type_hints(SqlSession)["warehouse"] is TableWarehouse
    plain = TableWarehouse.open(wh.root, engine=default_engine())
    try:
        session = SqlSession(plain)
        session.execute("CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)")
        assert session.execute("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 2}]
        assert not hasattr(plain, "sql_session")
        with pytest.raises(NoSuchObjectError, match="Database does not exist: nope"):
            session.execute("USE nope")
    finally:
        plain.close()
    assert wh.sql("SELECT sum(a) AS s FROM t").to_pylist() == [{"s": 3}]


# --------------------------------------------------------------------------- DDL and partitions
def test_partitions_static_dynamic_and_overwrite(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        """CREATE TABLE sales (item string, qty int) PARTITIONED BY (ds string)
             CLUSTERED BY (item) INTO 2 BUCKETS STORED AS ORC;
           INSERT INTO sales PARTITION (ds='2024-01-01') VALUES ('a', 1), ('b', 2);
           INSERT INTO TABLE sales PARTITION (ds) SELECT item, qty * 10, '2024-01-02' FROM sales;
           INSERT INTO sales SELECT 'c', 3, '2024-01-03';"""
    )
    table_dir = Path(wh.root) / "sales"
    assert sorted(os.listdir(table_dir)) == ["ds=2024-01-01", "ds=2024-01-02", "ds=2024-01-03"]
    assert sql.execute("SELECT ds, sum(qty) FROM sales GROUP BY ds ORDER BY ds").to_pylist() == [
        {"ds": "2024-01-01", "_c1": 3},
        {"ds": "2024-01-02", "_c1": 30},
        {"ds": "2024-01-03", "_c1": 3},
    ]
    sql.execute("INSERT OVERWRITE TABLE sales PARTITION (ds='2024-01-01') VALUES ('z', 26)")
    assert acid_dirs(table_dir / "ds=2024-01-01") == ["base_0000004", "delta_0000001_0000001_0000"]
    assert sql.execute("SELECT item FROM sales WHERE ds = '2024-01-01'").to_pylist() == [
        {"item": "z"}
    ]
    sql.execute("TRUNCATE TABLE sales PARTITION (ds='2024-01-02')")
    assert sql.execute("SELECT count(*) AS n FROM sales").to_pylist() == [{"n": 2}]
    assert sql.execute("SHOW PARTITIONS sales").column("partition").to_pylist() == [
        "ds=2024-01-01",
        "ds=2024-01-02",
        "ds=2024-01-03",
    ]


def test_partition_values_cannot_leave_the_table_directory(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute("CREATE TABLE p (v int) PARTITIONED BY (k string)")
    sql.execute("INSERT INTO p PARTITION (k='../../escape') VALUES (1)")
    sql.execute("INSERT INTO p PARTITION (k) VALUES (2, 'a/b'), (3, '..')")
    table_dir = Path(wh.root) / "p"
    # Hive's escaping: '/' is %2F, so every value is one plain directory name inside the table
    assert sorted(os.listdir(table_dir)) == ["k=..", "k=..%2F..%2Fescape", "k=a%2Fb"]
    assert {f.split(os.sep)[0] for f in data_files(wh.root)} == {"p"}
    assert sql.execute("SELECT k, v FROM p ORDER BY v").to_pylist() == [
        {"k": "../../escape", "v": 1},
        {"k": "a/b", "v": 2},
        {"k": "..", "v": 3},
    ]


def test_ctas_describe_show_use_and_drop(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute(
        """CREATE DATABASE IF NOT EXISTS hr; USE hr;
           CREATE TABLE rich AS SELECT id, upper(name) AS name, salary / 1000 FROM default.employee WHERE salary > 5500"""
    )
    assert sql.execute("SHOW TABLES").to_pylist() == [{"tab_name": "rich"}]
    assert sql.execute("DESCRIBE rich").to_pylist() == [
        {"col_name": "id", "data_type": "int", "comment": ""},
        {"col_name": "name", "data_type": "string", "comment": ""},
        {"col_name": "_c2", "data_type": "double", "comment": ""},
    ]
    assert sql.execute("SELECT name FROM rich ORDER BY name").column("name").to_pylist() == [
        "KATE",
        "TOM",
    ]
    assert sql.execute("SHOW DATABASES LIKE 'h*|def*'").column("database_name").to_pylist() == [
        "default",
        "hr",
    ]
    assert sql.execute("SHOW TABLES IN default LIKE 'emp*'").column("tab_name").to_pylist() == [
        "employee"
    ]
    sql.execute("CREATE TABLE copy LIKE default.employee; DROP TABLE rich")
    assert wh.list_tables("hr") == ["copy"]
    sql.execute("USE default; DROP DATABASE hr CASCADE")
    assert "hr" not in wh.list_databases()


def test_set_and_variables(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute("SET hive.merge.cardinality.check=false; set hivevar:who='Tom'")
    assert wh.conf["hive.merge.cardinality.check"] == "false"
    assert sql.execute("SELECT id FROM employee WHERE name = ${who}").to_pylist() == [{"id": 2}]
    assert sql.execute("SET hivevar:who").to_pylist() == [{"set": "hivevar:who='Tom'"}]


def test_delete_with_an_uncorrelated_subquery(sql: SqlSession) -> None:
    sql.execute(EMPLOYEE)
    sql.execute("CREATE TABLE leavers (id int); INSERT INTO leavers VALUES (1), (3)")
    sql.execute("DELETE FROM employee WHERE id IN (SELECT id FROM leavers)")
    assert names(sql) == ["Tom"]
    sql.execute(
        "UPDATE employee SET salary = (SELECT max(id) FROM leavers) WHERE id NOT IN (SELECT id FROM leavers)"
    )
    assert sql.execute("SELECT salary FROM employee").to_pylist() == [{"salary": 3}]


# --------------------------------------------------------------------------- bad input: clear error, nothing written
@pytest.mark.parametrize(
    ("statement", "error", "match"),
    [
        ("INSERT INTO nope VALUES (1)", NoSuchObjectError, "nope"),
        ("UPDATE employee SET wage = 1", UnknownColumnError, "wage"),
        ("DELETE FROM employee WHERE wage > 1", UnknownColumnError, "wage"),
        ("INSERT INTO employee VALUES ('abc', 'x', 1)", SchemaMismatchError, "'id'"),
        ("INSERT INTO employee VALUES (5, 'x')", SemanticError, "column number"),
        ("INSERT INTO employee (name) VALUES ('nobody')", NotNullViolationError, "'id'"),
        ("INSERT INTO employee VALUES (NULL, 'x', 1)", NotNullViolationError, "'id'"),
        (
            "INSERT INTO employee PARTITION (ds='x') VALUES (5, 'x', 1)",
            InvalidPartitionError,
            "not partitioned",
        ),
        ("UPDATE employee SET salary = 'lots' WHERE id = 1", SchemaMismatchError, "'salary'"),
        (
            "MERGE INTO employee t USING employee s ON t.id > 0 WHEN MATCHED THEN DELETE",
            CardinalityViolationError,
            "more than one source row",
        ),
        (
            "MERGE INTO employee t USING employee s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id)",
            SemanticError,
            "1 value",
        ),
        ("CREATE TABLE bad (m map)", SemanticError, "map"),
        ("CREATE TABLE t2 (a int) STORED AS PARQUET", UnsupportedOperationError, "ORC"),
        ("CREATE EXTERNAL TABLE t2 (a int)", UnsupportedOperationError, "external"),
        (
            "CREATE TABLE t2 (a int) TBLPROPERTIES ('transactional'='false')",
            UnsupportedOperationError,
            "transactional",
        ),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    wh: Warehouse, sql: SqlSession, statement: str, error: type[Exception], match: str
) -> None:
    sql.execute(EMPLOYEE)
    before = data_files(wh.root)
    with pytest.raises(error, match=match):
        sql.execute(statement)
    assert data_files(wh.root) == before
    assert names(sql) == ["Jerry", "Kate", "Tom"]
