"""SHOW COMPACTIONS as Hive 4 prints it: the header, ``---``, timestamps, and each filter."""

from __future__ import annotations

import re

import pytest

from acid_platform import Warehouse
from acid_platform.errors import SemanticError, SqlSyntaxError
from acid_platform.sql import SqlSession
from acid_platform.sql import statements as st
from acid_platform.sql.parser import parse_statement

# Hive 4.0's ShowCompactionsOperation.writeHeader, in its order.
HIVE4_HEADER = [
    "CompactionId",
    "Database",
    "Table",
    "Partition",
    "Type",
    "State",
    "Worker host",
    "Worker",
    "Enqueue Time",
    "Start Time",
    "Duration(ms)",
    "HadoopJobId",
    "Error message",
    "Initiator host",
    "Initiator",
    "Pool name",
    "TxnId",
    "Next TxnId",
    "Commit Time",
    "Highest WriteId",
]
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


@pytest.fixture
def queued(wh: Warehouse, sql: SqlSession) -> dict[str, int]:
    """Four compactions: t ds=a major (ready for cleaning, by host1-worker7), t ds=b minor in
    pool 'etl', u major in pool 'etl' (database other), t ds=c minor."""
    sql.execute_script(
        "CREATE TABLE t (a int) PARTITIONED BY (ds string);"
        "INSERT INTO t PARTITION (ds='a') VALUES (1);"
        "CREATE DATABASE other; CREATE TABLE other.u (a int);"
    )
    ms = wh.metastore
    ids = {
        "a": ms.enqueue_compaction("default", "t", "ds=a", "major", initiator_id="ihost-3"),
        "b": ms.enqueue_compaction("default", "t", "ds=b", "minor", pool_name="etl"),
        "u": ms.enqueue_compaction("other", "u", None, "major", pool_name="etl"),
        "c": ms.enqueue_compaction("default", "t", "ds=c", "minor"),
    }
    claimed = ms.claim_compaction("host1-worker7")
    assert claimed is not None and claimed.id == ids["a"]
    ms.mark_compacted(ids["a"], 1)
    return {k: v for k, v in ids.items() if v is not None}


def ids_of(sql: SqlSession, text: str) -> list[int]:
    return [int(r["CompactionId"]) for r in sql.execute(text).to_pylist()]


def test_header_is_hive4s_column_by_column(sql: SqlSession) -> None:
    header = sql.execute("SHOW COMPACTIONS").column_names
    assert len(header) == len(HIVE4_HEADER)
    for position, (ours, hive) in enumerate(zip(header, HIVE4_HEADER, strict=True), start=1):
        assert (position, ours) == (position, hive)
    assert header[8] == "Enqueue Time" and "Hostname" not in header


def test_values_absent_shown_as_dashes_and_times_as_timestamps(
    sql: SqlSession, queued: dict[str, int]
) -> None:
    rows = {int(r["CompactionId"]): r for r in sql.execute("SHOW COMPACTIONS").to_pylist()}
    done, waiting = rows[queued["a"]], rows[queued["c"]]
    assert (done["Worker host"], done["Worker"]) == ("host1", "worker7")
    assert (done["Initiator host"], done["Initiator"]) == ("ihost", "3")
    assert (done["State"], done["Type"], done["Highest WriteId"]) == (
        "ready for cleaning",
        "MAJOR",
        "1",
    )
    assert STAMP.fullmatch(done["Enqueue Time"]) and STAMP.fullmatch(done["Start Time"])
    assert STAMP.fullmatch(waiting["Enqueue Time"])
    for column in ("Worker host", "Worker", "Start Time", "Duration(ms)", "HadoopJobId"):
        assert waiting[column] == "---"
    assert (waiting["Pool name"], rows[queued["b"]]["Pool name"]) == ("---", "etl")


def test_filters(sql: SqlSession, queued: dict[str, int]) -> None:
    a, b, u, c = queued["a"], queued["b"], queued["u"], queued["c"]
    assert ids_of(sql, "SHOW COMPACTIONS") == [a, b, u, c]
    assert ids_of(sql, f"SHOW COMPACTIONS {b}") == [b]
    assert ids_of(sql, "SHOW COMPACTIONS DATABASE other") == [u]
    assert ids_of(sql, "SHOW COMPACTIONS SCHEMA default") == [a, b, c]
    assert ids_of(sql, "SHOW COMPACTIONS t") == [a, b, c]
    assert ids_of(sql, "SHOW COMPACTIONS other.u") == [u]
    assert ids_of(sql, "SHOW COMPACTIONS t PARTITION (ds='b')") == [b]
    assert ids_of(sql, "SHOW COMPACTIONS POOL 'etl'") == [b, u]
    assert ids_of(sql, "SHOW COMPACTIONS TYPE 'MINOR'") == [b, c]
    assert ids_of(sql, "SHOW COMPACTIONS STATUS 'ready for cleaning'") == [a]
    assert ids_of(sql, "SHOW COMPACTIONS STATE 'initiated'") == [b, u, c]
    assert ids_of(sql, "SHOW COMPACTIONS t POOL 'etl' TYPE 'minor' STATUS 'initiated'") == [b]
    assert ids_of(sql, "SHOW COMPACTIONS ORDER BY compactionid DESC") == [c, u, b, a]
    assert ids_of(sql, "SHOW COMPACTIONS ORDER BY poolname, compactionid DESC") == [u, b, c, a]
    assert ids_of(sql, "SHOW COMPACTIONS ORDER BY compactionid DESC LIMIT 2") == [c, u]
    assert ids_of(sql, "SHOW COMPACTIONS DATABASE default LIMIT 1") == [a]


def test_bad_filters_are_refused(sql: SqlSession, queued: dict[str, int]) -> None:
    with pytest.raises(SemanticError, match="expected 'minor', 'major' or 'rebalance'"):
        sql.execute("SHOW COMPACTIONS TYPE 'medium'")
    with pytest.raises(SemanticError, match="STATUS 'done'"):
        sql.execute("SHOW COMPACTIONS STATUS 'done'")
    with pytest.raises(SemanticError, match="not a column"):
        sql.execute("SHOW COMPACTIONS ORDER BY nosuch")
    with pytest.raises(SemanticError, match="every partition column"):
        sql.execute("SHOW COMPACTIONS t PARTITION (x='1')")
    with pytest.raises(SqlSyntaxError):
        sql.execute("SHOW COMPACTIONS LIMIT 'x'")


def test_parse() -> None:
    stmt = parse_statement(
        "SHOW COMPACTIONS db.t PARTITION (ds='x') POOL 'p' TYPE 'Minor' STATUS 'Working' "
        "ORDER BY enqueuetime ASC, compactionid DESC LIMIT 5"
    )
    assert stmt == st.ShowCompactions(
        table=st.TableName("t", "db"),
        partition=(("ds", "x"),),
        pool="p",
        type="minor",
        status="working",
        order_by=(("enqueuetime", False), ("compactionid", True)),
        limit=5,
    )


def test_compact_pool_shows_in_show_compactions(sql: SqlSession) -> None:
    sql.execute_script(
        "CREATE TABLE p (a int) PARTITIONED BY (ds string);"
        "INSERT INTO p PARTITION (ds='a') VALUES (1);"
        "INSERT INTO p PARTITION (ds='b') VALUES (2);"
        "ALTER TABLE p PARTITION (ds='a') COMPACT 'minor' POOL 'nightly';"
        "ALTER TABLE p PARTITION (ds='b') COMPACT 'major';"
    )
    rows = sql.execute("SHOW COMPACTIONS POOL 'nightly'").to_pylist()
    assert [(r["Partition"], r["Type"], r["Pool name"]) for r in rows] == [
        ("ds=a", "MINOR", "nightly")
    ]
    assert parse_statement("ALTER TABLE p COMPACT 'major' AND WAIT POOL 'q'") == st.Compact(
        st.TableName("p"), "major", (), True, "q"
    )
