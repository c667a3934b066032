"""Seed 000's INSERT, UPDATE and MERGE through the Python API give the seed's exact layout."""

from __future__ import annotations

from acid_platform import Warehouse
from acid_platform.table import lit
from acid_platform_tests.helpers import acid_dirs, events, warehouse_fixture
from acid_platform_tests.store_path import StorePath

EMPLOYEE = [("id", "int"), ("name", "string"), ("salary", "int")]
ROWS = [
    {"id": 1, "name": "Jerry", "salary": 5000},
    {"id": 2, "name": "Tom", "salary": 6000},
    {"id": 3, "name": "Kate", "salary": 7000},
]


#: The seed's layouts on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


def _table_dir(wh: Warehouse, name: str) -> StorePath:
    return StorePath(wh.table(name).spec.location)


def test_insert_writes_delta_1_1_0_with_rowids_from_zero(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    out = t.insert(ROWS)
    d = _table_dir(wh, "employee")
    assert d == StorePath(wh.root) / "employee"  # default database tables live in the root, as Hive
    assert acid_dirs(d) == ["delta_0000001_0000001_0000"]
    assert sorted(p.name for p in (d / "delta_0000001_0000001_0000").iterdir()) == [
        "_orc_acid_version",
        "bucket_00000",
    ]
    assert (d / "delta_0000001_0000001_0000" / "_orc_acid_version").read_bytes() == b"2"
    evs = events(d / "delta_0000001_0000001_0000" / "bucket_00000")
    assert [
        (e["operation"], e["originalTransaction"], e["bucket"], e["rowId"], e["currentTransaction"])
        for e in evs
    ] == [
        (0, 1, 536870912, 0, 1),
        (0, 1, 536870912, 1, 1),
        (0, 1, 536870912, 2, 1),
    ]
    assert out.rows_inserted == 3 and out.write_id == 1 and out.statement_ids == (0,)
    got = t.scan(with_row_id=True).to_arrow().to_pylist()
    assert got[0] == {
        "row__id": {"writeid": 1, "bucketid": 536870912, "rowid": 0},
        "id": 1,
        "name": "Jerry",
        "salary": 5000,
    }


def test_update_is_a_split_update_in_statement_0(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    out = t.update({"salary": 7000}, where="id = 2")
    assert out.rows_updated == 1
    d = _table_dir(wh, "employee")
    assert acid_dirs(d) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert events(d / "delete_delta_0000002_0000002_0000" / "bucket_00000") == [
        {
            "operation": 2,
            "originalTransaction": 1,
            "bucket": 536870912,
            "rowId": 1,
            "currentTransaction": 2,
            "row": None,
        }
    ]
    assert events(d / "delta_0000002_0000002_0000" / "bucket_00000") == [
        {
            "operation": 0,
            "originalTransaction": 2,
            "bucket": 536870912,
            "rowId": 0,
            "currentTransaction": 2,
            "row": {"id": 2, "name": "Tom", "salary": 7000},
        }
    ]
    by_id = {r["id"]: r for r in t.scan(with_row_id=True).to_arrow().to_pylist()}
    assert by_id[2]["row__id"] == {"writeid": 2, "bucketid": 536870912, "rowid": 0}
    assert (
        by_id[2]["salary"] == 7000
        and by_id[1]["row__id"]["rowid"] == 0
        and by_id[3]["row__id"]["rowid"] == 2
    )


def test_delete_writes_only_a_delete_delta(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    assert t.delete("name = 'Kate'").rows_deleted == 1
    d = _table_dir(wh, "employee")
    assert acid_dirs(d) == ["delete_delta_0000002_0000002_0000", "delta_0000001_0000001_0000"]
    assert [
        e["rowId"] for e in events(d / "delete_delta_0000002_0000002_0000" / "bucket_00000")
    ] == [2]
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2]


def test_merge_insert_clause_is_statement_0_and_update_statement_1(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    wh.create_table("employee_update", EMPLOYEE).insert(
        [{"id": 2, "name": "Tom", "salary": 7000}, {"id": 4, "name": "Mary", "salary": 9000}]
    )
    out = (
        t.merge("SELECT * FROM employee_update", "a.id = b.id", target_alias="a", source_alias="b")
        .when_matched_update({"salary": "b.salary"})
        .when_not_matched_insert({"id": "b.id", "name": "b.name", "salary": "b.salary"})
        .execute()
    )
    assert (out.rows_inserted, out.rows_updated) == (1, 1)
    d = _table_dir(wh, "employee")
    assert acid_dirs(d) == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]
    assert [e["row"] for e in events(d / "delta_0000002_0000002_0000" / "bucket_00000")] == [
        {"id": 4, "name": "Mary", "salary": 9000}
    ]
    assert [
        (e["originalTransaction"], e["bucket"], e["rowId"])
        for e in events(d / "delete_delta_0000002_0000002_0001" / "bucket_00000")
    ] == [(1, 536870912, 1)]
    tom = events(d / "delta_0000002_0000002_0001" / "bucket_00000")
    assert [(e["bucket"], e["rowId"], e["row"]) for e in tom] == [
        (536870913, 0, {"id": 2, "name": "Tom", "salary": 7000})
    ]
    scanned = {
        r["id"]: (r["row__id"], r["salary"])
        for r in t.scan(with_row_id=True).to_arrow().to_pylist()
    }
    assert scanned == {
        1: ({"writeid": 1, "bucketid": 536870912, "rowid": 0}, 5000),
        2: ({"writeid": 2, "bucketid": 536870913, "rowid": 0}, 7000),
        3: ({"writeid": 1, "bucketid": 536870912, "rowid": 2}, 7000),
        4: ({"writeid": 2, "bucketid": 536870912, "rowid": 0}, 9000),
    }


def test_string_literals_need_lit(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    t.update({"name": lit("Thomas"), "salary": "salary + 1"}, "id = 2")
    assert {r["id"]: (r["name"], r["salary"]) for r in t.scan().to_arrow().to_pylist()}[2] == (
        "Thomas",
        6001,
    )
