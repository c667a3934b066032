"""The change feed (``Table.changes``): change types and write ids of each kind of statement,
update pairing on a key, what is final, minor and major compaction, INSERT OVERWRITE, filters,
streaming and the reader lease. The model-based property test is in ``test_changes_model``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    ChangeHistoryUnavailableError,
    InvalidChangeRangeError,
    NotEnoughHistoryError,
    ScanClosedError,
    UnknownColumnError,
)
from acid_platform.table import Table, lit
from acid_platform.table.changes import change_feed_schema
from acid_platform_tests.helpers import acid_dirs_of, warehouse_fixture

#: Each test on a SQLite and on a PostgreSQL metastore (write id lists come from it).
wh = warehouse_fixture(
    conf={"acid.lock.wait.timeout.s": "0"}, backends=("sqlite", "postgresql", "s3")
)

EMP = (
    "CREATE TABLE emp (id int, name string, salary int) PARTITIONED BY (dept string) "
    "CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC TBLPROPERTIES ('transactional'='true')"
)


def _changes(table: pa.Table, *cols: str) -> list[tuple[Any, ...]]:
    """(``_write_id``, ``_change_type``, cols…) of each change, in the feed's order."""
    names = ["_write_id", "_change_type", *cols]
    return [tuple(r[c] for c in names) for r in table.select(names).to_pylist()]


def _emp_with_one_row(wh: Warehouse) -> Table:
    """``emp`` with the row (1, 'a', 1, 'a') of write id 1."""
    wh.sql(EMP)
    t = wh.table("emp")
    t.insert([{"id": 1, "name": "a", "salary": 1, "dept": "a"}])
    return t


@pytest.fixture()
def emp(wh: Warehouse) -> Warehouse:
    """``emp`` after write ids 1 (insert of 3 rows), 2 (UPDATE of Tom), 3 (DELETE of Ann)."""
    wh.sql(EMP)
    wh.sql(
        "INSERT INTO emp VALUES (1, 'Jerry', 5000, 'a'), (2, 'Tom', 8000, 'a'), (3, 'Ann', 100, 'b')"
    )
    wh.sql("UPDATE emp SET salary = 7000 WHERE id = 2")
    wh.sql("DELETE FROM emp WHERE id = 3")
    return wh


def test_each_write_id_with_its_inserts_and_deletes_and_the_deleted_rows_values(
    emp: Warehouse,
) -> None:
    feed = emp.table("emp").changes(0).to_arrow()
    assert feed.schema == change_feed_schema(emp.table("emp").spec)
    assert feed.schema.names == [
        "id", "name", "salary", "dept", "_change_type", "_write_id", "row__id"
    ]  # fmt: skip
    assert sorted(_changes(feed, "id", "salary", "dept")) == [
        (1, "insert", 1, 5000, "a"),
        (1, "insert", 2, 8000, "a"),
        (1, "insert", 3, 100, "b"),
        (2, "delete", 2, 8000, "a"),
        (2, "insert", 2, 7000, "a"),
        (3, "delete", 3, 100, "b"),
    ]
    rows = feed.to_pylist()
    inserted = {
        (r["dept"], *r["row__id"].values()): r for r in rows if r["_change_type"] == "insert"
    }
    for r in rows:
        rid = r["row__id"]
        if r["_change_type"] == "insert":
            assert rid["writeid"] == r["_write_id"]
        else:  # a delete names the row it deletes (in its partition), with that row's values
            before = inserted[(r["dept"], *rid.values())]
            assert before["_write_id"] < r["_write_id"]
            assert (before["id"], before["salary"]) == (r["id"], r["salary"])
    assert [r["_write_id"] for r in rows] == sorted(r["_write_id"] for r in rows)


def test_a_key_pairs_the_delete_and_insert_of_an_update(emp: Warehouse) -> None:
    t = emp.table("emp")
    assert _changes(t.changes(1, key="id").to_arrow(), "id", "salary") == [
        (2, "update_preimage", 2, 8000),
        (2, "update_postimage", 2, 7000),
        (3, "delete", 3, 100),
    ]
    assert _changes(t.changes(1, 2, key=["id", "dept"]).to_arrow(), "id") == [
        (2, "update_preimage", 2),
        (2, "update_postimage", 2),
    ]
    # no key: Hive's files hold no link from the new row to the old one
    assert _changes(t.changes(1, 2).to_arrow(), "id") == [(2, "delete", 2), (2, "insert", 2)]
    with pytest.raises(UnknownColumnError):
        t.changes(0, key="nope").to_arrow()


def test_pairs_need_exactly_one_delete_and_one_insert_per_key(wh: Warehouse) -> None:
    wh.sql(EMP)
    t = wh.table("emp")
    t.insert([{"id": 1, "name": "x", "salary": 1, "dept": "a"}] * 2)  # write id 1: two id 1
    t.update({"salary": "salary + 1"}, "id = 1")  # write id 2: two deletes, two inserts of id 1
    t.insert([{"id": None, "name": "n", "salary": 0, "dept": "a"}])  # 3
    t.update({"salary": 5}, "id IS NULL")  # 4: a NULL key never pairs
    types = _changes(t.changes(1, key="id").to_arrow(), "id")
    assert sorted(types, key=str) == sorted(
        [(2, "delete", 1), (2, "delete", 1), (2, "insert", 1), (2, "insert", 1),
         (3, "insert", None), (4, "delete", None), (4, "insert", None)],
        key=str,
    )  # fmt: skip


def test_a_row_inserted_and_deleted_by_one_write_id_never_shows(wh: Warehouse) -> None:
    t = _emp_with_one_row(wh)  # write id 1
    with wh.transaction():
        t.insert([{"id": 2, "name": "b", "salary": 2, "dept": "a"}])
        t.update({"salary": 3}, "id = 2")  # the new row replaced inside the transaction
        t.update({"salary": 4}, "id = 2")
        t.delete("id = 1")
    assert _changes(t.changes(1, key="id").to_arrow(), "id", "salary") == [
        (2, "delete", 1, 1),
        (2, "insert", 2, 4),
    ]


def test_aborted_write_ids_are_never_changes(wh: Warehouse) -> None:
    t = _emp_with_one_row(wh)  # write id 1
    wh.transaction()
    t.insert([{"id": 2, "name": "b", "salary": 2, "dept": "a"}])  # 2, rolled back
    t.delete("id = 1")
    wh.rollback()
    t.update({"salary": 9}, "id = 1")  # 3
    assert _changes(t.changes(0).to_arrow(), "id", "salary") == [
        (1, "insert", 1, 1),
        (3, "delete", 1, 1),
        (3, "insert", 1, 9),
    ]
    assert t.changes(1, 2).to_arrow().num_rows == 0
    wh.transaction()
    t.delete("id = 1")  # write id 4, rolled back: the last one allocated
    wh.rollback()
    wh.compact("emp", kind="minor", wait=True)
    wh.clean()  # forgets the aborted write ids; the table's high-water write id stays 4
    assert t.changes(0).window.upto == 4
    # a consumer that had read up to 4 sees nothing new
    assert t.changes(4).to_arrow().num_rows == 0
    assert _changes(t.changes(0, 4).to_arrow(), "id", "salary") == [
        (1, "insert", 1, 1),
        (3, "delete", 1, 1),
        (3, "insert", 1, 9),
    ]
    with pytest.raises(InvalidChangeRangeError):
        t.changes(0, 5).to_arrow()


def test_to_stops_below_an_open_write_id_and_the_range_is_checked(wh: Warehouse) -> None:
    t = _emp_with_one_row(wh)  # write id 1
    other = Warehouse.open(wh.root, wh.metastore.url)  # another session
    try:
        other.transaction()
        other.table("emp").insert([{"id": 2, "name": "b", "salary": 2, "dept": "b"}])  # 2, open
        t.insert([{"id": 3, "name": "c", "salary": 3, "dept": "a"}])  # 3, committed
        scan = t.changes(0)
        assert (scan.window.after, scan.window.upto) == (0, 1)  # 3 waits for 2
        scan.close()
        assert _changes(t.changes(0).to_arrow(), "id") == [(1, "insert", 1)]
        with pytest.raises(InvalidChangeRangeError, match="not final"):
            t.changes(0, 3).to_arrow()
        other.commit()
    finally:
        other.close()
    assert _changes(t.changes(0).to_arrow(), "id") == [
        (1, "insert", 1),
        (2, "insert", 2),
        (3, "insert", 3),
    ]
    for bad in [(-1, None), (2, 1), (0, 4)]:
        with pytest.raises(InvalidChangeRangeError):
            t.changes(*bad).to_arrow()
    assert t.changes(3).to_arrow().num_rows == 0  # nothing new after the newest write id
    assert t.changes(7).window.upto == 7  # a poller ahead of the final write id: nothing yet


def test_inside_a_transaction_its_own_uncommitted_write_id_is_not_final(wh: Warehouse) -> None:
    t = _emp_with_one_row(wh)  # write id 1
    with wh.transaction():
        t.insert([{"id": 2, "name": "b", "salary": 2, "dept": "a"}])
        assert _changes(t.changes(0).to_arrow(), "id") == [(1, "insert", 1)]
    assert len(t.changes(0).to_arrow()) == 2
    wh.transaction()
    t.insert([{"id": 3, "name": "c", "salary": 3, "dept": "a"}])
    with pytest.raises(InvalidChangeRangeError):
        t.changes(0, 3).to_arrow()  # a failed statement aborts its transaction, as in Hive
    wh.rollback()
    assert len(t.changes(0).to_arrow()) == 2


def test_minor_compaction_and_cleaning_change_nothing(emp: Warehouse) -> None:
    t = emp.table("emp")
    before = {(a, b, k): t.changes(a, b, key=k).to_arrow() for a in range(4) for b in range(a, 4)
              for k in (None, "id")}  # fmt: skip
    emp.compact("emp", kind="minor", wait=True)
    emp.clean()
    dirs = acid_dirs_of(emp, f"{t.spec.location}/dept=a")
    assert dirs and all("_v" in d for d in dirs), dirs  # compacted, the deltas cleaned away
    for (a, b, k), table in before.items():
        assert t.changes(a, b, key=k).to_arrow().equals(table), (a, b, k)


def test_major_compaction_ends_the_history_below_its_base(emp: Warehouse) -> None:
    t = emp.table("emp")
    after_2 = t.changes(2, key="id").to_arrow()
    emp.compact("emp", partition={"dept": "b"}, kind="major", wait=True)  # base_3 in dept=b
    emp.clean()
    with pytest.raises(ChangeHistoryUnavailableError) as caught:
        t.changes(2).to_arrow()
    error = caught.value
    assert isinstance(error, NotEnoughHistoryError)
    assert (error.table, error.partition, error.earliest_write_id) == ("default.emp", "dept=b", 3)
    assert "dept=b" in str(error) and "base_0000003" in str(error) and "3" in str(error)
    assert t.changes(3).to_arrow().num_rows == 0
    # dept=a still has its history; the filter keeps the feed to it
    assert t.changes(0, where="dept = 'a'").to_arrow().num_rows == 4
    assert (
        t.changes(2, where="dept = 'a'", key="id")
        .to_arrow()
        .equals(after_2.filter(pa.compute.equal(after_2["dept"], "a")))
    )
    emp.sql("UPDATE emp SET salary = 1 WHERE dept = 'b' OR id = 1")  # write id 4, after the base
    assert _changes(t.changes(3, key="id").to_arrow(), "id", "salary") == [
        (4, "update_preimage", 1, 5000),
        (4, "update_postimage", 1, 1),
    ]


def test_an_insert_overwrite_base_starts_the_partitions_history(wh: Warehouse) -> None:
    t = _emp_with_one_row(wh)  # write id 1
    t.insert([{"id": 2, "name": "b", "salary": 2}], partition={"dept": "a"}, overwrite=True)  # 2
    with pytest.raises(ChangeHistoryUnavailableError) as caught:
        t.changes(1).to_arrow()
    assert caught.value.earliest_write_id == 2
    t.delete("id = 2")  # 3
    found = _changes(t.changes(2).to_arrow(), "id", "name")
    assert found == [(3, "delete", 2, "b")]  # found in the base


def test_a_filter_keeps_change_rows_and_prunes_partitions(emp: Warehouse) -> None:
    t = emp.table("emp")
    assert _changes(t.changes(0, where="salary > 5000", key="id").to_arrow(), "id", "salary") == [
        (1, "insert", 2, 8000),
        (2, "update_preimage", 2, 8000),
        (2, "update_postimage", 2, 7000),
    ]
    assert _changes(t.changes(0, where="dept = 'b'").to_arrow(), "id") == [
        (1, "insert", 3),
        (3, "delete", 3),
    ]


def test_the_stream_holds_the_lease_and_gives_the_same_changes(emp: Warehouse) -> None:
    t = emp.table("emp")
    whole = t.changes(0, key="id").to_arrow()
    assert emp.metastore.show_read_leases() == []
    reader = t.changes(0, key="id").to_batches()
    assert len(emp.metastore.show_read_leases()) == 1
    streamed = reader.read_all()
    assert emp.metastore.show_read_leases() == []
    assert sorted(streamed.to_pylist(), key=str) == sorted(whole.to_pylist(), key=str)
    scan = t.changes(0)
    scan.to_arrow()
    with pytest.raises(ScanClosedError):
        scan.to_arrow()


def test_an_unpartitioned_table_and_sql_written_rows(wh: Warehouse) -> None:
    wh.sql("CREATE TABLE kv (k string, v int) STORED AS ORC TBLPROPERTIES ('transactional'='true')")
    wh.sql("INSERT INTO kv VALUES ('a', 1), ('b', 2)")
    t = wh.table("kv")
    t.merge([{"k": "a", "v": 10}, {"k": "c", "v": 30}], "t.k = s.k").when_matched_update(
        {"v": "s.v"}
    ).when_not_matched_insert({"k": "s.k", "v": "s.v"}).execute()
    t.update({"k": lit("b2")}, "k = 'b'")
    assert _changes(t.changes(1, key="k").to_arrow(), "k", "v") == [
        (2, "update_preimage", "a", 1),
        (2, "update_postimage", "a", 10),
        (2, "insert", "c", 30),
        (3, "delete", "b", 2),
        (3, "insert", "b2", 2),
    ]


def test_an_insert_only_tables_feed_holds_its_inserts(wh: Warehouse) -> None:
    wh.sql(
        "CREATE TABLE mm (id int) STORED AS PARQUET "
        "TBLPROPERTIES ('transactional'='true', 'transactional_properties'='insert_only')"
    )
    wh.sql("INSERT INTO mm VALUES (1), (2)")
    wh.sql("INSERT INTO mm VALUES (3)")
    feed = wh.table("mm").changes(0).to_arrow()
    assert _changes(feed, "id") == [(1, "insert", 1), (1, "insert", 2), (2, "insert", 3)]
    assert feed.column("row__id").null_count == 3  # plain files carry no ROW__IDs
    assert _changes(wh.table("mm").changes(1).to_arrow(), "id") == [(2, "insert", 3)]
    wh.compact("mm", kind="minor", wait=True)  # delta_1_2_v…: write ids 1 and 2 merged
    with pytest.raises(ChangeHistoryUnavailableError) as caught:
        wh.table("mm").changes(1).to_arrow()
    assert caught.value.earliest_write_id == 2
    assert wh.metastore.show_read_leases() == []  # the lease taken for it was released
    assert wh.table("mm").changes(2).to_arrow().num_rows == 0
