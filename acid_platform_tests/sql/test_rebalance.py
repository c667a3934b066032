"""Hive 4's ``ALTER TABLE t COMPACT 'rebalance' [CLUSTERED INTO n BUCKETS] … [ORDER BY …]``:
rows spread evenly over the implicit bucket files, renumbered as Hive's
``CompactionQueryBuilderForRebalance`` numbers them; refused as Hive refuses it (issue 14
item 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.orc as po
import pytest

from acid_platform import Warehouse
from acid_platform.compaction import run_cleaner, run_worker
from acid_platform.errors import SemanticError, UnsupportedOperationError
from acid_platform.format import encode_bucket
from acid_platform.sql import SqlSession
from acid_platform.sql import statements as st
from acid_platform.sql.parser import parse_statement


def _table(sql: SqlSession, extra: str = "") -> None:
    sql.execute(
        "CREATE TABLE t (k int, v string) STORED AS ORC "
        f"TBLPROPERTIES ('transactional'='true'{extra})"
    )
    for i in range(3):  # three inserts: every row in bucket 0 (an unbucketed table)
        values = ", ".join(f"({k}, 'v{k}')" for k in range(i * 10, i * 10 + 10))
        sql.execute(f"INSERT INTO t VALUES {values}")
    sql.execute("DELETE FROM t WHERE k = 5")


def _base(wh: Warehouse) -> Path:
    location = Path(wh.table("t").spec.location)
    (base,) = [p for p in location.iterdir() if p.name.startswith("base_")]
    return base


def _rows(sql: SqlSession) -> list[dict[str, Any]]:
    return sql.execute(
        "SELECT ROW__ID, k FROM t ORDER BY ROW__ID.bucketid, ROW__ID.rowid"
    ).to_pylist()


def test_rebalance_into_n_buckets_in_order(wh: Warehouse, sql: SqlSession) -> None:
    _table(sql)
    before = sorted(r["k"] for r in _rows(sql))
    sql.execute(
        "ALTER TABLE t COMPACT 'rebalance' CLUSTERED INTO 4 BUCKETS AND WAIT ORDER BY k DESC"
    )
    run_cleaner(wh)
    base = _base(wh)
    files = sorted(base.glob("bucket_*"))
    assert [f.name for f in files] == [f"bucket_0000{b}" for b in range(4)]
    assert [po.ORCFile(str(f)).nrows for f in files] == [8, 8, 8, 5]  # 29 rows, ceil(29/4)
    rows = _rows(sql)
    assert sorted(r["k"] for r in rows) == before
    assert [r["k"] for r in rows] == sorted(before, reverse=True)  # ORDER BY k DESC
    assert [r["row__id"]["rowid"] for r in rows] == list(range(29))  # Hive: one numbering
    assert {r["row__id"]["writeid"] for r in rows} == {3}  # reordered: the highest write id
    assert [r["row__id"]["bucketid"] for r in rows] == [encode_bucket(i // 8) for i in range(29)]
    (entry,) = sql.execute("SHOW COMPACTIONS TYPE 'rebalance'").to_pylist()
    assert entry["Type"] == "REBALANCE" and entry["State"] == "succeeded"


def test_rebalance_without_order_keeps_write_ids_and_the_bucket_count(
    wh: Warehouse, sql: SqlSession
) -> None:
    _table(sql)
    before = sorted(_rows(sql), key=lambda r: tuple(r["row__id"].values()))  # ROW__ID order
    sql.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT")
    run_cleaner(wh)
    assert [f.name for f in sorted(_base(wh).glob("bucket_*"))] == ["bucket_00000"]
    rows = _rows(sql)
    assert [r["k"] for r in rows] == [r["k"] for r in before]  # ROW__ID order kept
    assert [r["row__id"]["writeid"] for r in rows] == [r["row__id"]["writeid"] for r in before]
    assert [r["row__id"]["rowid"] for r in rows] == list(range(29))


def test_order_by_puts_nulls_first_ascending_and_last_descending(
    wh: Warehouse, sql: SqlSession
) -> None:
    sql.execute(
        "CREATE TABLE t (k int, v string) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
    )
    sql.execute("INSERT INTO t VALUES (2, 'b'), (NULL, 'n'), (1, 'a'), (3, NULL)")
    sql.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT ORDER BY k ASC")
    assert [r["k"] for r in _rows(sql)] == [None, 1, 2, 3]
    sql.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT ORDER BY v DESC, k")
    assert [r["k"] for r in _rows(sql)] == [None, 2, 1, 3]  # 'n', 'b', 'a', NULL last


def test_rebalance_waits_for_the_exclusive_write_lock(wh: Warehouse, sql: SqlSession) -> None:
    """It renumbers ROW__IDs: an UPDATE holding the table keeps it from starting."""
    _table(sql)
    other = Warehouse.open(wh.root)
    try:
        other.sql("BEGIN; UPDATE t SET v = 'open' WHERE k = 1")
        wh.set_conf("hive.compactor.wait.timeout", "200ms")
        sql.execute("ALTER TABLE t COMPACT 'rebalance'")
        (outcome,) = run_worker(wh)
        assert outcome.state.value == "failed"
        assert "LockTimeoutError" in outcome.message
        other.sql("COMMIT")
    finally:
        other.close()
    sql.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT")
    assert "open" in [r["v"] for r in sql.execute("SELECT v FROM t WHERE k = 1").to_pylist()]


def test_an_open_insert_below_a_committed_delete_stops_the_rebalance(
    wh: Warehouse, sql: SqlSession
) -> None:
    """An INSERT does not conflict with the lock, but its open write id would cut the base
    below a later committed DELETE, whose events name the old ROW__IDs."""
    _table(sql)
    other = Warehouse.open(wh.root)
    try:
        other.sql("BEGIN; INSERT INTO t VALUES (100, 'open')")  # write id 5, open
        sql.execute("DELETE FROM t WHERE k = 7")  # write id 6, committed
        sql.execute("ALTER TABLE t COMPACT 'rebalance'")
        (outcome,) = run_worker(wh)
        assert outcome.state.value == "failed"
        assert "write id 5 is still open" in outcome.message
        other.sql("COMMIT")
    finally:
        other.close()
    sql.execute("ALTER TABLE t COMPACT 'rebalance' AND WAIT")
    ks = [r["k"] for r in _rows(sql)]
    assert 7 not in ks and 100 in ks and len(ks) == 29


def test_hive_refuses_rebalance_of_bucketed_and_insert_only_tables(sql: SqlSession) -> None:
    sql.execute(
        "CREATE TABLE b (k int) CLUSTERED BY (k) INTO 2 BUCKETS STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    with pytest.raises(UnsupportedOperationError, match="only on implicitly-bucketed tables!"):
        sql.execute("ALTER TABLE b COMPACT 'rebalance'")
    sql.execute(
        "CREATE TABLE m (k int) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    with pytest.raises(UnsupportedOperationError, match="only be supported on full ACID tables"):
        sql.execute("ALTER TABLE m COMPACT 'rebalance'")
    with pytest.raises(SemanticError, match="only be used with 'rebalance'"):
        sql.execute("ALTER TABLE b COMPACT 'major' ORDER BY k")
    with pytest.raises(SemanticError, match="ORDER BY nope"):
        sql.execute(
            "CREATE TABLE u (k int) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
            "; ALTER TABLE u COMPACT 'rebalance' ORDER BY nope"
        )


def test_the_grammar_follows_hive_4() -> None:
    stmt = parse_statement(
        "ALTER TABLE db.t PARTITION (ds='x') COMPACT 'REBALANCE' CLUSTERED INTO 8 BUCKETS "
        "AND WAIT POOL 'p' WITH OVERWRITE TBLPROPERTIES ('a'='1') ORDER BY k DESC, v ASC, w"
    )
    assert isinstance(stmt, st.Compact)
    assert (stmt.kind, stmt.number_of_buckets, stmt.wait, stmt.pool) == ("rebalance", 8, True, "p")
    assert stmt.order_by == (("k", True), ("v", False), ("w", False))
    assert stmt.properties == (("a", "1"),)


def test_rebalance_of_one_partition_leaves_the_others(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        "CREATE TABLE p (k int) PARTITIONED BY (ds string) STORED AS ORC "
        "TBLPROPERTIES ('transactional'='true')"
    )
    for ds in ("a", "b"):
        for i in range(2):
            values = ", ".join(f"({k})" for k in range(i * 5, i * 5 + 5))
            sql.execute(f"INSERT INTO p PARTITION (ds='{ds}') VALUES {values}")
    sql.execute(
        "ALTER TABLE p PARTITION (ds='a') COMPACT 'rebalance' CLUSTERED INTO 2 BUCKETS AND WAIT"
    )
    run_cleaner(wh)
    location = Path(wh.table("p").spec.location)
    (base,) = [d for d in (location / "ds=a").iterdir() if d.name.startswith("base_")]
    assert [po.ORCFile(str(f)).nrows for f in sorted(base.glob("bucket_*"))] == [5, 5]
    assert not [d for d in (location / "ds=b").iterdir() if d.name.startswith("base_")]
    rows = sql.execute("SELECT ds, k FROM p").to_pylist()
    assert sorted((r["ds"], r["k"]) for r in rows) == [(ds, k) for ds in "ab" for k in range(10)]
