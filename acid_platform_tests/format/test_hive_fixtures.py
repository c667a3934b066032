"""Conformance: tables written by real Hive read as a Hive or Trino user sees them.

Expected rows come from the fixtures' sources (Trino's TestOrcPageSourceFactory,
TestOrcDeletedRows, TestOriginalFilesUtils; Hive's test_hcube_2 replication dump).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.errors import AcidSchemaError, MissingAcidVersionError
from acid_platform.format import (
    OrcDataFile,
    ValidTxnList,
    ValidWriteIdList,
    acid_state,
    decode_bucket,
    load_delete_set,
    read_acid,
)
from acid_platform_tests.helpers import copy_nation_table

ALL = 9223372036854775807


def _wids(table: str, hwm: int) -> ValidWriteIdList:
    return ValidWriteIdList.parse(f"{table}:{hwm}:{ALL}::")


@pytest.fixture()
def nation_table(tmp_path: Path) -> Path:
    """The 25,000-row nation insert (write id 2) with the two DELETEs of write ids 3 and 4."""
    return copy_nation_table(tmp_path / "nation")


def test_nation_with_two_delete_deltas(nation_table: Path) -> None:
    table = read_acid(nation_table, _wids("default.nation", 4))
    assert table.num_rows == 23_000
    keys = set(table.column("n_nationkey").to_pylist())
    assert 5 not in keys and 19 not in keys and len(keys) == 23
    assert table.schema.names == ["n_nationkey", "n_name", "n_regionkey", "n_comment"]


@pytest.mark.parametrize(
    ("hwm", "rows", "gone"), [(2, 25_000, set()), (3, 24_000, {5}), (4, 23_000, {5, 19})]
)
def test_nation_under_older_snapshots(
    nation_table: Path, hwm: int, rows: int, gone: set[int]
) -> None:
    table = read_acid(nation_table, _wids("default.nation", hwm), columns=["n_nationkey"])
    assert table.num_rows == rows
    assert gone.isdisjoint(table.column("n_nationkey").to_pylist())


def test_nation_delete_open_in_snapshot_is_not_applied(nation_table: Path) -> None:
    # write id 4 still open for this reader: its delete events are invisible
    w = ValidWriteIdList.parse("default.nation:4:4:4:")
    assert read_acid(nation_table, w, columns=["n_nationkey"]).num_rows == 24_000


def test_nation_row_ids_are_hive_row_ids(nation_table: Path) -> None:
    table = read_acid(
        nation_table, _wids("default.nation", 4), columns=["n_nationkey"], with_row_id=True
    )
    ids = table.column("row__id").to_pylist()
    assert ids[0] == {"writeid": 2, "bucketid": 536870912, "rowid": 0}
    assert len({(r["writeid"], r["bucketid"], r["rowid"]) for r in ids}) == 23_000
    # the delete events name exactly the row ids of nation keys 5 and 19 in the insert file
    full = read_acid(
        nation_table, _wids("default.nation", 2), columns=["n_nationkey"], with_row_id=True
    )
    deleted = {r["row__id"]["rowid"] for r in full.to_pylist() if r["n_nationkey"] in (5, 19)}
    assert len(deleted) == 2000


def test_nation_filter_prunes_stripes_and_filters_rows(nation_table: Path) -> None:
    from acid_platform.format.merge_on_read import ReadStats

    stats = ReadStats()
    table = read_acid(
        nation_table, _wids("default.nation", 4), filters=[("n_nationkey", "<", 3)], stats=stats
    )
    assert sorted(set(table.column("n_nationkey").to_pylist())) == [0, 1, 2]
    assert table.num_rows == 3000
    assert stats.stripes_skipped >= 4  # sorted on nationkey: 1 of 5 stripes can hold keys < 3


def test_original_nation_file_with_delete_delta(tmp_path: Path, hive_fixtures: Path) -> None:
    t = tmp_path / "t"
    shutil.copytree(hive_fixtures / "trino/fullacidNationTableWithOriginalFiles", t)
    table = read_acid(t, _wids("default.nation", 10000001), with_row_id=True)
    assert table.num_rows == 24
    assert 24 not in table.column("n_nationkey").to_pylist()  # row id 24 (UNITED STATES) deleted
    first = table.to_pylist()[0]
    assert first["row__id"] == {"writeid": 0, "bucketid": 536870912, "rowid": 0}
    # before the delete's write id is valid all 25 original rows are there
    assert read_acid(t, _wids("default.nation", 10000000)).num_rows == 25


def test_original_files_get_synthetic_row_ids_in_path_order(
    tmp_path: Path, hive_fixtures: Path
) -> None:
    t = tmp_path / "t"
    shutil.copytree(hive_fixtures / "trino/dummy_id_data_orc", t)
    state = acid_state(t, _wids("default.t", 10000001))
    names = [Path(f.path).name for f in state.original_files]
    assert names == ["000000_0", "000001_0", "000002_0", "000002_0_copy_1", "000002_0_copy_2"]
    table = read_acid(t, _wids("default.t", 10000001), with_row_id=True)
    rows = {r["id"]: r["row__id"] for r in table.to_pylist()}
    assert len(rows) == 19  # 20 original rows, (0, bucket 0, rowid 2) deleted
    assert 3 not in rows
    # Trino TestOriginalFilesUtils: bucket 2 has 3 files of 4 rows; 000002_0_copy_2 starts at row id 8
    bucket2 = sorted(
        (r["rowid"], i) for i, r in rows.items() if decode_bucket(r["bucketid"])[0] == 2
    )
    assert [rid for rid, _ in bucket2] == list(range(12))
    assert rows[17]["rowid"] == 8 and rows[20]["rowid"] == 11


def test_fullacid_delete_delta_events(hive_fixtures: Path) -> None:
    root = hive_fixtures / "trino/fullacid_delete_delta_test"
    ds = load_delete_set(
        pafs.LocalFileSystem(),
        [
            str(root / "delete_delta_0000004_0000004_0000/bucket_00000"),
            str(root / "delete_delta_0000007_0000007_0000/bucket_00000"),
        ],
        _wids("default.t", 7),
    )
    import numpy as np

    assert len(ds) == 2
    hit = ds.contains(np.array([2, 6, 2]), np.array([536870912] * 3), np.array([0, 0, 1]))
    assert hit.tolist() == [True, True, False]
    # delete write id 7 not yet valid: its event is ignored
    ds5 = load_delete_set(
        pafs.LocalFileSystem(),
        [str(root / "delete_delta_0000007_0000007_0000/bucket_00000")],
        _wids("default.t", 5),
    )
    assert len(ds5) == 0


def test_acid_version_validation(tmp_path: Path, hive_fixtures: Path) -> None:
    root = hive_fixtures / "trino/acid_version_validation"
    ok = OrcDataFile(pafs.LocalFileSystem(), str(root / "acid_version_hive_3/00000_0"))
    assert ok.acid_version == 2 and ok.num_rows == 1
    t = tmp_path / "t" / "delta_0000001_0000001_0000"
    t.mkdir(parents=True)
    shutil.copy(root / "no_orc_acid_version_in_metadata/00000_0", t / "bucket_00000")
    with pytest.raises(MissingAcidVersionError, match="supported since Hive 3.0"):
        read_acid(tmp_path / "t", _wids("default.t", 1))
    # a plain file read as an original file is fine
    assert (
        OrcDataFile(
            pafs.LocalFileSystem(),
            str(root / "no_orc_acid_version_in_metadata/00000_0"),
            expect_acid=False,
        ).num_rows
        == 4
    )


def test_acid_file_with_its_bucket_in_another_writer(hive_fixtures: Path, tmp_path: Path) -> None:
    # acid_version_hive_3 holds a row of bucket 2 (537001984); placed as bucket_00002 it reads back
    t = tmp_path / "t" / "delta_0000001_0000001_0000"
    t.mkdir(parents=True)
    shutil.copy(
        hive_fixtures / "trino/acid_version_validation/acid_version_hive_3/00000_0",
        t / "bucket_00002",
    )
    table = read_acid(tmp_path / "t", _wids("default.t", 1), with_row_id=True)
    assert table.to_pylist() == [
        {"row__id": {"writeid": 1, "bucketid": 537001984, "rowid": 0}, "a": 10}
    ]


@pytest.mark.parametrize(
    ("table", "expected_rows"),
    [("tbl", 1), ("tbl1", 3), ("tbl2", 2), ("tbl3", 1), ("tbl4", 1), ("tbl5", 1)],
)
def test_hcube_tables_under_replication_snapshots(
    hive_fixtures: Path, table: str, expected_rows: int
) -> None:
    dump = hive_fixtures / "apache-hive/repl_dump/hive/test_hcube_2" / table
    meta = json.loads((dump / "_metadata").read_text())
    w = ValidWriteIdList.parse(meta["repl.valid.writeid.list"])
    txns = ValidTxnList.parse(meta["repl.valid.txnid.list"])
    assert w.table_name == f"test_hcube_2.{table}"
    result = read_acid(dump / "data", w, txns, with_row_id=True)
    assert result.num_rows == expected_rows
    assert result.column("fld").to_pylist() == [1] * expected_rows
    assert sorted(r["writeid"] for r in result.column("row__id").to_pylist()) == list(
        range(1, expected_rows + 1)
    )
    # the warehouse copy of the same table reads the same
    wh = hive_fixtures / "apache-hive/test_hcube_2.db" / table
    assert read_acid(wh, w, txns).equals(result.drop_columns(["row__id"]))


def test_hcube_tbl1_under_an_older_snapshot(hive_fixtures: Path) -> None:
    wh = hive_fixtures / "apache-hive/test_hcube_2.db/tbl1"
    assert read_acid(wh, ValidWriteIdList.parse(f"test_hcube_2.tbl1:2:{ALL}::")).num_rows == 2
    # write id 2 aborted: its delta is skipped
    assert read_acid(wh, ValidWriteIdList.parse(f"test_hcube_2.tbl1:3:{ALL}::2")).num_rows == 2


def test_hcube_partitioned_tbl6(hive_fixtures: Path) -> None:
    dump = hive_fixtures / "apache-hive/repl_dump/hive/test_hcube_2/tbl6"
    meta = json.loads((dump / "_metadata").read_text())
    w = ValidWriteIdList.parse(meta["repl.valid.writeid.list"])
    total = 0
    for part in ("fld1=1", "fld1=2"):
        t = read_acid(dump / part / "data", w)
        assert t.schema.names == ["fld"]  # the partition column is not in `row`
        total += t.num_rows
    assert total == 2


def test_load_data_files_are_plain_rows(hive_fixtures: Path) -> None:
    root = hive_fixtures / "apache-hive/load_data_job_acid"
    rows = []
    for p in sorted(root.iterdir()):
        f = OrcDataFile(pafs.LocalFileSystem(), str(p), expect_acid=False)
        assert not f.is_acid
        rows += pa.Table.from_batches([b for _, b in f.iter_stripes()]).to_pylist()
    assert {r["name"] for r in rows} >= {"Haley"} and len(rows) == 3
    with pytest.raises(AcidSchemaError):
        OrcDataFile(
            pafs.LocalFileSystem(), str(sorted(root.iterdir())[0]), expect_acid=None
        ).row_schema and OrcDataFile(
            pafs.LocalFileSystem(),
            str(hive_fixtures / "trino/acid_version_validation/acid_version_hive_3/00000_0"),
            expect_acid=False,
        )
