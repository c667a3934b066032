"""Partitioned and bucketed tables: directory names, bucket files, INSERT OVERWRITE bases."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.orc as po
import pytest

from acid_platform import Warehouse
from acid_platform.format import bucket_for, decode_bucket
from acid_platform_tests.helpers import ACID_DIR_PREFIXES, acid_dirs, events, warehouse_fixture
from acid_platform_tests.store_path import StorePath
from acid_platform_tests.table.conftest import rows_of

SALES = [("id", "int"), ("amount", "bigint"), ("note", "string")]

#: Directory and file layout on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


def _names(d: StorePath) -> list[str]:
    return [p.name for p in d.iterdir()]


def test_bucket_files_follow_hive_hash(wh: Warehouse) -> None:
    t = wh.create_table("b", [("id", "int"), ("v", "string")], bucket_columns=["id"], num_buckets=4)
    ids = list(range(20))
    t.insert([{"id": i, "v": str(i)} for i in ids])
    d = StorePath(t.spec.location) / "delta_0000001_0000001_0000"
    files = [p for p in d.iterdir() if p.name.startswith("bucket_")]
    assert len(files) == 4
    for f in files:
        bucket = int(f.name.split("_")[1])
        evs = events(f)
        assert evs, f
        assert [e["rowId"] for e in evs] == list(range(len(evs)))  # row ids from 0 per file
        for e in evs:
            assert decode_bucket(e["bucket"]) == (bucket, 0)
            assert bucket_for([e["row"]["id"]], ["int"], 4) == bucket
    assert (
        t.spec.properties["bucketing_version"] == "2"
        and t.spec.properties["transactional"] == "true"
    )
    scanned = t.scan(with_row_id=True).to_arrow().to_pylist()
    assert sorted(r["id"] for r in scanned) == ids
    for r in scanned:
        assert decode_bucket(r["row__id"]["bucketid"])[0] == bucket_for([r["id"]], ["int"], 4)


def test_known_bucket_of_hive_example(wh: Warehouse) -> None:
    # Hive: with 2 buckets (bucketing_version 2), a=0 and a=1 both land in bucket 1.
    t = wh.create_table(
        "nonacid_like", [("a", "int"), ("b", "int")], bucket_columns=["a"], num_buckets=2
    )
    t.insert([{"a": 0, "b": 1}, {"a": 1, "b": 2}])
    assert _names(StorePath(t.spec.location) / "delta_0000001_0000001_0000") == [
        "_orc_acid_version",
        "bucket_00001",
    ]


def test_partition_dirs_dynamic_and_static_with_escaping_and_nulls(wh: Warehouse) -> None:
    t = wh.create_table("sales", SALES, partition_columns=[("ds", "string"), ("hr", "int")])
    t.insert(
        [
            {"id": 1, "amount": 10, "note": "a", "ds": "2024-01-01", "hr": 1},
            {"id": 2, "amount": 20, "note": "b", "ds": "2024/01/02", "hr": 2},
            {"id": 3, "amount": 30, "note": "c", "ds": None, "hr": 3},
        ]
    )
    t.insert([{"id": 4, "amount": 40, "note": "d"}], partition={"ds": "x=y", "hr": 5})
    root = StorePath(t.spec.location)
    assert _names(root) == [
        "ds=2024%2F01%2F02",
        "ds=2024-01-01",
        "ds=__HIVE_DEFAULT_PARTITION__",
        "ds=x%3Dy",
    ]
    assert acid_dirs(root / "ds=2024%2F01%2F02" / "hr=2") == ["delta_0000001_0000001_0000"]
    assert acid_dirs(root / "ds=x%3Dy" / "hr=5") == ["delta_0000002_0000002_0000"]
    # partition columns are not in the ORC row struct
    (e,) = events(root / "ds=2024-01-01" / "hr=1" / "delta_0000001_0000001_0000" / "bucket_00000")
    assert e["row"] == {"id": 1, "amount": 10, "note": "a"}
    assert t.schema.names == ["id", "amount", "note", "ds", "hr"]
    assert rows_of(t) == [
        (1, 10, "a", "2024-01-01", 1),
        (2, 20, "b", "2024/01/02", 2),
        (3, 30, "c", None, 3),
        (4, 40, "d", "x=y", 5),
    ]
    assert sorted(wh.metastore.list_partitions("default", "sales")) == [
        "ds=2024%2F01%2F02/hr=2",
        "ds=2024-01-01/hr=1",
        "ds=__HIVE_DEFAULT_PARTITION__/hr=3",
        "ds=x%3Dy/hr=5",
    ]
    assert [
        r["id"] for r in t.scan(where="ds = '2024/01/02' OR ds IS NULL").to_arrow().to_pylist()
    ] in (
        [2, 3],
        [3, 2],
    )


def test_typed_partition_columns_round_trip(wh: Warehouse) -> None:
    t = wh.create_table(
        "ev", [("id", "int")], partition_columns=[("day", "date"), ("ok", "boolean")]
    )
    t.insert(
        [
            {"id": 1, "day": dt.date(2024, 3, 1), "ok": True},
            {"id": 2, "day": dt.date(2024, 3, 2), "ok": False},
        ]
    )
    root = StorePath(t.spec.location)
    assert _names(root) == ["day=2024-03-01", "day=2024-03-02"]
    assert _names(root / "day=2024-03-01") == ["ok=true"]
    got = t.scan(where="day > '2024-03-01'").to_arrow()
    assert got.schema.field("day").type == pa.date32()
    assert got.to_pylist() == [{"id": 2, "day": dt.date(2024, 3, 2), "ok": False}]


def test_update_and_delete_on_partitioned_bucketed_table(wh: Warehouse) -> None:
    t = wh.create_table(
        "pb", SALES, partition_columns=[("ds", "string")], bucket_columns=["id"], num_buckets=3
    )
    t.insert(
        [{"id": i, "amount": i * 10, "note": "n", "ds": "d1" if i % 2 else "d2"} for i in range(10)]
    )
    assert t.update({"amount": "amount + 1"}, "ds = 'd1' AND id > 4").rows_updated == 3
    assert t.delete("id IN (0, 1)").rows_deleted == 2
    root = StorePath(t.spec.location)
    assert acid_dirs(root / "ds=d1") == [
        "delete_delta_0000002_0000002_0000",
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert acid_dirs(root / "ds=d2") == [
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
    ]
    # each delete event sits in the bucket file of the row it deletes
    for part in ("ds=d1", "ds=d2"):
        dd = root / part / "delete_delta_0000003_0000003_0000"
        files = [f for f in dd.iterdir() if f.name.startswith("bucket_")]
        assert files
        for f in files:
            for e in events(f):
                assert decode_bucket(e["bucket"])[0] == int(f.name.split("_")[1])
    assert rows_of(t, ["id", "amount", "ds"]) == [
        (2, 20, "d2"),
        (3, 30, "d1"),
        (4, 40, "d2"),
        (5, 51, "d1"),
        (6, 60, "d2"),
        (7, 71, "d1"),
        (8, 80, "d2"),
        (9, 91, "d1"),
    ]


def test_insert_overwrite_writes_a_base_per_partition(wh: Warehouse) -> None:
    t = wh.create_table("ow", SALES, partition_columns=[("ds", "string")])
    t.insert(
        [
            {"id": 1, "amount": 1, "note": "a", "ds": "d1"},
            {"id": 2, "amount": 2, "note": "b", "ds": "d2"},
        ]
    )
    t.delete("id = 1")
    out = t.insert([{"id": 3, "amount": 3, "note": "c", "ds": "d1"}], overwrite=True)
    root = StorePath(t.spec.location)
    assert acid_dirs(root / "ds=d1") == [
        "base_0000003",
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
    ]
    assert acid_dirs(root / "ds=d2") == ["delta_0000001_0000001_0000"]
    assert out.dirs_written == ((root / "ds=d1" / "base_0000003").path,)
    assert rows_of(t, ["id", "ds"]) == [(2, "d2"), (3, "d1")]
    t.insert([{"id": 4, "amount": 4, "note": "d", "ds": "d1"}])
    assert rows_of(t, ["id", "ds"]) == [(2, "d2"), (3, "d1"), (4, "d1")]


def test_empty_insert_overwrite_truncates_unpartitioned_table(wh: Warehouse) -> None:
    t = wh.create_table("u", [("id", "int")])
    t.insert([{"id": 1}])
    t.insert(pa.table({"id": pa.array([], pa.int32())}), overwrite=True)
    assert acid_dirs(t.spec.location) == ["base_0000002", "delta_0000001_0000001_0000"]
    assert t.scan().to_arrow().num_rows == 0


def test_orc_compress_property_and_other_databases(wh: Warehouse) -> None:
    wh.create_database("sales")
    t = wh.create_table("sales.t", [("id", "int")], properties={"orc.compress": "SNAPPY"})
    assert StorePath(t.spec.location) == StorePath(wh.root) / "sales.db" / "t"
    t.insert([{"id": 1}])
    f = po.ORCFile((StorePath(t.spec.location) / "delta_0000001_0000001_0000/bucket_00000").open())
    assert f.compression == "SNAPPY"
    assert wh.list_tables("sales") == ["t"]
    wh.drop_table("sales.t")
    assert not StorePath(t.spec.location).exists()
    with pytest.raises(KeyError):
        wh.table("sales.t")


def test_every_written_directory_has_orc_acid_version(wh: Warehouse) -> None:
    t = wh.create_table(
        "v", SALES, partition_columns=[("ds", "string")], bucket_columns=["id"], num_buckets=2
    )
    t.insert([{"id": i, "amount": i, "note": "n", "ds": f"d{i % 3}"} for i in range(9)])
    t.update({"note": "concat(note, 'x')"}, "id < 5")
    t.merge(
        [{"id": 1, "amount": 0}, {"id": 20, "amount": 5}], "t.id = s.id"
    ).when_matched_delete().when_not_matched_insert(
        {"id": "s.id", "amount": "s.amount", "ds": "'d9'"}
    ).execute()
    t.insert([{"id": 30, "amount": 1, "note": "o", "ds": "d0"}], overwrite=True)
    root = StorePath(t.spec.location)
    dirs = {
        rel.rsplit("/", 1)[0]
        for rel in root.files()
        if rel.rsplit("/", 2)[-2].startswith(ACID_DIR_PREFIXES)
    }  # every directory a file was written into (an object store has no empty ones)
    assert len(dirs) >= 10
    for d in dirs:
        assert (root / d / "_orc_acid_version").read_bytes() == b"2", d
