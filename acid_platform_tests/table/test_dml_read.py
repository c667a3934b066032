"""What DML reads: the plan's probe and column needs, the two-phase target read (narrow probe,
then full rows by ROW__ID), pushed-down scan filters and parallel writers — each checked to give
exactly what the plain full read gives."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import CardinalityViolationError
from acid_platform.format import decode_bucket
from acid_platform.metastore import TableSpec
from acid_platform.table import Clause, ClauseKind, dml_read, lit, scan_filter
from acid_platform.table.dml import plan_delete, plan_merge, plan_update
from acid_platform_tests.helpers import warehouse_fixture
from acid_platform_tests.store_path import StorePath
from acid_platform_tests.table.conftest import emp_rows, rows_of

SPEC = TableSpec(
    "default",
    "emp",
    (("id", "int"), ("name", "string"), ("salary", "int"), ("note", "string")),
    (("dept", "string"),),
    location="/wh/emp",
    properties={"transactional": "true"},
)
COLS = [("id", "int"), ("name", "string"), ("salary", "bigint"), ("note", "string")]

#: DML reads on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


@pytest.fixture
def emp(wh: Warehouse) -> Any:
    t = wh.create_table("emp", COLS, partition_columns=[("dept", "string")])
    t.insert(emp_rows(300))
    return t


class Reads:
    """Records the columns and ROW__ID restrictions of every read of planned partitions (and
    makes every target count as large, so the two-phase read is used)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, small_target_bytes: int = -1) -> None:
        monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", small_target_bytes)
        self.calls: list[tuple[list[str], bool]] = []
        real = dml_read.read_files

        def spy(*args: Any, **kwargs: Any) -> pa.Table:
            self.calls.append((list(args[4]), kwargs.get("row_ids") is not None))
            return real(*args, **kwargs)

        monkeypatch.setattr(dml_read, "read_files", spy)


# --------------------------------------------------------------------------- the plan


def test_plan_names_probe_and_columns_it_needs() -> None:
    upd = plan_update(SPEC, {"salary": "salary * 2"}, "dept = 'x' AND id > 3")
    assert upd.probe is not None
    assert upd.probe_columns == ("id", "dept")
    # an update carries every column it does not assign into the new row version
    assert upd.read_columns == ("id", "name", "salary", "note", "dept")
    dele = plan_delete(SPEC, "name IS NULL")
    assert dele.probe_columns == ("name", "dept") and dele.read_columns == ("name", "dept")
    assert plan_delete(SPEC).probe is None  # no WHERE: every row
    assert plan_delete(SPEC).read_columns == ("dept",)
    merge = plan_merge(
        SPEC,
        ["id", "name", "salary", "note", "dept"],
        "t.id = s.id",
        [
            Clause(
                ClauseKind.MATCHED_UPDATE,
                None,
                (("name", "s.name"), ("salary", "s.salary"), ("note", "s.note")),
            ),
            Clause(ClauseKind.NOT_MATCHED_INSERT, None, (("id", "s.id"),)),
        ],
    )
    assert merge.probe is not None and "EXISTS" in merge.probe.sql()
    assert merge.probe_columns == ("id", "dept") and merge.read_columns == ("id", "dept")
    by_source = plan_merge(
        SPEC, ["id"], "t.id = s.id", [Clause(ClauseKind.BY_SOURCE_DELETE, "t.salary > 3")]
    )
    assert by_source.probe is None and by_source.read_columns == ("id", "salary", "dept")


# --------------------------------------------------------------------------- two-phase reads


def test_delete_reads_only_the_probe_columns(emp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch)
    before = rows_of(emp)
    assert emp.delete("salary % 7 = 0 AND dept = 'a'").rows_deleted == len(
        [r for r in emp_rows(300) if r["salary"] % 7 == 0 and r["dept"] == "a"]
    )
    assert reads.calls == [(["salary", "dept"], False)]
    assert rows_of(emp) == [r for r in before if not (r[2] % 7 == 0 and r[4] == "a")]


def test_the_probe_hands_the_engine_only_its_columns_and_row_positions(
    wh: Warehouse, emp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", -1)
    emp.insert([{**r, "id": r["id"] + 1000} for r in emp_rows(300)])  # a second file each
    seen: list[list[str]] = []
    real = type(wh.engine).execute

    def spy(self: Any, plan: Any, relations: Any) -> pa.Table:
        seen.append(list(relations["target"].column_names))
        return real(self, plan, relations)

    monkeypatch.setattr(type(wh.engine), "execute", spy)
    before = rows_of(emp)
    emp.delete("salary % 3 = 0 AND name <> 'n5'")
    # the probe's relation: its columns and positions, no ROW__ID; then the plan's target
    assert seen[0] == ["name", "salary", "dept", dml_read.POSITION]
    assert "__acid_rowid" in seen[1]
    deleted = [r for r in before if r[2] % 3 == 0 and r[1] is not None and r[1] != "n5"]
    assert deleted and rows_of(emp) == [r for r in before if r not in deleted]


def test_update_fetches_full_rows_of_matches_only(
    emp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = Reads(monkeypatch)
    emp.update({"note": lit("upd")}, "id % 50 = 1")
    assert reads.calls == [
        (["id", "dept"], False),  # the probe: every partition in one read
        # note is assigned: not read; id and dept come from the probe (decoded once)
        (["name", "salary"], True),
    ]
    got = {r[0]: r for r in rows_of(emp)}
    for r in emp_rows(300):
        want = "upd" if r["id"] % 50 == 1 else r["note"]
        assert got[r["id"]] == (r["id"], r["name"], r["salary"], want, r["dept"])


def test_small_target_is_read_in_one_pass(emp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(monkeypatch, small_target_bytes=1 << 30)
    emp.update({"note": lit("upd")}, "id % 50 = 1")
    assert reads.calls == [(["id", "name", "salary", "dept"], False)]
    assert sorted(r[0] for r in rows_of(emp) if r[3] == "upd") == list(range(1, 300, 50))


@pytest.mark.parametrize("small_target_bytes", [-1, 1 << 30], ids=["two-phase", "one-pass"])
def test_merge_probe_keeps_every_match_for_the_cardinality_check(
    emp: Any, monkeypatch: pytest.MonkeyPatch, small_target_bytes: int
) -> None:
    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", small_target_bytes)
    before = rows_of(emp)
    source = pa.table({"id": pa.array([5, 5, 999], pa.int32()), "salary": [1, 2, 3]})
    merger = emp.merge(source, "t.id = s.id").when_matched_update({"salary": "s.salary"})
    with pytest.raises(CardinalityViolationError, match="matches more than one source row"):
        merger.when_not_matched_insert({"id": "s.id", "salary": "s.salary"}).execute()
    assert rows_of(emp) == before


@pytest.mark.parametrize("small_target_bytes", [-1, 1 << 30], ids=["two-phase", "one-pass"])
def test_merge_on_a_partition_and_key_matches_full_read(
    emp: Any, monkeypatch: pytest.MonkeyPatch, small_target_bytes: int
) -> None:
    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", small_target_bytes)
    source = pa.table(
        {
            "id": pa.array([3, 4, 5, 1000], pa.int32()),
            "dept": ["a", "b", "c", "a"],
            "salary": pa.array([-3, -4, -5, -1000], pa.int64()),
        }
    )
    out = (
        emp.merge(source, "t.id = s.id AND t.dept = s.dept")
        .when_matched_update({"salary": "s.salary"}, "t.salary > 35")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    # id 3 (dept a, salary 30): delete; id 4 (dept b, salary 40): update; id 5: dept differs
    assert (out.rows_updated, out.rows_deleted) == (1, 1)
    assert out.rows_inserted == 2
    rows = {(r[0], r[4]): r for r in rows_of(emp)}
    assert (3, "a") not in rows and rows[(4, "b")][2] == -4 and rows[(5, "c")][2] == -5
    assert rows[(5, None)][2] == 50 and rows[(1000, "a")][2] == -1000


def test_update_on_a_large_multi_writer_table(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACID_READ_THREADS", "2")
    monkeypatch.setattr("acid_platform.table.writes.ROWS_PER_WRITER", 1000)
    monkeypatch.setattr("acid_platform.format.reader.PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", -1)
    t = wh.create_table("big", COLS)
    rows = pa.Table.from_pylist(
        [{k: v for k, v in r.items() if k != "dept"} for r in emp_rows(5000)]
    )
    t.insert(rows)
    delta = StorePath(t.spec.location) / "delta_0000001_0000001_0000"
    assert [p.name for p in delta.iterdir() if p.name.startswith("bucket")] == [
        "bucket_00000",
        "bucket_00001",
    ]
    assert t.update({"salary": "salary + 1"}, "id % 1000 = 999").rows_updated == 5
    assert t.delete("id BETWEEN 2498 AND 2501").rows_deleted == 4
    got = t.scan(with_row_id=True).to_arrow().to_pylist()
    assert len(got) == 4996
    keys = {(r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in got}
    assert len(keys) == len(got)
    by_id = {r["id"]: r for r in got}
    assert by_id[999]["salary"] == 9991 and by_id[1000]["salary"] == 10000
    assert {decode_bucket(r["row__id"]["bucketid"])[0] for r in got} == {0, 1}


# --------------------------------------------------------------------------- scan filters


@pytest.mark.parametrize(
    ("predicate", "pushed"),
    [
        ("id = 3", [("id", "=", 3)]),
        ("3 < id", [("id", ">", 3)]),
        ("id >= -2 AND name = 'n4'", [("id", ">=", -2), ("name", "=", "n4")]),
        ("id IN (1, 2, 3)", [("id", "in", [1, 2, 3])]),
        ("id BETWEEN 2 AND 5", [("id", ">=", 2), ("id", "<=", 5)]),
        ("id = 3 OR id = 4", None),  # not a conjunct of simple comparisons
        ("id = '3'", None),  # Hive compares as numbers, the reader would not
        ("id = 3000000000", None),  # out of the int range: leave it to the engine
        ("salary > 1.5", None),
        ("dept = 'a'", None),  # partition column: pruned by directory, not pushed
        ("name IS NULL AND id % 2 = 0", None),
    ],
)
def test_pushdown_filters_only_exact_conjuncts(predicate: str, pushed: object) -> None:
    spec = TableSpec(
        "default",
        "emp",
        (("id", "int"), ("name", "string"), ("salary", "bigint")),
        (("dept", "string"),),
        location="/wh/emp",
    )
    assert scan_filter.pushdown_filters(spec, scan_filter.resolve_filter(spec, predicate)) == pushed


@pytest.mark.parametrize(
    "predicate",
    [
        "id = 3",
        "id > 150 AND name = 'n200'",
        "id IN (0, 11, 22, 250) AND salary >= 100",
        "name = 'n5' OR id = 7",
        "id BETWEEN 10 AND 20 AND dept = 'b'",
        "name IS NULL",
        "name < 'n2'",
    ],
)
def test_scan_with_pushed_filters_matches_python(emp: Any, predicate: str) -> None:
    def ok(r: dict[str, Any]) -> bool:
        name, i = r["name"], r["id"]
        return {
            "id = 3": i == 3,
            "id > 150 AND name = 'n200'": i > 150 and name == "n200",
            "id IN (0, 11, 22, 250) AND salary >= 100": i in (0, 11, 22, 250)
            and r["salary"] >= 100,
            "name = 'n5' OR id = 7": name == "n5" or i == 7,
            "id BETWEEN 10 AND 20 AND dept = 'b'": 10 <= i <= 20 and r["dept"] == "b",
            "name IS NULL": name is None,
            "name < 'n2'": name is not None and name < "n2",
        }[predicate]

    got = sorted(r["id"] for r in emp.scan(where=predicate).to_arrow().to_pylist())
    assert got == [r["id"] for r in emp_rows(300) if ok(r)]


@pytest.mark.slow
def test_random_statements_match_the_oracle_with_two_phase_reads_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The differential test's random statements (partitioned, bucketed table), with every target
    read in two phases and every stripe decoded as parallel column groups."""
    from acid_platform_tests.table.test_differential import run_episode

    monkeypatch.setattr(dml_read, "SMALL_TARGET_BYTES", -1)
    monkeypatch.setenv("ACID_READ_THREADS", "2")
    monkeypatch.setattr("acid_platform.format.reader.PARALLEL_MIN_ROWS", 1)
    rng = random.Random(3)
    wh = Warehouse.open(
        tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0", "acid.scan.read.lease": "false"}
    )
    try:
        for episode in range(3):
            run_episode(wh, f"t{episode}", rng, 40)
    finally:
        wh.close()
