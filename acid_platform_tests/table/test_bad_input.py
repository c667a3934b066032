"""Bad input: a clear typed error naming the table/column/partition, nothing written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    AcidError,
    CardinalityViolationError,
    InvalidBucketError,
    InvalidExpressionError,
    InvalidNameError,
    InvalidPartitionError,
    NoSuchObjectError,
    NotNullViolationError,
    SchemaMismatchError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.table import Table, lit
from acid_platform_tests.store_path import StorePath
from acid_platform_tests.table.conftest import rows_of

COLS = [("id", "int"), ("name", "string"), ("salary", "int")]

#: For the tests that also run on the S3 server (``wh`` is local disk otherwise).
ON_S3 = pytest.mark.parametrize("wh", ["sqlite", "s3"], indirect=True)


@pytest.fixture
def t(wh: Warehouse) -> Table:
    table = wh.create_table(
        "emp",
        COLS,
        partition_columns=[("dept", "string")],
        bucket_columns=["id"],
        num_buckets=2,
        not_null=["name"],
    )
    table.insert(
        [
            {"id": 1, "name": "a", "salary": 10, "dept": "x"},
            {"id": 2, "name": "b", "salary": 20, "dept": "y"},
        ]
    )
    return table


def _snapshot_of_files(table: Table) -> dict[str, int]:
    return StorePath(table.spec.location).files()


def _unchanged(t: Table, before: dict[str, int]) -> None:
    assert rows_of(t) == [(1, "a", 10, "x"), (2, "b", 20, "y")]
    assert _snapshot_of_files(t) == before


def test_unknown_table(wh: Warehouse) -> None:
    with pytest.raises(NoSuchObjectError, match="default.nope"):
        wh.table("nope")
    with pytest.raises(NoSuchObjectError):
        wh.drop_table("nope")
    wh.drop_table("nope", if_exists=True)
    with pytest.raises(InvalidNameError):
        wh.table("bad-name")


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (
            lambda t: t.insert([{"id": 3, "name": "c", "bogus": 1, "dept": "x"}]),
            UnknownColumnError,
            ["default.emp", "bogus"],
        ),
        (
            lambda t: t.insert([{"id": "three", "name": "c", "dept": "x"}]),
            SchemaMismatchError,
            ["default.emp", "'id'", "int", "three"],
        ),
        (
            lambda t: t.insert([{"id": 2**40, "name": "c", "dept": "x"}]),
            SchemaMismatchError,
            ["'id'"],
        ),
        (
            lambda t: t.insert([{"id": 3, "name": None, "dept": "x"}]),
            NotNullViolationError,
            ["default.emp", "'name'"],
        ),
        (lambda t: t.insert([{"id": 3, "dept": "x"}]), NotNullViolationError, ["'name'"]),
        (
            lambda t: t.insert([{"id": 3, "name": "c"}], partition={"nope": "x"}),
            InvalidPartitionError,
            ["nope", "dept"],
        ),
        (
            lambda t: t.insert([{"id": 3, "name": "c", "dept": "x"}], partition={"dept": "x"}),
            InvalidPartitionError,
            ["dept"],
        ),
        (lambda t: t.insert(42), SchemaMismatchError, ["int"]),
        (lambda t: t.update({"nope": 1}), UnknownColumnError, ["default.emp", "nope"]),
        (lambda t: t.update({"salary": "nope + 1"}), UnknownColumnError, ["nope"]),
        (lambda t: t.update({"salary": lit("abc")}), SchemaMismatchError, ["'salary'", "string"]),
        (lambda t: t.update({"name": None}, "id = 1"), NotNullViolationError, ["'name'"]),
        (
            lambda t: t.update({"dept": lit("z")}),
            UnsupportedOperationError,
            ["partition column 'dept'"],
        ),
        (lambda t: t.update({"id": 5}), UnsupportedOperationError, ["bucketing column 'id'"]),
        (lambda t: t.update({"salary": 1}, "salary >"), InvalidExpressionError, ["salary >"]),
        (lambda t: t.delete("x.id = 1"), UnknownColumnError, ["x"]),
        (lambda t: t.delete("id IN (SELECT 1)"), UnsupportedOperationError, ["sub-queries"]),
        (lambda t: t.scan(columns=["nope"]).to_arrow(), UnknownColumnError, ["nope"]),
        (lambda t: t.scan(where="nope = 1").to_arrow(), UnknownColumnError, ["nope"]),
    ],
)
def test_bad_statement_is_a_typed_error_and_writes_nothing(
    t: Table, call: object, error: type[AcidError], words: list[str]
) -> None:
    before = _snapshot_of_files(t)
    with pytest.raises(error) as info:
        call(t)  # type: ignore[operator]
    for w in words:
        assert w in str(info.value)
    _unchanged(t, before)


@ON_S3
@pytest.mark.parametrize("value", ["../../escape", "a/../../b", "..", "/abs", "x/y"])
def test_partition_values_cannot_leave_the_table_dir(wh: Warehouse, value: str) -> None:
    t = wh.create_table("p", [("id", "int")], partition_columns=[("k", "string")])
    t.insert([{"id": 1, "k": value}])
    (name,) = [p.name for p in StorePath(t.spec.location).iterdir()]
    assert name.startswith("k=") and "/" not in name
    table = t.spec.location[len(wh.root) :].strip("/").split("/")
    buckets = [f for f in StorePath(wh.root).files() if f.rsplit("/", 1)[-1].startswith("bucket_")]
    assert buckets
    for rel in buckets:  # every file inside the table's directory, none through ".."
        parts = rel.split("/")
        assert parts[: len(table)] == table and ".." not in parts, rel
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "k": value}]


def test_partition_path_check() -> None:
    from acid_platform.table.partitions import partition_path

    for bad in ["..", "k=1/..", "../k=1", "=x", "k=1//k=2"]:
        with pytest.raises(InvalidPartitionError):
            partition_path("/wh/t", bad)
    assert partition_path("/wh/t", "k=..") == "/wh/t/k=.."


@ON_S3
def test_merge_cardinality_violation_writes_nothing(wh: Warehouse, t: Table) -> None:
    before = _snapshot_of_files(t)
    source = [{"id": 1, "salary": 11}, {"id": 1, "salary": 12}, {"id": 3, "salary": 30}]
    merger = (
        t.merge(source, "t.id = s.id")
        .when_matched_update({"salary": "s.salary"})
        .when_not_matched_insert(
            {"id": "s.id", "name": lit("n"), "dept": lit("x"), "salary": "s.salary"}
        )
    )
    with pytest.raises(CardinalityViolationError) as info:
        merger.execute()
    message = str(info.value)
    assert "default.emp" in message and '"writeid":1' in message and "dept=x" in message
    _unchanged(t, before)
    # Hive's switch turns the check off: the row is then updated twice (two new versions).
    wh.conf["hive.merge.cardinality.check"] = "false"
    out = merger.execute()
    assert out.rows_updated == 2
    assert sorted(r["salary"] for r in t.scan().to_arrow().to_pylist() if r["id"] == 1) == [11, 12]


def test_merge_clause_rules(t: Table) -> None:
    with pytest.raises(InvalidExpressionError, match="more than one"):
        t.merge([{"id": 1}], "t.id = s.id").when_matched_delete(
            "s.id > 0"
        ).when_matched_delete().execute()
    with pytest.raises(InvalidExpressionError, match="must have an AND"):
        t.merge([{"id": 1}], "t.id = s.id").when_matched_update(
            {"salary": 1}
        ).when_matched_delete().execute()
    with pytest.raises(InvalidExpressionError, match="ambiguous"):
        t.merge([{"id": 1}], "id = id").when_matched_delete().execute()
    with pytest.raises(UnknownColumnError, match="source s"):
        t.merge([{"id": 1}], "t.id = s.nope").when_matched_delete().execute()
    with pytest.raises(InvalidExpressionError, match="no WHEN"):
        t.merge([{"id": 1}], "t.id = s.id").execute()
    with pytest.raises(NoSuchObjectError):
        t.merge("SELECT * FROM missing", "t.id = s.id").when_matched_delete().execute()


def test_wrong_data_types_for_the_whole_table(wh: Warehouse) -> None:
    t = wh.create_table(
        "typed",
        [
            ("d", "date"),
            ("ts", "timestamp"),
            ("n", "decimal(5,2)"),
            ("b", "boolean"),
            ("s", "string"),
        ],
    )
    t.insert([{"d": "2024-01-02", "ts": "2024-01-02 03:04:05", "n": "1.25", "b": True, "s": 5}])
    row = t.scan().to_arrow().to_pylist()[0]
    assert str(row["d"]) == "2024-01-02" and str(row["n"]) == "1.25" and row["s"] == "5"
    with pytest.raises(SchemaMismatchError, match="'b'"):
        t.insert([{"b": "yes"}])
    with pytest.raises(SchemaMismatchError, match="'d'"):
        t.insert([{"d": "not a date"}])
    with pytest.raises(SchemaMismatchError, match="'n'"):
        t.insert(pa.table({"n": pa.array([1234.5])}))
    t.insert([{"n": 7}])  # an integer fits a decimal column when its value does
    assert sorted(str(r["n"]) for r in t.scan(columns=["n"]).to_arrow().to_pylist()) == [
        "1.25",
        "7.00",
    ]
    with pytest.raises(SchemaMismatchError, match="'n'"):
        t.insert([{"n": 1234}])


# --------------------------------------------------------------------------- issue 13, smaller items


def test_create_database_metastore_is_refused(wh: Warehouse) -> None:
    with pytest.raises(InvalidNameError, match="reserved"):
        wh.sql("CREATE DATABASE _metastore")
    assert Path(wh.root, "_metastore.db").is_file()  # the metastore file is untouched


def test_a_relative_database_location_is_stored_absolute_below_the_warehouse(
    wh: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    wh.create_database("rel", location="dbs/rel")
    assert wh.metastore.get_database("rel").location == f"{wh.root}/dbs/rel"
    t = wh.create_table("rel.t", COLS)
    assert t.spec.location == f"{wh.root}/dbs/rel/t"
    with pytest.raises(InvalidNameError, match="leaves the warehouse"):
        wh.create_database("up", location="../outside")


@pytest.mark.parametrize("buckets", [0, 4097])
def test_create_with_a_bucket_count_no_insert_could_use_is_refused(
    wh: Warehouse, buckets: int
) -> None:
    with pytest.raises(InvalidBucketError):
        wh.sql(f"CREATE TABLE b (k int) CLUSTERED BY (k) INTO {buckets} BUCKETS STORED AS ORC")
    assert "b" not in wh.list_tables()
    wh.sql("CREATE TABLE b (k int) CLUSTERED BY (k) INTO 4096 BUCKETS STORED AS ORC")
    wh.sql("INSERT INTO b VALUES (1), (2)")
    assert len(wh.table("b").scan().to_arrow()) == 2


def test_a_partition_value_longer_than_the_file_system_allows_is_a_typed_error(
    wh: Warehouse,
) -> None:
    wh.sql("CREATE TABLE p (k int) PARTITIONED BY (s string) STORED AS ORC")
    for sql in (
        f"INSERT INTO p PARTITION (s='{'x' * 300}') VALUES (1)",
        f"INSERT INTO p VALUES (1, '{'y' * 300}')",
    ):
        with pytest.raises(InvalidNameError, match="file systems allow 255"):
            wh.sql(sql)
    assert wh.list_partitions("p") == []
    assert len(wh.table("p").scan().to_arrow()) == 0


def test_rows_with_different_keys_lose_no_value(wh: Warehouse) -> None:
    """Every key of every row is a column (pyarrow's ``from_pylist`` reads the first row's keys
    only and drops the rest silently); a row without a key holds NULL there."""
    t = wh.create_table("k", [("id", "int"), ("a", "string"), ("b", "int")])
    t.insert([{"id": 1}, {"id": 2, "a": "x"}, {"b": 7, "id": 3}])
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "a": None, "b": None},
        {"id": 2, "a": "x", "b": None},
        {"id": 3, "a": None, "b": 7},
    ]
