"""``ALTER TABLE … SET LOCATION`` (issue 14 item 9): Hive 4 changes only the metastore, for
transactional tables too; here an empty table's directory moves inside the warehouse, and every
location that would leave the warehouse, share another's files or strand committed rows is
refused with a typed error."""

from __future__ import annotations

from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import InvalidNameError, UnsupportedOperationError
from acid_platform.sql import SqlSession
from acid_platform_tests.helpers import data_files


def _ids(sql: SqlSession, table: str = "t") -> list[int]:
    return sorted(r["id"] for r in sql.execute(f"select id from {table}").to_pylist())


def test_an_empty_transactional_table_moves_and_writes_there(
    wh: Warehouse, sql: SqlSession
) -> None:
    sql.execute(
        "create table t (id bigint) clustered by (id) into 4 buckets stored as orc "
        "tblproperties ('transactional'='true')"
    )
    old = Path(wh.table("t").spec.location)
    target = Path(wh.root) / "moved" / "t_new"
    (result,) = sql.execute_script(f"alter table t set location '{target}'")
    assert result.message is not None and str(target) in result.message
    assert wh.table("t").spec.location == str(target)
    assert target.is_dir() and not old.exists()  # the empty old directory is gone
    sql.execute("insert into t values (1), (2)")
    assert _ids(sql) == [1, 2]
    assert any(f.endswith("/bucket_00000") for f in data_files(target))  # written there
    assert not old.exists()
    with Warehouse.open(wh.root) as again:  # another process sees the new location
        assert again.table("t").spec.location == str(target)
        assert sorted(r["id"] for r in again.table("t").scan().to_arrow().to_pylist()) == [1, 2]
    described = sql.execute("describe formatted t").to_pylist()
    assert any(str(target) in str(row.values()) for row in described)


def test_a_partitioned_empty_table_moves(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        "create table p (id int) partitioned by (d string) stored as orc "
        "tblproperties ('transactional'='true')"
    )
    target = Path(wh.root) / "p_elsewhere"
    sql.execute(f"alter table p set location '{target}/'")  # a trailing slash is normalised
    sql.execute("insert into p partition (d='x') values (1)")
    assert (target / "d=x").is_dir()
    assert _ids(sql, "p") == [1]


def test_a_table_holding_data_is_refused_and_keeps_its_rows(wh: Warehouse, sql: SqlSession) -> None:
    """The seed's order (INSERT, then SET LOCATION): Hive would leave the files behind and read
    nothing; here the committed rows stay where they are, readable."""
    sql.execute("create table t (id bigint) stored as orc tblproperties ('transactional'='true')")
    sql.execute("insert into t values (1)")
    before = wh.table("t").spec.location
    target = Path(wh.root) / "t2"
    with pytest.raises(UnsupportedOperationError, match="holds data .*CREATE TABLE … AS SELECT"):
        sql.execute(f"alter table t set location '{target}'")
    assert wh.table("t").spec.location == before and not target.exists()
    assert _ids(sql) == [1]
    sql.execute("delete from t where id = 1")  # deltas remain: still data
    with pytest.raises(UnsupportedOperationError, match="holds data"):
        sql.execute(f"alter table t set location '{target}'")


def test_locations_outside_or_shared_are_refused(
    wh: Warehouse, sql: SqlSession, tmp_path: Path
) -> None:
    sql.execute("create table t (id int) stored as orc tblproperties ('transactional'='true')")
    sql.execute("create table other (id int) stored as orc tblproperties ('transactional'='true')")
    sql.execute("create database hr")
    root = Path(wh.root)
    other = wh.table("other").spec.location
    (root / "full").mkdir()
    (root / "full" / "000000_0").write_bytes(b"someone's file")
    refused: list[tuple[str, type[Exception], str]] = [
        ("rel/dir", InvalidNameError, "rel/dir  is not absolute.  Please specify a complete"),
        ("hdfs:///tmp/ttslocnew", InvalidNameError, "outside the warehouse"),
        (str(tmp_path / "elsewhere"), InvalidNameError, "outside the warehouse"),
        (f"{root}/../escaped", InvalidNameError, "outside the warehouse"),
        (f"{root}/x/../../escaped", InvalidNameError, "outside the warehouse"),
        (str(root), InvalidNameError, "database default"),
        (f"{root}/hr.db", InvalidNameError, "database hr"),
        (other, InvalidNameError, "table default.other"),
        (f"{other}/inside", InvalidNameError, "inside the directory of table default.other"),
        (f"{root}/_metastore_dir", InvalidNameError, "hidden"),
        (f"{root}/.hidden/t", InvalidNameError, "hidden"),
        (f"{root}/full", UnsupportedOperationError, "already holds files"),
    ]
    before = wh.table("t").spec.location
    for location, error, message in refused:
        with pytest.raises(error, match=message.replace(".", r"\.").replace("(", r"\(")):
            sql.execute(f"alter table t set location '{location}'")
        assert wh.table("t").spec.location == before, location
    assert not (root.parent / "escaped").exists()
    with pytest.raises(UnsupportedOperationError, match="partition has no location"):
        sql.execute(f"alter table t partition (id=1) set location '{root}/q'")
    with pytest.raises(UnsupportedOperationError, match="only ALTER TABLE … COMPACT and SET"):
        sql.execute("alter table t set fileformat parquet")
    sql.execute("start transaction")
    with pytest.raises(UnsupportedOperationError, match="multi-statement transaction"):
        sql.execute(f"alter table t set location '{root}/in_txn'")
    sql.execute("rollback")
    # a table inside a database directory is fine: that is where tables live
    sql.execute(f"alter table t set location '{root}/hr.db/t_moved'")
    assert wh.table("t").spec.location == f"{root}/hr.db/t_moved"
