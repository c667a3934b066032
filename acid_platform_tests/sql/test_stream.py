"""Streamed SELECT on a real warehouse: the same rows as the whole result, the snapshot (reader
lease, or the query's own read-only transaction) held exactly while the rows flow, and scripts
whose query results are read as they come."""

from __future__ import annotations

import sqlglot

from acid_platform import Warehouse
from acid_platform.sql import SqlSession
from acid_platform.sql.results import StatementResult


def _setup(sql: SqlSession) -> None:
    sql.execute(
        "CREATE TABLE t (id int, name string) PARTITIONED BY (p int) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true');"
        "CREATE TABLE u (id int, score int) STORED AS ORC TBLPROPERTIES ('transactional'='true');"
        "INSERT INTO t PARTITION (p) VALUES (1, 'a', 1), (2, 'b', 1), (3, 'c', 2), (4, NULL, 2);"
        "INSERT INTO u VALUES (1, 10), (3, 30);"
    )


def _query(text: str) -> sqlglot.exp.Query:
    tree = sqlglot.parse_one(text, read="hive")
    assert isinstance(tree, sqlglot.exp.Query)
    return tree


def test_a_streamed_query_releases_its_reader_lease_when_done(
    wh: Warehouse, sql: SqlSession
) -> None:
    _setup(sql)
    query = _query("SELECT p, count(*) AS n FROM t WHERE p = 2 OR id = 1 GROUP BY p ORDER BY p")
    whole = sql.query(query)
    assert whole.to_pylist() == [{"p": 1, "n": 1}, {"p": 2, "n": 2}]
    assert wh.metastore.show_read_leases() == []
    rows = sql.stream(query)
    # held while the engine may still read the table (it may have read it all already)
    assert len(wh.metastore.show_read_leases()) <= 1
    assert rows.read_all().equals(whole)
    assert wh.metastore.show_read_leases() == []
    with sql.stream(_query("SELECT * FROM t LIMIT 1")) as early:
        assert len(wh.metastore.show_read_leases()) <= 1
        assert next(iter(early)).num_rows == 1
    assert wh.metastore.show_read_leases() == []  # closed before the end: released too


def test_a_streamed_query_of_two_tables_runs_in_its_own_transaction(
    wh: Warehouse, sql: SqlSession
) -> None:
    _setup(sql)
    query = _query("SELECT t.name, u.score FROM t JOIN u ON t.id = u.id ORDER BY u.score")
    rows = sql.stream(query)
    assert wh.in_transaction  # one snapshot for both tables, until the rows are read
    assert rows.read_all().to_pylist() == [
        {"name": "a", "score": 10},
        {"name": "c", "score": 30},
    ]
    assert not wh.in_transaction
    assert wh.metastore.show_read_leases() == []


def test_a_script_streams_its_queries_to_the_caller(wh: Warehouse, sql: SqlSession) -> None:
    _setup(sql)
    seen: list[tuple[bool, list[dict[str, object]]]] = []

    def on_result(result: StatementResult) -> None:
        if result.stream is not None:
            assert result.table.num_rows == 0
            assert result.table.schema.names == result.stream.schema.names
            seen.append((True, result.stream.read_all().to_pylist()))
        elif result.is_query:
            seen.append((False, result.table.to_pylist()))

    sql.execute_script(
        "SELECT id FROM t WHERE p = 1 ORDER BY id; UPDATE t SET name = 'z' WHERE id = 2;"
        "SELECT name FROM t WHERE id = 2; SELECT id FROM t WHERE p = 9",
        on_result,
        stream=True,
    )
    assert seen == [(True, [{"id": 1}, {"id": 2}]), (True, [{"name": "z"}]), (True, [])]
    assert not sql.stream_queries and wh.metastore.show_read_leases() == []
    # without an on_result there is no one to read a stream: results are whole
    results = sql.execute_script("SELECT id FROM t WHERE id = 3", stream=True)
    assert results[0].stream is None and results[0].table.to_pylist() == [{"id": 3}]
