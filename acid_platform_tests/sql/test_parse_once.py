"""Each statement is parsed once: the SQL layer hands its syntax trees (WHERE, SET values, ON,
WHEN conditions, a MERGE's source query, a SELECT's pushed-down filter) to the table API, which
plans and reads with them and never turns them into text to parse again."""

from __future__ import annotations

import pytest

from acid_platform.sql import SqlSession
from acid_platform_tests.helpers import count_parses

SETUP = """
CREATE TABLE t (id int, v int) PARTITIONED BY (ds string);
INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'a'), (3, 30, 'b');
CREATE TABLE src (id int, v int, ds string);
INSERT INTO src VALUES (2, 200, 'a'), (4, 400, 'b');
"""


@pytest.mark.parametrize(
    ("statement", "rows"),
    [
        ("DELETE FROM t WHERE id = 2", [(1, 10), (3, 30)]),
        ("UPDATE t SET v = v + 1 WHERE ds = 'a' AND id > 1", [(1, 10), (2, 21), (3, 30)]),
        ("DELETE FROM t WHERE id IN (SELECT id FROM src)", [(1, 10), (3, 30)]),
        ("TRUNCATE TABLE t PARTITION (ds = 'b')", [(1, 10), (2, 20)]),
        (
            "MERGE INTO t USING (SELECT id, v, ds FROM src WHERE v > 0) s ON t.id = s.id "
            "WHEN MATCHED AND s.v > 100 THEN UPDATE SET v = s.v + 1 "
            "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.ds)",
            [(1, 10), (2, 201), (3, 30), (4, 400)],
        ),
    ],
)
def test_a_dml_statement_is_parsed_once(
    sql: SqlSession, monkeypatch: pytest.MonkeyPatch, statement: str, rows: list[tuple[int, int]]
) -> None:
    sql.execute(SETUP)
    parses = count_parses(monkeypatch)
    sql.execute(statement)
    assert list(parses.values()) == [1], parses  # the statement, and nothing else
    parses.clear()
    result = sql.execute("SELECT id, v FROM t WHERE id > 0 ORDER BY id")
    assert [(r["id"], r["v"]) for r in result.to_pylist()] == rows
    assert list(parses.values()) == [1], parses  # the pushed-down filter is not parsed again
