"""HiveQL reads the warehouse's tables, nothing else (issue 13, item 8).

Every DuckDB table function and table macro, every DuckDB statement that touches files,
extensions or settings, and every DuckDB setting a user might ``SET`` from HiveQL are tried; all
are refused (a typed error) and nothing they name is read, written or changed.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    AcidError,
    SandboxError,
    SqlSyntaxError,
    UnsupportedOperationError,
)
from acid_platform.sql import SqlSession, parse_script
from acid_platform.sql.sandbox import HIVE_FUNCTIONS


def _duckdb_names(kinds: str) -> list[str]:
    with duckdb.connect() as con:
        rows = con.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() "
            f"WHERE function_type IN ({kinds}) ORDER BY 1"
        ).fetchall()
    return [r[0] for r in rows]


TABLE_FUNCTIONS = _duckdb_names("'table', 'table_macro'")
PRAGMAS = _duckdb_names("'pragma'")
ENGINE_WORDS = {"PRAGMA", "CALL", "ATTACH", "DETACH", "INSTALL", "FORCE", "LOAD", "COPY"}
ENGINE_WORDS |= {"EXPORT", "IMPORT", "CHECKPOINT", "SUMMARIZE"}


@pytest.fixture()
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("top secret\n")
    return path


def _settings(wh: Warehouse) -> dict[str, object]:
    rows = wh.engine.execute("SELECT name, value FROM duckdb_settings()", {}).to_pylist()
    return {r["name"]: r["value"] for r in rows}


def test_every_duckdb_table_function_is_refused_in_from() -> None:
    assert {"read_text", "read_csv", "read_blob", "query", "duckdb_settings"} <= set(
        TABLE_FUNCTIONS
    )
    for name in TABLE_FUNCTIONS:
        outcomes = []
        for args in ("'/etc/passwd'", "'/etc/passwd', 'x'", ""):
            for text in (f"SELECT * FROM {name}({args})", f"SELECT * FROM t JOIN {name}({args})"):
                with pytest.raises((SandboxError, SqlSyntaxError)) as caught:
                    parse_script(text)
                outcomes.append(type(caught.value))
        # whatever arity parses is refused by the allow-list, by name
        assert SandboxError in outcomes, name


def test_table_functions_are_refused_where_they_are_not_hive_functions() -> None:
    for name in TABLE_FUNCTIONS:
        if name in HIVE_FUNCTIONS:  # repeat(str, n) is also a Hive string function
            continue
        with pytest.raises(AcidError):
            parse_script(f"SELECT {name}('/etc/passwd')")
    for text in (
        "SELECT 1 FROM t LATERAL VIEW read_text('/etc/passwd') v AS c",
        "SELECT current_setting('enable_external_access')",
        "SELECT getvariable('x')",
        "SELECT read_parquet('/x')",
        "SELECT unnest(array(1, 2))",
        "SELECT * FROM TABLE(read_text('/etc/passwd'))",
        "SELECT in_file('root', '/etc/passwd')",
        "SELECT reflect('java.lang.System', 'getenv', 'HOME')",
        "SELECT java_method('java.lang.Math', 'abs', -1)",
        "SELECT TRANSFORM(a) USING 'cat' AS b FROM t",
    ):
        with pytest.raises(SandboxError):
            parse_script(text)


def test_reads_of_files_are_refused_in_every_statement(
    wh: Warehouse, sql: SqlSession, secret: Path
) -> None:
    sql.execute(
        "CREATE TABLE t (a INT, s STRING) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    )
    sql.execute("INSERT INTO t VALUES (1, 'x')")
    metastore = Path(wh.root) / "_metastore.db"
    assert metastore.is_file()
    reads = [
        f"SELECT content FROM read_text('{secret}')",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT content FROM read_blob('{metastore}')",
        "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
        "SELECT * FROM sqlite_scan('/tmp/x.db', 't')",
        f"FROM read_text('{secret}') SELECT *",
        f"WITH q AS (SELECT content FROM read_text('{secret}')) SELECT * FROM q",
        f"SELECT (SELECT content FROM read_text('{secret}'))",
        f"SELECT * FROM t JOIN read_text('{secret}') r ON true",
        f"INSERT INTO t SELECT 2, content FROM read_text('{secret}')",
        f"INSERT OVERWRITE TABLE t SELECT 2, content FROM read_text('{secret}')",
        f"CREATE TABLE c STORED AS ORC TBLPROPERTIES ('transactional'='true') AS "
        f"SELECT content FROM read_text('{secret}')",
        f"CREATE TEMPORARY TABLE tmp AS SELECT content FROM read_text('{secret}')",
        f"MERGE INTO t USING (SELECT 1 AS a, content FROM read_text('{secret}')) s ON t.a = s.a "
        "WHEN MATCHED THEN UPDATE SET s = s.content",
        f"UPDATE t SET s = (SELECT content FROM read_text('{secret}'))",
        f"DELETE FROM t WHERE s IN (SELECT content FROM read_text('{secret}'))",
    ]
    for text in reads:
        with pytest.raises(SandboxError, match="not allowed") as caught:
            sql.execute(text)
        assert "top secret" not in str(caught.value)
    assert sql.execute("SELECT a, s FROM t").to_pylist() == [{"a": 1, "s": "x"}]
    assert sql.execute("SHOW TABLES").to_pylist() == [{"tab_name": "t"}]


def test_engine_statements_and_settings_are_refused(
    wh: Warehouse, sql: SqlSession, tmp_path: Path
) -> None:
    sql.execute("CREATE TABLE t (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    before = _settings(wh)
    assert before["enable_external_access"] == "false"
    statements = [
        "PRAGMA enable_external_access",
        *(f"PRAGMA {name}" for name in PRAGMAS),
        *(f"CALL {name}()" for name in ("pragma_version", "duckdb_settings")),
        f"ATTACH '{tmp_path}/x.db' AS x",
        "DETACH x",
        "INSTALL httpfs",
        "FORCE INSTALL httpfs",
        "LOAD httpfs",
        f"COPY t TO '{tmp_path}/out.csv'",
        "COPY t FROM '/etc/passwd'",
        f"EXPORT DATABASE '{tmp_path}/exp'",
        f"IMPORT DATABASE '{tmp_path}'",
        "RESET enable_external_access",
        "SET VARIABLE x = 1",
        "CHECKPOINT",
        "CREATE MACRO m(x) AS x",
        "CREATE MACRO tm() AS TABLE SELECT * FROM read_text('/etc/passwd')",
        "CREATE SECRET s (TYPE s3)",
        "CREATE VIEW v AS SELECT 1",
        "SUMMARIZE t",
        "DESCRIBE read_text('/etc/passwd')",
        "USE memory",
        "ADD FILE /etc/passwd",
        "INSERT OVERWRITE LOCAL DIRECTORY '/tmp/out' SELECT * FROM t",
    ]
    for text in statements:
        with pytest.raises(AcidError):
            sql.execute(text)
    engine_only = [t for t in statements if t.split()[0] in ENGINE_WORDS]
    assert len(engine_only) > len(PRAGMAS)
    for text in engine_only:
        with pytest.raises(SandboxError, match="statement of the embedded engine"):
            sql.execute(text)
    sql.execute("CREATE TABLE l (a INT) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    with pytest.raises(UnsupportedOperationError, match="LOAD DATA is not supported"):
        sql.execute("LOAD DATA INPATH '/etc/passwd' INTO TABLE l")
    # SET is Hive's: it sets a session variable, never an engine setting
    for name, value in before.items():
        flipped = {"false": "true", "true": "false"}.get(str(value).lower(), "1")
        sql.execute(f"SET {name}={flipped}")
    assert _settings(wh) == before
    assert not [n for n in ("x.db", "out.csv", "exp") if (tmp_path / n).exists()]
    assert sql.execute("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 0}]


def test_hive_functions_still_run(sql: SqlSession) -> None:
    sql.execute(
        "CREATE TABLE h (a INT, s STRING, xs ARRAY<INT>) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    sql.execute("INSERT INTO h SELECT 1, 'a-1', array(1, 2) UNION ALL SELECT 2, 'b-2', array(3)")
    rows = sql.execute(
        "SELECT a, ntile(2) OVER (ORDER BY a) AS n, nvl(NULL, s) AS s2, "
        "concat_ws('/', s, 'x') AS c, regexp_extract(s, '([a-z])-', 1) AS r, "
        "get_json_object('{\"k\": 7}', '$.k') AS j, int('5') AS i, size(xs) AS k "
        "FROM h ORDER BY a"
    ).to_pylist()
    assert rows == [
        {"a": 1, "n": 1, "s2": "a-1", "c": "a-1/x", "r": "a", "j": "7", "i": 5, "k": 2},
        {"a": 2, "n": 2, "s2": "b-2", "c": "b-2/x", "r": "b", "j": "7", "i": 5, "k": 1},
    ]
    exploded = sql.execute("SELECT a, x FROM h LATERAL VIEW explode(xs) v AS x ORDER BY x")
    assert exploded.to_pylist() == [{"a": 1, "x": 1}, {"a": 1, "x": 2}, {"a": 2, "x": 3}]
