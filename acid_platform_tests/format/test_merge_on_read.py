"""Merge-on-read cases the model test does not reach: streaming deltas spanning several write
ids, `_flush_length` truncation, projection, empty tables, added columns, bases."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform.errors import AcidSchemaError, FlushLengthError, MissingDirectoryError
from acid_platform.format import (
    EventWriter,
    ValidWriteIdList,
    acid_state,
    base_dir_name,
    bucket_file_name,
    delete_delta_dir_name,
    delete_events,
    delta_dir_name,
    encode_bucket,
    flush_length_file_name,
    insert_events,
    read_acid,
    write_acid_version_file,
)
from acid_platform.format.merge_on_read import ReadStats

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
B0 = encode_bucket(0)
ALL = 9223372036854775807


def _rows(keys: list[int]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array([f"v{k}" for k in keys])})


def _write(path: Path, events: pa.Table, schema: pa.Schema = SCHEMA) -> None:
    write_acid_version_file(path.parent)
    with EventWriter(path, schema) as w:
        w.write(events)


def _streaming_batch(tmp_path: Path) -> Path:
    """delta_1_3: one file holding the rows of write ids 1, 2 and 3 (a transaction batch)."""
    f = tmp_path / "t" / delta_dir_name(1, 3) / bucket_file_name(0)
    events = pa.concat_tables(
        [insert_events(_rows([10 * w, 10 * w + 1]), w, B0) for w in (1, 2, 3)]
    )
    _write(f, events)
    return f


def test_streaming_delta_drops_rows_of_aborted_and_open_write_ids(tmp_path: Path) -> None:
    _streaming_batch(tmp_path)
    t = tmp_path / "t"
    assert read_acid(t, ValidWriteIdList.parse(f"db.t:3:{ALL}::")).column("k").to_pylist() == [
        10,
        11,
        20,
        21,
        30,
        31,
    ]
    # write id 2 aborted: its rows are in the file but invisible
    assert read_acid(t, ValidWriteIdList.parse(f"db.t:3:{ALL}::2")).column("k").to_pylist() == [
        10,
        11,
        30,
        31,
    ]
    # write id 3 still open
    assert read_acid(t, ValidWriteIdList.parse("db.t:3:3:3:")).column("k").to_pylist() == [
        10,
        11,
        20,
        21,
    ]
    # snapshot below the batch's end
    assert read_acid(t, ValidWriteIdList.parse(f"db.t:1:{ALL}::")).column("k").to_pylist() == [
        10,
        11,
    ]


def test_flush_length_cuts_a_streaming_file(tmp_path: Path) -> None:
    f = _streaming_batch(tmp_path)
    committed = f.stat().st_size
    with open(f, "ab") as fh:  # bytes of a batch still being written
        fh.write(b"\x00garbage of an unfinished stripe" * 10)
    side = f.parent / flush_length_file_name(f.name)
    side.write_bytes(committed.to_bytes(8, "big"))
    t = tmp_path / "t"
    assert read_acid(t, ValidWriteIdList.parse(f"db.t:3:{ALL}::")).num_rows == 6
    side.write_bytes(b"")
    with pytest.raises(FlushLengthError) as err:
        read_acid(t, ValidWriteIdList.parse(f"db.t:3:{ALL}::"))
    assert str(side) in str(err.value)


def test_projection_and_empty_projection(tmp_path: Path) -> None:
    _write(
        tmp_path / "t" / delta_dir_name(1, 1, 0) / bucket_file_name(0),
        insert_events(_rows([1, 2, 3]), 1, B0),
    )
    _write(
        tmp_path / "t" / delete_delta_dir_name(2, 2, 0) / bucket_file_name(0),
        delete_events([1], [B0], [1], 2, SCHEMA),
    )
    w = ValidWriteIdList.parse(f"db.t:2:{ALL}::")
    assert read_acid(tmp_path / "t", w, columns=["v"]).to_pydict() == {"v": ["v1", "v3"]}
    assert read_acid(tmp_path / "t", w, columns=[]).num_rows == 2  # COUNT(*)
    with pytest.raises(AcidSchemaError, match="nope"):
        read_acid(tmp_path / "t", w, columns=["nope"])


def test_empty_table_reads_empty_with_schema(tmp_path: Path) -> None:
    w = ValidWriteIdList.parse(f"db.t:0:{ALL}::")
    (tmp_path / "t").mkdir()
    out = read_acid(tmp_path / "t", w, schema=SCHEMA, with_row_id=True)
    assert out.num_rows == 0 and out.schema.names == ["row__id", "k", "v"]


@pytest.mark.parametrize("schema", [SCHEMA, None], ids=["with-schema", "no-schema"])
def test_missing_directory_is_a_typed_error_naming_it(tmp_path: Path, schema: object) -> None:
    w = ValidWriteIdList.parse(f"db.t:0:{ALL}::")
    missing = tmp_path / "missing"
    with pytest.raises(MissingDirectoryError, match="missing: the directory does not exist"):
        read_acid(missing, w, columns=["k"], schema=schema)  # type: ignore[arg-type]


def test_a_given_state_is_read_without_listing_again(tmp_path: Path) -> None:
    _write(
        tmp_path / "t" / delta_dir_name(1, 1, 0) / bucket_file_name(0),
        insert_events(_rows([1, 2]), 1, B0),
    )
    w = ValidWriteIdList.parse(f"db.t:1:{ALL}::")
    state = acid_state(tmp_path / "t", w)
    _write(  # written after the selection: the given state does not hold it
        tmp_path / "t" / delta_dir_name(2, 2, 0) / bucket_file_name(0),
        insert_events(_rows([3]), 2, B0),
    )
    w2 = ValidWriteIdList.parse(f"db.t:2:{ALL}::")
    assert read_acid(tmp_path / "t", w2, state=state).column("k").to_pylist() == [1, 2]
    assert read_acid(tmp_path / "t", w2).column("k").to_pylist() == [1, 2, 3]


def test_column_added_after_older_files_reads_null(tmp_path: Path) -> None:
    _write(
        tmp_path / "t" / delta_dir_name(1, 1, 0) / bucket_file_name(0),
        insert_events(_rows([1]), 1, B0),
    )
    wider = SCHEMA.append(pa.field("extra", pa.int32()))
    newer = _rows([2]).append_column("extra", pa.array([7], pa.int32()))
    _write(
        tmp_path / "t" / delta_dir_name(2, 2, 0) / bucket_file_name(0),
        insert_events(newer, 2, B0),
        wider,
    )
    out = read_acid(tmp_path / "t", ValidWriteIdList.parse(f"db.t:2:{ALL}::"), schema=wider)
    assert out.to_pylist() == [{"k": 1, "v": "v1", "extra": None}, {"k": 2, "v": "v2", "extra": 7}]


def test_insert_overwrite_base_hides_older_deltas(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _write(t / delta_dir_name(1, 1, 0) / bucket_file_name(0), insert_events(_rows([1, 2]), 1, B0))
    _write(t / base_dir_name(2) / bucket_file_name(0), insert_events(_rows([5]), 2, B0))
    _write(t / delta_dir_name(3, 3, 0) / bucket_file_name(0), insert_events(_rows([6]), 3, B0))
    assert read_acid(t, ValidWriteIdList.parse(f"db.t:3:{ALL}::")).column("k").to_pylist() == [5, 6]
    # the overwrite is not committed for this reader: the old rows are what it sees
    assert read_acid(t, ValidWriteIdList.parse("db.t:3:2:2:")).column("k").to_pylist() == [1, 2, 6]


def test_delete_set_is_compact(tmp_path: Path) -> None:
    t = tmp_path / "t"
    n = 50_000
    _write(
        t / delta_dir_name(1, 1, 0) / bucket_file_name(0),
        insert_events(_rows(list(range(n))), 1, B0),
    )
    _write(
        t / delete_delta_dir_name(2, 2, 0) / bucket_file_name(0),
        delete_events([1] * (n // 2), [B0] * (n // 2), list(range(0, n, 2)), 2, SCHEMA),
    )
    stats = ReadStats()
    out = read_acid(t, ValidWriteIdList.parse(f"db.t:2:{ALL}::"), columns=["k"], stats=stats)
    assert out.column("k").to_pylist() == list(range(1, n, 2))
    assert stats.delete_events == n // 2
    assert stats.delete_set_bytes <= 24 * (n // 2)
