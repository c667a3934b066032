"""The seeds' SQL, run as written on a real warehouse: layouts, ROW__IDs, rows, errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.orc as orc
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    InvalidNameError,
    NoSuchObjectError,
    UnknownColumnError,
)
from acid_platform.sql import SqlSession
from acid_platform_tests.helpers import acid_dirs, data_files

SEED_000_SETUP = """
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');

INSERT INTO employee VALUES
(1, 'Jerry', 5000),
(2, 'Tom',   8000),
(3, 'Kate',  6000);
"""
SEED_000_MERGE = """
CREATE TABLE employee_update (id int, name string, salary int);
INSERT INTO employee_update VALUES
(2, 'Tom',  7000),
(4, 'Mary', 9000);

MERGE INTO employee AS a
USING employee_update AS b ON a.id = b.id
WHEN MATCHED THEN UPDATE SET salary = b.salary
WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary);
"""
SELECT_ROW_ID = "SELECT row__id, id, name, salary FROM employee"


def row_ids(sql: SqlSession, query: str = SELECT_ROW_ID) -> list[tuple[object, ...]]:
    rows = sql.execute(query).to_pylist()
    return sorted((tuple(r["row__id"].values()), r["id"], r["name"], r["salary"]) for r in rows)


def test_seed_000_insert_then_update(wh: Warehouse, sql: SqlSession) -> None:
    table_dir = Path(wh.root) / "employee"
    sql.execute(SEED_000_SETUP)
    assert acid_dirs(table_dir) == ["delta_0000001_0000001_0000"]
    assert sorted((table_dir / "delta_0000001_0000001_0000").iterdir()) == [
        table_dir / "delta_0000001_0000001_0000" / "_orc_acid_version",
        table_dir / "delta_0000001_0000001_0000" / "bucket_00000",
    ]
    # {"writeid":1,"bucketid":536870912,"rowid":0} 1 Jerry 5000 …
    assert row_ids(sql) == [
        ((1, 536870912, 0), 1, "Jerry", 5000),
        ((1, 536870912, 1), 2, "Tom", 8000),
        ((1, 536870912, 2), 3, "Kate", 6000),
    ]

    sql.execute("UPDATE employee SET salary = 7000 WHERE id = 2;")
    assert acid_dirs(table_dir) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    # {"operation":2,"originalTransaction":1,"bucket":536870912,"rowId":1,"currentTransaction":2,"row":null}
    deletes = orc.read_table(
        table_dir / "delete_delta_0000002_0000002_0000" / "bucket_00000"
    ).to_pylist()
    assert deletes == [
        {
            "operation": 2,
            "originalTransaction": 1,
            "bucket": 536870912,
            "rowId": 1,
            "currentTransaction": 2,
            "row": None,
        }
    ]
    inserts = orc.read_table(table_dir / "delta_0000002_0000002_0000" / "bucket_00000").to_pylist()
    assert inserts == [
        {
            "operation": 0,
            "originalTransaction": 2,
            "bucket": 536870912,
            "rowId": 0,
            "currentTransaction": 2,
            "row": {"id": 2, "name": "Tom", "salary": 7000},
        }
    ]
    assert row_ids(sql)[1:] == [
        ((1, 536870912, 2), 3, "Kate", 6000),
        ((2, 536870912, 0), 2, "Tom", 7000),
    ]


def test_seed_000_merge_statement_ids(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(SEED_000_SETUP + SEED_000_MERGE)
    # WHEN NOT MATCHED INSERT -> statement 0; WHEN MATCHED UPDATE -> statement 1
    assert acid_dirs(Path(wh.root) / "employee") == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]
    assert row_ids(sql) == [
        ((1, 536870912, 0), 1, "Jerry", 5000),
        ((1, 536870912, 2), 3, "Kate", 6000),
        ((2, 536870912, 0), 4, "Mary", 9000),
        ((2, 536870913, 0), 2, "Tom", 7000),
    ]


def test_seed_002_stops_at_the_unknown_table(wh: Warehouse, sql: SqlSession) -> None:
    script = """
        CREATE TABLE emp (id int, name string, salary int)
        STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
        INSERT INTO emp VALUES (1, 'xiaoming', 3600), (2, 'zhangsan',   5700), (3, 'lisi',  9200);
        UPDATE people SET salary = 6000 WHERE id = 2;
        UPDATE emp SET salary = 6000 WHERE id = 2;
    """
    with pytest.raises(NoSuchObjectError, match=r"default\.people"):
        sql.execute(script)
    assert acid_dirs(Path(wh.root) / "emp") == ["delta_0000001_0000001_0000"]
    assert sql.execute("SELECT salary FROM emp WHERE id = 2").to_pylist() == [{"salary": 5700}]


def test_seed_003_merge_into_partitioned_bucketed_table(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        """
        create database tmp;
        create table tmp.tstmerge
        (b int, v string)
        partitioned by (id int)
        clustered by (b) into 1 buckets
        stored as orc
        TBLPROPERTIES ("transactional"="true");

        create table tmp.srcmerge
        stored as orc
        as
        select 1 as id, 'foo' as v;
        """
    )
    before = data_files(wh.root)
    as_written = """
        merge into tmp.tstmerge dst
        using tmp.srcmerge src
        on src.id=dst.id
        when matched and src.id = 0 then delete
        when matched then update set
             v=concat(dst.v, src.v)
        when not matched then insert values (
            src.b, src.v, src.id
        );
    """
    # srcmerge has no column b (the blog's typo): a clear error, nothing written
    with pytest.raises(UnknownColumnError, match=r"src.*'b'"):
        sql.execute(as_written)
    assert data_files(wh.root) == before

    fixed = as_written.replace("src.b, src.v", "src.id, src.v")
    sql.execute(fixed)
    assert acid_dirs(Path(wh.root) / "tmp.db" / "tstmerge" / "id=1") == [
        "delta_0000001_0000001_0000"
    ]
    sql.execute(fixed)  # now matched: the UPDATE branch (the DELETE branch's src.id = 0 is false)
    rows = sql.execute("select row__id, b, v, id from tmp.tstmerge").to_pylist()
    # statement ids: INSERT 0, then DELETE 1 and UPDATE 2 in clause order -> bucket property | 2
    assert rows == [
        {
            "row__id": {"writeid": 2, "bucketid": 536870914, "rowid": 0},
            "b": 1,
            "v": "foofoo",
            "id": 1,
        }
    ]


def test_seed_003_self_merge_and_temporary_table(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        """
        create table click (client_name string, contact_id int, ts_utc string, load_ts int);
        insert into click values ('a', 1, 't1', 10), ('a', 1, 't1', 11), ('a', 1, 't1', 12), ('b', 2, 't2', 10);
        """
    )
    # Hive could not run this "self merge"; here the source is read in the MERGE's own snapshot.
    sql.execute(
        """
        merge into click as dst using (
            select client_name, contact_id, ts_utc, count(*) cnt, min(load_ts) as first_load
            from click group by 1, 2, 3 having cnt > 1
        )
        as src
        on dst.client_name=src.client_name and dst.contact_id=src.contact_id and dst.ts_utc=src.ts_utc
        when matched and src.first_load != dst.load_ts
        then delete
        ;
        """
    )
    assert sql.execute("select load_ts from click order by load_ts").to_pylist() == [
        {"load_ts": 10},
        {"load_ts": 10},
    ]

    sql.execute("insert into click values ('b', 2, 't2', 20)")
    sql.execute(
        """
        create temporary table clickdups stored as orc as select
                client_name, contact_id, ts_utc, count(*) cnt, min(load_ts) as first_load
              from click group by 1, 2, 3 having cnt > 1;
        merge into click as dst using clickdups
        as src
        on dst.client_name=src.client_name and dst.contact_id=src.contact_id and dst.ts_utc=src.ts_utc
        when matched and src.first_load != dst.load_ts
        then delete;
        """
    )
    assert sql.execute("select client_name, load_ts from click order by 1").to_pylist() == [
        {"client_name": "a", "load_ts": 10},
        {"client_name": "b", "load_ts": 10},
    ]
    assert "clickdups" not in wh.list_tables("default")  # temporary: session only, no files


def test_seed_003_time_dimension_ctas(wh: Warehouse, sql: SqlSession) -> None:
    sql.execute(
        """
        set hivevar:start_day=2010-01-01;
        set hivevar:end_day=2010-01-10;
        set hivevar:timeDimTable=default.timeDim;

        create table if not exists ${timeDimTable} as
        with dates as (
        select date_add("${start_day}", a.pos) as d
        from (select posexplode(split(repeat("o", datediff("${end_day}", "${start_day}")), "o"))) a
        )
        select
            d as d
          , year(d) as year
          , month(d) as month
          , day(d) as day
          , date_format(d, 'u') as daynumber_of_week
          , date_format(d, 'EEEE') as dayname_of_week
          , date_format(d, 'D') as daynumber_of_year

        from dates
        sort by d
        ;
        """
    )
    spec = wh.table("default.timedim").spec
    assert [c for c, _ in spec.columns] == [
        "d",
        "year",
        "month",
        "day",
        "daynumber_of_week",
        "dayname_of_week",
        "daynumber_of_year",
    ]
    assert dict(spec.columns)["d"] == "date"
    rows = sql.execute("select d, dayname_of_week from timedim order by d").to_pylist()
    assert len(rows) == 10
    assert rows[0] == {"d": dt.date(2010, 1, 1), "dayname_of_week": "Friday"}


def test_seed_003_location_is_ignored_and_alter_location_refused(
    wh: Warehouse, sql: SqlSession
) -> None:
    results = sql.execute_script(
        """
        create table if not exists tstloc (id bigint)
        clustered by (id) into 4 buckets
        stored as orc
        location 'hdfs:///tmp/ttslocorig'
        tblproperties ("transactional"="true");
        insert into tstloc values(1);
        select * from tstloc;
        """
    )
    assert any("LOCATION" in note for note in results[0].notes)
    assert results[-1].table.to_pylist() == [{"id": 1}]
    spec = wh.table("tstloc").spec
    assert (spec.bucket_columns, spec.num_buckets) == (("id",), 4)
    # Hive moves only the metadata (and then reads nothing there); here a location outside
    # the warehouse is refused, and the committed row stays readable (test_set_location)
    with pytest.raises(InvalidNameError, match="SET LOCATION: hdfs:///tmp/ttslocnew is outside"):
        sql.execute("alter table tstloc set location 'hdfs:///tmp/ttslocnew'")
    assert sql.execute("select * from tstloc").to_pylist() == [{"id": 1}]


def test_seed_000_compaction_runs_as_written(wh: Warehouse, sql: SqlSession) -> None:
    """Seed 000: after the MERGE, `ALTER TABLE employee COMPACT 'minor'` then 'major' keep
    the rows and ROW__IDs; the layout gains Hive 4's `_v` directories."""
    table_dir = Path(wh.root) / "employee"
    sql.execute(SEED_000_SETUP)
    sql.execute(SEED_000_MERGE)
    before = row_ids(sql)
    sql.execute("ALTER TABLE employee COMPACT 'minor' AND WAIT;")
    minor = [d for d in acid_dirs(table_dir) if "_v" in d]
    assert [d.rsplit("_v", 1)[0] for d in minor] == [
        "delete_delta_0000001_0000002",
        "delta_0000001_0000002",
    ]
    assert row_ids(sql) == before
    sql.execute("ALTER TABLE employee COMPACT 'major' AND WAIT;")
    assert any(d.startswith("base_0000002_v") for d in acid_dirs(table_dir))
    assert row_ids(sql) == before
    queued = sql.execute("ALTER TABLE employee COMPACT 'major';")
    assert queued.num_rows == 0
    states = [r["State"] for r in sql.execute("SHOW COMPACTIONS").to_pylist()]
    assert "initiated" in states and "ready for cleaning" in states
