"""HiveQL text -> statements: the seeds' SQL, every statement form, syntax error positions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sqlglot import exp

from acid_platform.errors import SqlSyntaxError, UnsupportedOperationError
from acid_platform.sql import statements as st
from acid_platform.sql.parser import parse_script, parse_statement
from acid_platform.sql.script import split_script, substitute

SEED_STATEMENTS = Path(__file__).with_name("seed_statements.sql")


def test_every_seed_statement_parses() -> None:
    statements = parse_script(SEED_STATEMENTS.read_text(encoding="utf-8"))
    kinds = Counter(type(s).__name__ for s in statements)
    assert len(statements) == 64
    assert kinds == {
        "Select": 16,
        "SetVariable": 16,
        "CreateTable": 12,
        "Insert": 6,
        "Merge": 4,
        "Compact": 4,
        "Show": 2,
        "ShowCompactions": 1,
        "Update": 2,
        "AlterTable": 1,
    }
    # ${var} references were all resolved from the script's own SET hivevar statements.
    assert not [s.source.line for s in statements if "${" in s.source.text]


def test_seed_000_create_table() -> None:
    stmt = parse_statement(
        "CREATE TABLE employee (id int, name string, salary int)\n"
        "STORED AS ORC TBLPROPERTIES ('transactional' = 'true');"
    )
    assert stmt == st.CreateTable(
        st.TableName("employee"),
        (
            st.ColumnSpec("id", "int"),
            st.ColumnSpec("name", "string"),
            st.ColumnSpec("salary", "int"),
        ),
        properties=(("transactional", "true"),),
        stored_as="orc",
    )


def test_create_table_with_every_clause() -> None:
    stmt = parse_statement(
        """create table if not exists tmp.t (b int not null comment 'key', v decimal(10, 2),
             m map<string, array<struct<x:int>>>)
           partitioned by (ds string, hr int) clustered by (b) sorted by (b) into 4 buckets
           row format delimited fields terminated by ',' stored as orc location 'hdfs:///x'
           tblproperties ("transactional"="true", 'bucketing_version'='2')"""
    )
    assert isinstance(stmt, st.CreateTable)
    assert stmt.table == st.TableName("t", "tmp") and stmt.if_not_exists
    assert stmt.columns == (
        st.ColumnSpec("b", "int", not_null=True, comment="key"),
        st.ColumnSpec("v", "decimal(10,2)"),
        st.ColumnSpec("m", "map<string,array<struct<x:int>>>"),
    )
    assert [c.name for c in stmt.partition_columns] == ["ds", "hr"]
    assert (stmt.bucket_columns, stmt.sorted_by, stmt.num_buckets) == (("b",), ("b",), 4)
    assert stmt.properties == (("transactional", "true"), ("bucketing_version", "2"))
    assert (stmt.location, stmt.row_format, stmt.stored_as) == ("hdfs:///x", True, "orc")


def test_ctas_temporary_and_like() -> None:
    ctas = parse_statement(
        "create temporary table c stored as orc as select a, count(*) n from t group by a"
    )
    assert (
        isinstance(ctas, st.CreateTable) and ctas.temporary and isinstance(ctas.query, exp.Select)
    )
    like = parse_statement("CREATE TABLE t2 LIKE db.t1")
    assert isinstance(like, st.CreateTable) and like.like == st.TableName("t1", "db")


@pytest.mark.parametrize(
    ("text", "static", "dynamic", "columns", "overwrite"),
    [
        ("INSERT INTO employee VALUES (1, 'Jerry', 5000)", (), (), None, False),
        (
            "INSERT INTO TABLE t PARTITION (ds='2024-01-01', hr=7) SELECT a FROM s",
            (("ds", "2024-01-01"), ("hr", 7)),
            (),
            None,
            False,
        ),
        ("INSERT INTO t PARTITION (ds) SELECT a, ds FROM s", (), ("ds",), None, False),
        (
            "INSERT OVERWRITE TABLE t PARTITION (ds='x', hr) SELECT a, hr FROM s",
            (("ds", "x"),),
            ("hr",),
            None,
            True,
        ),
        ("INSERT INTO t (b, a) VALUES (1, 2)", (), (), ("b", "a"), False),
    ],
)
def test_insert_forms(
    text: str,
    static: tuple[tuple[str, object], ...],
    dynamic: tuple[str, ...],
    columns: tuple[str, ...] | None,
    overwrite: bool,
) -> None:
    stmt = parse_statement(text)
    assert isinstance(stmt, st.Insert)
    assert (stmt.static_partition, stmt.dynamic_partition, stmt.columns, stmt.overwrite) == (
        static,
        dynamic,
        columns,
        overwrite,
    )
    assert isinstance(stmt.query, exp.Query)


def test_insert_after_with_keeps_the_cte() -> None:
    stmt = parse_statement("with a as (select 1 as x) insert into t select * from a")
    assert isinstance(stmt, st.Insert)
    assert stmt.query.sql(dialect="hive") == "WITH a AS (SELECT 1 AS x) SELECT * FROM a"


def test_update_and_delete() -> None:
    update = parse_statement("UPDATE employee SET salary = salary * 2, name = 'x' WHERE id = 2")
    assert isinstance(update, st.Update)
    assert [(c, e.sql(dialect="hive")) for c, e in update.assignments] == [
        ("salary", "salary * 2"),
        ("name", "'x'"),
    ]
    assert update.where is not None and update.where.sql(dialect="hive") == "id = 2"
    delete = parse_statement("DELETE FROM db.t")
    assert delete == st.Delete(st.TableName("t", "db"))


def test_seed_003_merge_clauses() -> None:
    stmt = parse_statement(
        """merge into tmp.tstmerge dst using tmp.srcmerge src on src.id=dst.id
           when matched and src.id = 0 then delete
           when matched then update set v=concat(dst.v, src.v)
           when not matched then insert values (src.b, src.v, src.id)"""
    )
    assert isinstance(stmt, st.Merge)
    assert (stmt.target, stmt.target_alias, stmt.using, stmt.source_alias) == (
        st.TableName("tstmerge", "tmp"),
        "dst",
        st.TableName("srcmerge", "tmp"),
        "src",
    )
    assert [(c.action, c.matched, c.condition is not None) for c in stmt.clauses] == [
        ("delete", True, True),
        ("update", True, False),
        ("insert", False, False),
    ]
    assert [v.sql(dialect="hive") for v in stmt.clauses[2].insert_values] == [
        "src.b",
        "src.v",
        "src.id",
    ]


def test_merge_with_query_source_and_by_source() -> None:
    stmt = parse_statement(
        """MERGE INTO t USING (SELECT id, v FROM s) AS x ON t.id = x.id
           WHEN NOT MATCHED THEN INSERT (id, v) VALUES (x.id, x.v)
           WHEN NOT MATCHED BY SOURCE THEN DELETE"""
    )
    assert isinstance(stmt, st.Merge) and isinstance(stmt.using, exp.Select)
    assert (stmt.target_alias, stmt.source_alias) == ("t", "x")
    assert stmt.clauses[0].insert_columns == ("id", "v")
    assert (stmt.clauses[1].action, stmt.clauses[1].by_source) == ("delete", True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("BEGIN", st.Begin()),
        ("START TRANSACTION", st.Begin()),
        ("COMMIT WORK", st.Commit()),
        ("ROLLBACK", st.Rollback()),
        ("ABORT TRANSACTIONS 12 13", st.AbortTransactions((12, 13))),
        ("SHOW TRANSACTIONS", st.Show("transactions")),
        ("SHOW LOCKS db.t EXTENDED", st.Show("locks", table=st.TableName("t", "db"))),
        ("SHOW LOCKS DATABASE db", st.Show("locks", database="db")),
        ("SHOW COMPACTIONS", st.ShowCompactions()),
        ("SHOW TABLES IN `db` LIKE 'emp*'", st.Show("tables", database="db", pattern="emp*")),
        ("SHOW SCHEMAS", st.Show("databases")),
        ("SHOW COLUMNS IN t FROM db", st.Show("columns", table=st.TableName("t", "db"))),
        (
            "SET hive.merge.cardinality.check=false",
            st.SetVariable("hive.merge.cardinality.check", "false"),
        ),
        (
            "set hivevar:D='2018-06-01 01:02:02'",
            st.SetVariable("hivevar:D", "'2018-06-01 01:02:02'"),
        ),
        ("SET", st.SetVariable()),
        ("SET hive.txn.xlock.write", st.SetVariable("hive.txn.xlock.write")),
        ("ALTER TABLE employee COMPACT 'minor'", st.Compact(st.TableName("employee"), "minor")),
        (
            "alter table db.t partition (ds='a', hr=1) compact 'MAJOR' and wait",
            st.Compact(st.TableName("t", "db"), "major", (("ds", "a"), ("hr", 1)), wait=True),
        ),
        ("USE tmp", st.UseDatabase("tmp")),
        ("CREATE SCHEMA IF NOT EXISTS tmp", st.CreateDatabase("tmp", if_not_exists=True)),
        (
            "DROP DATABASE IF EXISTS tmp CASCADE",
            st.DropDatabase("tmp", if_exists=True, cascade=True),
        ),
        ("DROP TABLE IF EXISTS tmp.t", st.DropTable(st.TableName("t", "tmp"), if_exists=True)),
        ("TRUNCATE TABLE t PARTITION (ds='x')", st.Truncate(st.TableName("t"), (("ds", "x"),))),
        ("DESCRIBE FORMATTED db.t", st.Describe(st.TableName("t", "db"), "formatted")),
    ],
)
def test_commands(text: str, expected: st.Statement) -> None:
    assert parse_statement(text) == expected


def test_split_ignores_semicolons_in_strings_and_comments() -> None:
    chunks = split_script("select ';' as a; -- not; a statement\nselect 2;;\n  /* ; */ select 3")
    assert [c.text for c in chunks] == ["select ';' as a", "select 2", "select 3"]
    assert [(c.line, c.col) for c in chunks] == [(1, 1), (2, 1), (3, 11)]


def test_variables_follow_set_statements() -> None:
    statements = parse_script(
        "set hivevar:t=emp; set hivevar:n=3; select * from ${t} where id = ${hivevar:n}"
    )
    select = statements[-1]
    assert isinstance(select, st.Select)
    assert select.query.sql(dialect="hive") == "SELECT * FROM emp WHERE id = 3"
    assert (
        substitute("${hiveconf:a} ${b} ${zzz}", {"hiveconf:a": "1", "b": "2"}.get) == "1 2 ${zzz}"
    )


def test_syntax_error_points_at_line_and_column() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_script("SELECT 1;\nUPDATE employee SET salary = WHERE id = 2;")
    error = caught.value
    assert (error.line, error.col) == (2, 30)
    assert str(error).startswith("line 2, column 30:")
    assert "UPDATE employee SET salary = WHERE id = 2;" in str(error)
    assert "\n  " + " " * 29 + "^" in str(error)


def test_syntax_error_in_a_hive_command() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse_script("select 1;\n  ALTER TABLE t COMPACT 'medium'")
    assert (caught.value.line, caught.value.col) == (2, 25)
    assert "'minor', 'major' or 'rebalance'" in str(caught.value)


def test_unknown_statement_is_hive_worded() -> None:
    with pytest.raises(
        SqlSyntaxError, match=r"line 1, column 1: cannot recognize input near 'selec' '\*' 'from'"
    ):
        parse_script("selec * from t")


def test_unterminated_string_is_a_syntax_error() -> None:
    with pytest.raises(SqlSyntaxError):
        parse_script("select 'abc from t")


def test_nothing_runs_when_a_later_statement_is_bad() -> None:
    # parse_script reads all statements first; the executor only ever sees a fully parsed script
    with pytest.raises(SqlSyntaxError) as caught:
        parse_script("create table a (x int);\ninsert into a values (1);\nselect from where;")
    assert caught.value.line == 3


@pytest.mark.parametrize(
    "text",
    ["LOAD DATA INPATH '/x' INTO TABLE t", "CREATE VIEW v AS SELECT 1", "GRANT SELECT ON t TO u"],
)
def test_unsupported_statements_are_refused_at_parse_time(text: str) -> None:
    with pytest.raises((UnsupportedOperationError, SqlSyntaxError)):
        parse_statement(text)
