"""Seed 000: insert, update, merge, then minor, then major compaction — the seed's layouts (with
Hive 4's ``_v`` suffixes), unchanged query results and ROW__IDs at every step."""

from __future__ import annotations

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner, show_compactions
from acid_platform_tests.helpers import acid_dirs, events, warehouse_fixture
from acid_platform_tests.store_path import StorePath

from .conftest import BACKENDS, EMPLOYEE, event_keys, table_rows

#: The seed's compactions on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "10"}, backends=[*BACKENDS, "s3"])

ROWS = [
    {"id": 1, "name": "Jerry", "salary": 5000},
    {"id": 2, "name": "Tom", "salary": 6000},
    {"id": 3, "name": "Kate", "salary": 7000},
]
B0, B0_S1 = 536870912, 536870913  # bucket 0 statement 0 / statement 1


def _merge_from_update(wh: Warehouse) -> None:
    wh.create_table("employee_update", EMPLOYEE).insert(
        [{"id": 2, "name": "Tom", "salary": 7000}, {"id": 4, "name": "Mary", "salary": 9000}]
    )
    (
        wh.table("employee")
        .merge("SELECT * FROM employee_update", "a.id = b.id", target_alias="a", source_alias="b")
        .when_matched_update({"salary": "b.salary"})
        .when_not_matched_insert_all()
        .execute()
    )


def _compact(wh: Warehouse, kind: str) -> int:
    (info,) = compact_table(wh, "employee", kind=kind)
    assert info.state.value == "ready for cleaning"
    assert info.txn_id is not None
    return info.txn_id


def test_seed_insert_merge_minor_then_major(wh: Warehouse) -> None:
    """The seed's exact sequence: INSERT (write 1), MERGE (write 2: insert clause statement 0,
    update statement 1), minor -> delta_1_2 + delete_delta_1_2, major -> base_2."""
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    _merge_from_update(wh)
    d = StorePath(t.spec.location)
    assert acid_dirs(d) == [
        "delete_delta_0000002_0000002_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]
    before = table_rows(wh, "employee")
    assert before == [
        (1, B0, 0, 1, "Jerry", 5000),
        (1, B0, 2, 3, "Kate", 7000),
        (2, B0, 0, 4, "Mary", 9000),
        (2, B0_S1, 0, 2, "Tom", 7000),
    ]

    minor_txn = _compact(wh, "minor")
    v = f"_v{minor_txn:07d}"
    assert table_rows(wh, "employee") == before  # compacted, not yet cleaned
    report = run_cleaner(wh)
    assert report.cleaned_ids and len(report.removed) == 4
    assert acid_dirs(d) == [f"delete_delta_0000001_0000002{v}", f"delta_0000001_0000002{v}"]
    assert sorted(p.name for p in (d / f"delta_0000001_0000002{v}").iterdir()) == [
        "_orc_acid_version",
        "bucket_00000",
    ]
    assert (d / f"delta_0000001_0000002{v}" / "_orc_acid_version").read_bytes() == b"2"
    # "rows are simply ordered and concatenated, i.e. two rows of Tom will be both included"
    assert [(e["originalTransaction"], e["bucket"], e["rowId"], e["row"]["name"])
            for e in events(d / f"delta_0000001_0000002{v}" / "bucket_00000")] == [
        (1, B0, 0, "Jerry"), (1, B0, 1, "Tom"), (1, B0, 2, "Kate"),
        (2, B0, 0, "Mary"), (2, B0_S1, 0, "Tom"),
    ]  # fmt: skip
    assert event_keys(d / f"delete_delta_0000001_0000002{v}" / "bucket_00000") == [(2, 1, B0, 1, 2)]
    assert table_rows(wh, "employee") == before

    major_txn = _compact(wh, "major")
    assert major_txn > minor_txn
    assert table_rows(wh, "employee") == before
    run_cleaner(wh)
    base = f"base_0000002_v{major_txn:07d}"
    assert acid_dirs(d) == [base]
    # "Deleted data will be removed in major compaction. row_id remains untouched."
    assert event_keys(d / base / "bucket_00000") == [
        (0, 1, B0, 0, 1), (0, 1, B0, 2, 1), (0, 2, B0, 0, 2), (0, 2, B0_S1, 0, 2),
    ]  # fmt: skip
    assert table_rows(wh, "employee") == before
    states = {(r["Type"], r["State"]) for r in show_compactions(wh)}
    assert states == {("MINOR", "succeeded"), ("MAJOR", "succeeded")}


def test_seed_insert_update_merge_minor_then_major(wh: Warehouse) -> None:
    """INSERT (1), UPDATE (2), MERGE (3): minor covers 1..3, major writes base_3."""
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    t.update({"salary": 7000}, where="id = 2")
    _merge_from_update(wh)
    d = StorePath(t.spec.location)
    assert acid_dirs(d) == [
        "delete_delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0001",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
        "delta_0000003_0000003_0001",
    ]
    before = table_rows(wh, "employee")
    steps = [before]
    minor_txn = _compact(wh, "minor")
    steps.append(table_rows(wh, "employee"))
    run_cleaner(wh)
    steps.append(table_rows(wh, "employee"))
    v = f"_v{minor_txn:07d}"
    assert acid_dirs(d) == [f"delete_delta_0000001_0000003{v}", f"delta_0000001_0000003{v}"]
    # delete events of write 2 and 3, sorted by the ROW__ID they delete
    assert event_keys(d / f"delete_delta_0000001_0000003{v}" / "bucket_00000") == [
        (2, 1, B0, 1, 2), (2, 2, B0, 0, 3),
    ]  # fmt: skip
    major_txn = _compact(wh, "major")
    steps.append(table_rows(wh, "employee"))
    run_cleaner(wh)
    steps.append(table_rows(wh, "employee"))
    assert acid_dirs(d) == [f"base_0000003_v{major_txn:07d}"]
    assert all(s == before for s in steps)
    assert [r[3:] for r in before] == [
        (1, "Jerry", 5000), (3, "Kate", 7000), (4, "Mary", 9000), (2, "Tom", 7000),
    ]  # fmt: skip


def test_cleaner_waits_and_is_idempotent(wh: Warehouse) -> None:
    t = wh.create_table("employee", EMPLOYEE)
    t.insert(ROWS)
    t.delete("id = 3")
    _compact(wh, "major")
    first = run_cleaner(wh)
    again = run_cleaner(wh)
    assert len(first.removed) == 2 and first.cleaned_ids
    assert again.removed == () and again.entries == ()
    assert [r[3] for r in table_rows(wh, "employee")] == [1, 2]
