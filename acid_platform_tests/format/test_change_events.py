"""Change events of one directory (``format.change_events``): Trino's Hive-written nation table
(an insert, then two DELETEs whose deleted rows are looked up by ROW__ID), windows and their
bounds, what a base leaves, a dangling delete, an aborted write id inside a wide delta, a delete
of a row of an original (pre-ACID) file."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.errors import NotEnoughHistoryError
from acid_platform.format import (
    EventWriter,
    OrcDataFile,
    ValidWriteIdList,
    acid_state,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    insert_events,
    write_acid_version_file,
)
from acid_platform.format.change_events import (
    WriteIdWindow,
    change_schema,
    history_start,
    read_change_events,
)
from acid_platform_tests.helpers import copy_nation_table

FS = pafs.LocalFileSystem()
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
B0 = encode_bucket(0)


def _read(path: Path, snapshot: str, after: int, upto: int, schema: pa.Schema) -> pa.Table:
    ids = ValidWriteIdList.parse(snapshot)
    state = acid_state(str(path), ids)
    tables = list(read_change_events(state, FS, ids, WriteIdWindow(after, upto), schema))
    return pa.concat_tables([change_schema(schema).empty_table(), *tables])


def _summary(table: pa.Table) -> Counter[tuple[int, bool]]:
    return Counter(zip(table["_write_id"].to_pylist(), table["_deleted"].to_pylist(), strict=True))


@pytest.fixture()
def nation(tmp_path: Path) -> tuple[Path, pa.Schema]:
    path = copy_nation_table(tmp_path / "nation")
    with OrcDataFile(FS, str(next(path.glob("delta_*/bucket_00000"))), expect_acid=True) as f:
        return path, f.row_schema


def test_hive_written_deletes_carry_the_rows_they_deleted(nation: tuple[Path, pa.Schema]) -> None:
    path, schema = nation
    snapshot = "db.nation:4:9223372036854775807::"
    everything = _read(path, snapshot, 0, 4, schema)
    assert _summary(everything) == {(2, False): 25000, (3, True): 1000, (4, True): 1000}
    deleted = everything.filter(everything["_deleted"])
    # Trino's DELETEs removed nation keys 5 (write id 3) and 19 (write id 4)
    assert set(zip(deleted["_write_id"].to_pylist(), deleted["n_nationkey"].to_pylist(), strict=True)) == {(3, 5), (4, 19)}  # fmt: skip
    assert deleted["n_name"].null_count == 0
    assert all(r["writeid"] == 2 for r in deleted["row__id"].to_pylist())
    assert _summary(_read(path, snapshot, 2, 4, schema)) == {(3, True): 1000, (4, True): 1000}
    assert _summary(_read(path, snapshot, 3, 4, schema)) == {(4, True): 1000}
    assert _summary(_read(path, snapshot, 0, 3, schema)) == {(2, False): 25000, (3, True): 1000}
    assert _read(path, snapshot, 4, 4, schema).num_rows == 0
    # a snapshot that sees write id 4 as open knows nothing of its deletes
    assert _summary(_read(path, "db.nation:4:4:4:", 2, 4, schema)) == {(3, True): 1000}


def test_a_window_is_after_exclusive_upto_inclusive() -> None:
    w = WriteIdWindow(2, 5)
    assert w.meets(1, 3) and w.meets(5, 9) and not w.meets(1, 2) and not w.meets(6, 7)
    for bad in [(-1, 3), (4, 3)]:
        with pytest.raises(ValueError):
            WriteIdWindow(*bad)


def _write(d: Path, events: pa.Table) -> None:
    write_acid_version_file(d)
    with EventWriter(d / bucket_file_name(0), SCHEMA) as w:
        w.write(events)


def _rows(*keys: int) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"v{k}" for k in keys]})


def test_below_a_base_there_is_no_history_and_above_it_deletes_find_rows_in_it(
    tmp_path: Path,
) -> None:
    _write(tmp_path / base_dir_name(3), insert_events(_rows(1, 2), 1, B0))  # rows of write id 1
    _write(tmp_path / delete_delta_dir_name(4, 4, 0), delete_events([1], [B0], [1], 4, SCHEMA))
    _write(tmp_path / delta_dir_name(4, 4, 0), insert_events(_rows(20), 4, B0))
    snapshot = "db.t:4:9223372036854775807::"
    assert history_start(acid_state(str(tmp_path), ValidWriteIdList.parse(snapshot))) == 3
    with pytest.raises(NotEnoughHistoryError):
        _read(tmp_path, snapshot, 2, 4, SCHEMA)
    got = _read(tmp_path, snapshot, 3, 4, SCHEMA).select(["_write_id", "_deleted", "k", "v"])
    assert got.to_pylist() == [
        {"_write_id": 4, "_deleted": False, "k": 20, "v": "v20"},
        {"_write_id": 4, "_deleted": True, "k": 2, "v": "v2"},
    ]


def test_a_dangling_delete_keeps_null_values(tmp_path: Path) -> None:
    _write(tmp_path / delta_dir_name(1, 1, 0), insert_events(_rows(1), 1, B0))
    _write(tmp_path / delete_delta_dir_name(2, 2, 0), delete_events([1], [B0], [7], 2, SCHEMA))
    got = _read(tmp_path, "db.t:2:9223372036854775807::", 1, 2, SCHEMA).to_pylist()
    assert got == [
        {
            "row__id": {"writeid": 1, "bucketid": B0, "rowid": 7},
            "_write_id": 2,
            "_deleted": True,
            "k": None,
            "v": None,
        }
    ]


def test_rows_of_an_aborted_write_id_inside_a_wide_delta_are_no_changes(tmp_path: Path) -> None:
    events = pa.concat_tables(
        [insert_events(_rows(1), 1, B0), insert_events(_rows(2), 2, B0), insert_events(_rows(3), 3, B0)]
    )  # fmt: skip
    _write(tmp_path / delta_dir_name(1, 3), events)  # a streaming-style delta over 1..3
    got = _read(tmp_path, "db.t:3:9223372036854775807::2", 0, 3, SCHEMA)
    assert got["k"].to_pylist() == [1, 3] and got["_write_id"].to_pylist() == [1, 3]
    assert _read(tmp_path, "db.t:3:9223372036854775807::2", 1, 2, SCHEMA).num_rows == 0


def test_a_delete_of_an_original_files_row_finds_it_by_its_synthetic_row_id(
    tmp_path: Path, hive_fixtures: Path
) -> None:
    t = tmp_path / "t"
    shutil.copytree(hive_fixtures / "trino/fullacidNationTableWithOriginalFiles", t)
    with OrcDataFile(FS, str(t / "000000_0"), expect_acid=False) as f:
        schema = f.row_schema
    snapshot = "default.nation:10000001:9223372036854775807::"
    got = _read(t, snapshot, 0, 10000001, schema)  # the original rows are history (write id 0)
    assert got.select(
        ["row__id", "_write_id", "_deleted", "n_nationkey", "n_name"]
    ).to_pylist() == [
        {
            "row__id": {"writeid": 0, "bucketid": B0, "rowid": 24},
            "_write_id": 10000001,
            "_deleted": True,
            "n_nationkey": 24,
            "n_name": "UNITED STATES",
        }
    ]
