"""Catalog: databases, tables, partitions; names validated and stored lower-case."""

from __future__ import annotations

from typing import Any

import pytest

from acid_platform.errors import (
    AlreadyExistsError,
    InvalidBucketError,
    InvalidNameError,
    MetastoreError,
    NoSuchObjectError,
)
from acid_platform.metastore import Metastore, TableSpec
from acid_platform_tests.helpers import make_table


def spec(db: str = "db", name: str = "t", **kw: object) -> TableSpec:
    args: dict[str, object] = {
        "columns": (("id", "int"), ("name", "string")),
        "location": f"/warehouse/{db}.db/{name}",
        "properties": {"transactional": "true"},
    }
    args.update(kw)
    return TableSpec(db, name, **args)  # type: ignore[arg-type]


def test_databases_are_created_listed_and_dropped(ms: Metastore) -> None:
    ms.create_database("Sales", location="/wh/sales.db")
    ms.create_database("ops")
    assert ms.list_databases() == ["ops", "sales"]
    assert ms.get_database("SALES").location == "/wh/sales.db"
    with pytest.raises(AlreadyExistsError):
        ms.create_database("sales")
    ms.create_database("sales", if_not_exists=True)
    ms.drop_database("ops")
    assert ms.list_databases() == ["sales"]
    with pytest.raises(NoSuchObjectError):
        ms.drop_database("ops")
    ms.drop_database("ops", if_exists=True)
    with pytest.raises(NoSuchObjectError):
        ms.get_database("ops")


def test_non_empty_database_needs_cascade(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec())
    with pytest.raises(MetastoreError, match="not empty"):
        ms.drop_database("db")
    ms.drop_database("db", cascade=True)
    assert ms.list_databases() == []


def test_table_spec_round_trips_with_all_its_parts(ms: Metastore) -> None:
    ms.create_database("db")
    props = {
        "transactional": "true",
        "transactional_properties": "default",
        "no_auto_compaction": "false",
        "compactorthreshold.hive.compactor.delta.num.threshold": "4",
        "orc.compress": "ZSTD",
        "bucketing_version": "2",
    }
    created = TableSpec(
        "DB",
        "Web_Sales",
        columns=(("Id", "INT"), ("amount", "decimal(10,2)"), ("tags", "array<string>")),
        partition_columns=(("ds", "string"), ("hr", "int")),
        bucket_columns=("ID",),
        num_buckets=4,
        bucketing_version=2,
        location="/wh/db.db/web_sales",
        properties=props,
    )
    ms.create_table(created)
    got = ms.get_table("db", "WEB_SALES")
    assert got == created
    assert got.name == "web_sales"
    assert got.columns == (("id", "int"), ("amount", "decimal(10,2)"), ("tags", "array<string>"))
    assert got.partition_column_names == ("ds", "hr")
    assert got.bucket_columns == ("id",)
    assert dict(got.properties) == props
    assert got.is_transactional and not got.is_insert_only
    assert ms.list_tables("db") == ["web_sales"]


def test_insert_only_and_non_transactional_tables_are_told_apart() -> None:
    mm = spec(properties={"transactional": "true", "transactional_properties": "insert_only"})
    plain = spec(properties={})
    assert mm.is_transactional and mm.is_insert_only
    assert not plain.is_transactional and not plain.is_insert_only


def test_table_errors_are_typed(ms: Metastore) -> None:
    with pytest.raises(NoSuchObjectError):
        ms.create_table(spec())  # no database
    ms.create_database("db")
    ms.create_table(spec())
    with pytest.raises(AlreadyExistsError):
        ms.create_table(spec())
    ms.create_table(spec(), if_not_exists=True)
    with pytest.raises(NoSuchObjectError):
        ms.get_table("db", "nope")
    with pytest.raises(NoSuchObjectError):
        ms.drop_table("db", "nope")
    with pytest.raises(NoSuchObjectError):
        ms.list_tables("nodb")
    ms.drop_table("db", "t")
    ms.drop_table("db", "t", if_exists=True)
    assert ms.list_tables("db") == []


@pytest.mark.parametrize(
    "bad", ["1abc", "a-b", "", "a b", "x;drop table txns", "t'", "ü", "a" * 129, "db.t"]
)
def test_invalid_names_are_refused(ms: Metastore, bad: str) -> None:
    with pytest.raises(InvalidNameError):
        ms.create_database(bad)
    with pytest.raises(InvalidNameError):
        spec(name=bad)
    with pytest.raises(InvalidNameError):
        spec(columns=((bad, "int"),))


def test_non_string_names_are_refused(ms: Metastore) -> None:
    with pytest.raises(InvalidNameError):
        ms.create_database(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidNameError):
        ms.get_table("db", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"columns": (("a", "int"), ("A", "int"))}, InvalidNameError),
        ({"partition_columns": (("id", "int"),)}, InvalidNameError),
        ({"bucket_columns": ("nope",), "num_buckets": 2}, InvalidNameError),
        ({"bucket_columns": ("id",), "num_buckets": 0}, ValueError),
        ({"num_buckets": -1}, ValueError),
        ({"bucketing_version": 3}, ValueError),
        ({"columns": (("a", ""),)}, InvalidNameError),
        ({"columns": (("a",),)}, ValueError),
        ({"properties": {"k": 1}}, ValueError),
    ],
)
def test_invalid_table_specs_are_refused(kw: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        spec(**kw)


def test_table_properties_are_altered_and_values_are_bound_not_spliced(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec())
    evil = "'); DROP TABLE txns; --"
    new = ms.alter_table_properties("db", "t", {"no_auto_compaction": "true", "comment": evil})
    assert new.properties["comment"] == evil
    new = ms.alter_table_properties("db", "t", unset=["no_auto_compaction"])
    assert "no_auto_compaction" not in new.properties
    assert ms.get_table("db", "t").properties["comment"] == evil
    ms.open_txn()  # the txns table is still there


def test_partitions_are_added_listed_and_dropped(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec(partition_columns=(("ds", "string"), ("hr", "int"))))
    ms.add_partition("db", "t", "DS=2024-01-01/hr=7")
    ms.add_partition("db", "t", "ds=2024%2F01%2F02/hr=8")
    with pytest.raises(AlreadyExistsError):
        ms.add_partition("db", "t", "ds=2024-01-01/hr=7")
    ms.add_partition("db", "t", "ds=2024-01-01/hr=7", if_not_exists=True)
    assert ms.list_partitions("db", "t") == ["ds=2024%2F01%2F02/hr=8", "ds=2024-01-01/hr=7"]
    ms.drop_partition("db", "t", "ds=2024-01-01/hr=7")
    assert ms.list_partitions("db", "t") == ["ds=2024%2F01%2F02/hr=8"]
    with pytest.raises(NoSuchObjectError):
        ms.drop_partition("db", "t", "ds=2024-01-01/hr=7")


@pytest.mark.parametrize(
    "bad",
    [
        "ds=1",
        "hr=1/ds=2",
        "ds=1/hr=2/x=3",
        "ds=a/b/hr=1",
        "ds=a:b/hr=1",
        "ds=/hr=1",
        "ds=%zz/hr=1",
        "ds",
        "ds=1/ds=2",
    ],
)
def test_partition_names_must_match_the_table_and_be_escaped(ms: Metastore, bad: str) -> None:
    ms.create_database("db")
    ms.create_table(spec(partition_columns=(("ds", "string"), ("hr", "int"))))
    with pytest.raises(InvalidNameError):
        ms.add_partition("db", "t", bad)


def test_unpartitioned_table_has_no_partitions(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec())
    with pytest.raises(MetastoreError, match="not partitioned"):
        ms.add_partition("db", "t", "ds=1")


def test_dropped_and_recreated_table_starts_write_ids_at_one(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec())
    txn = ms.open_txn()
    assert ms.allocate_write_id(txn, "db", "t") == 1
    ms.commit_txn(txn)
    ms.drop_table("db", "t")
    ms.create_table(spec())
    txn = ms.open_txn()
    assert ms.allocate_write_id(txn, "db", "t") == 1
    assert str(ms.valid_write_ids(None, "db", "t")) == "db.t:1:1:1:"


# --------------------------------------------------------------------------- issue 13, smaller items


def test_the_metastore_database_name_is_reserved(ms: Metastore) -> None:
    with pytest.raises(InvalidNameError, match="reserved"):
        ms.create_database("_metastore")
    with pytest.raises(InvalidNameError, match="reserved"):
        ms.create_database("_METASTORE", location="/elsewhere/m.db")
    assert "_metastore" not in ms.list_databases()


@pytest.mark.parametrize("location", ["rel/db", "./db", "db.db", ""])
def test_a_database_location_must_be_absolute(ms: Metastore, location: str) -> None:
    with pytest.raises(InvalidNameError, match="absolute path or a URI"):
        ms.create_database("db", location=location)
    ms.create_database("db", location="/abs/db.db")
    ms.create_database("db2", location="s3://bucket/db2.db")
    assert ms.get_database("db").location == "/abs/db.db"


@pytest.mark.parametrize("buckets", [0, -1, 4097, 100_000])
def test_bucket_counts_outside_1_to_4096_are_refused_at_create(ms: Metastore, buckets: int) -> None:
    ms.create_database("db")
    with pytest.raises(InvalidBucketError):
        ms.create_table(spec(bucket_columns=("id",), num_buckets=buckets))
    ms.create_table(spec(bucket_columns=("id",), num_buckets=4096))
    assert ms.get_table("db", "t").num_buckets == 4096


def test_a_partition_directory_name_longer_than_the_file_system_allows(ms: Metastore) -> None:
    ms.create_database("db")
    ms.create_table(spec(partition_columns=(("ds", "string"),)))
    with pytest.raises(InvalidNameError, match="255"):
        ms.add_partition("db", "t", "ds=" + "x" * 253)
    ms.add_partition("db", "t", "ds=" + "x" * 252)  # 255 bytes: fits
    with pytest.raises(InvalidNameError, match="255"):
        ms.add_partition("db", "t", "ds=" + "é" * 127)  # 257 bytes in UTF-8


def test_an_aborted_txns_partitions_go_unless_another_txn_wrote_there(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    rolled_back, other = ms.open_txn(), ms.open_txn()
    for name in ("p=a", "p=b", "p=c"):
        assert ms.add_partition("db", "t", name, if_not_exists=True)
    assert not ms.add_partition("db", "t", "p=a", if_not_exists=True)  # exists now
    ms.add_write_components(rolled_back, "db", "t", ["p=a", "p=b", "p=c"], "insert")
    ms.add_write_components(other, "db", "t", ["p=b"], "insert")  # another writer's rows
    committed = ms.open_txn()
    ms.add_write_components(committed, "db", "t", ["p=c"], "insert")
    ms.commit_txn(committed)
    ms.abort_txn(rolled_back)
    assert ms.drop_partitions_left_by(rolled_back, "db", "t", ["p=a", "p=b", "p=c"]) == ["p=a"]
    assert ms.list_partitions("db", "t") == ["p=b", "p=c"]
