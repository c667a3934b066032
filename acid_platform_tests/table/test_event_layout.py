"""The one event layout: names, ``_orc_acid_version``, bucket split, codec."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.format import (
    DEFAULT_COMPRESSION,
    ORC_ACID_VERSION_FILE,
    bucket_for,
    compression_of,
    encode_bucket,
    insert_events,
)
from acid_platform.format.orc_tail import parse_tail
from acid_platform.format.writer import DEFAULT_STRIPE_SIZE
from acid_platform.metastore import TableSpec
from acid_platform.table.event_layout import (
    DELETE,
    INSERT,
    EventLayout,
    FileInfo,
    split_row_ids,
    split_rows,
)
from acid_platform.table.writes import WriteMetrics

COLS = (("id", "int"), ("v", "string"))
ROWS = pa.table({"id": pa.array(range(40), pa.int32()), "v": [f"v{i}" for i in range(40)]})


def spec(**kw: object) -> TableSpec:
    return TableSpec("default", "t", COLS, **kw)  # type: ignore[arg-type]


def layout(**kw: object) -> EventLayout:
    return EventLayout.of(spec(**kw), pafs.LocalFileSystem())


def test_statement_and_compactor_directory_names() -> None:
    lay = layout()
    assert lay.statement_dir("/wh/t", INSERT, 3, 2) == "/wh/t/delta_0000003_0000003_0002"
    assert lay.statement_dir("/wh/t", DELETE, 3, 2) == "/wh/t/delete_delta_0000003_0000003_0002"
    assert lay.statement_dir("/wh/t", INSERT, 3, 2, overwrite=True) == "/wh/t/base_0000003"
    # an INSERT OVERWRITE's delete events (none in practice) would still be a delete delta
    assert lay.statement_dir("/wh/t", DELETE, 3, 0, overwrite=True).endswith(
        "/delete_delta_0000003_0000003_0000"
    )
    assert lay.compacted_dir("/wh/t", INSERT, 1, 4, 19) == "/wh/t/delta_0000001_0000004_v0000019"
    assert (
        lay.compacted_dir("/wh/t", DELETE, 1, 4, 19)
        == "/wh/t/delete_delta_0000001_0000004_v0000019"
    )
    assert lay.compacted_dir("/wh/t", INSERT, 0, 4, 19, major=True) == "/wh/t/base_0000004_v0000019"
    assert lay.bucket_path("/wh/t/base_0000004", 7) == "/wh/t/base_0000004/bucket_00007"
    with pytest.raises(ValueError, match="event kind"):
        lay.statement_dir("/wh/t", "update", 3, 0)
    with pytest.raises(ValueError, match="major"):
        lay.compacted_dir("/wh/t", DELETE, 1, 4, 19, major=True)


def test_created_directory_holds_the_acid_version_file(tmp_path: Path) -> None:
    lay = layout()
    directory = lay.statement_dir(str(tmp_path / "ds=1"), INSERT, 1, 0)
    assert lay.create_dir(directory) == directory
    assert (Path(directory) / ORC_ACID_VERSION_FILE).read_bytes() == b"2"
    lay.create_dir(directory)  # again (another task of the statement): still one byte
    assert sorted(p.name for p in Path(directory).iterdir()) == [ORC_ACID_VERSION_FILE]


def test_bucketed_rows_split_by_hive_hash() -> None:
    s = spec(bucket_columns=("id",), num_buckets=4)
    groups = split_rows(s, ROWS, (9,))  # writer ids do not matter for a bucketed table
    assert [b for b, _ in groups] == sorted({b for b, _ in groups})
    assert sum(part.num_rows for _, part in groups) == ROWS.num_rows
    for bucket, part in groups:
        for i in part.column("id").to_pylist():
            assert bucket_for([i], ["int"], 4, version=2) == bucket
    v1 = split_rows(spec(bucket_columns=("id",), num_buckets=4, bucketing_version=1), ROWS)
    assert {b: p.column("id").to_pylist() for b, p in v1}[1] == list(range(1, 40, 4))


def test_unbucketed_rows_go_to_their_writers() -> None:
    s = spec()
    [(writer, part)] = split_rows(s, ROWS, (12,))
    assert writer == 12 and part.equals(ROWS)
    groups = split_rows(s, ROWS, range(3))
    assert [w for w, _ in groups] == [0, 1, 2]
    assert pa.concat_tables([p for _, p in groups]).equals(ROWS)  # contiguous, in order
    assert [p.num_rows for _, p in groups] == [13, 13, 14]
    assert split_rows(s, ROWS.slice(0, 0)) == []


def test_row_ids_split_by_the_bucket_they_live_in() -> None:
    ids = pa.table(
        {
            "writeid": pa.array([1, 1, 2, 1], pa.int64()),
            "bucketid": pa.array(
                [encode_bucket(3, 1), encode_bucket(0), encode_bucket(3, 0), encode_bucket(0, 2)],
                pa.int32(),
            ),
            "rowid": pa.array([5, 6, 7, 8], pa.int64()),
        }
    )
    groups = split_row_ids(ids)
    assert [b for b, _ in groups] == [0, 3]
    (_, zero), (_, three) = groups
    assert zero.row_ids.tolist() == [6, 8] and zero.original_write_ids.tolist() == [1, 1]
    assert three.row_ids.tolist() == [5, 7]
    assert three.bucket_properties.tolist() == [encode_bucket(3, 1), encode_bucket(3, 0)]


def test_codec_default_and_override(tmp_path: Path) -> None:
    assert DEFAULT_COMPRESSION == "ZLIB"
    assert compression_of({}) == DEFAULT_COMPRESSION
    assert compression_of({"orc.compress": "snappy"}) == "SNAPPY"
    assert layout().compression == "ZLIB"
    lay = layout(properties={"orc.compress": "zstd"})
    assert (lay.compression, lay.stripe_size) == ("ZSTD", DEFAULT_STRIPE_SIZE)
    for codec, each in (("ZLIB", layout()), ("ZSTD", lay)):
        path = each.bucket_path(each.create_dir(str(tmp_path / codec / "delta_1_1_0")), 0)
        with each.open_file(path) as w:
            w.write(insert_events(ROWS, 1, encode_bucket(0)))
        assert parse_tail(Path(path).read_bytes()).compression == codec


def test_layout_pickles_for_spark_executors() -> None:
    lay = layout(properties={"orc.compress": "SNAPPY"})
    again = pickle.loads(pickle.dumps(lay))
    assert again.compression == "SNAPPY" and again.row_schema.equals(lay.row_schema)


def test_write_metrics_from_files() -> None:
    files = [
        FileInfo("/t/delete_delta_2_2_0/bucket_00000", "", 0, 0, DELETE, 3, 100),
        FileInfo("/t/delta_2_2_0/bucket_00000", "", 0, 0, INSERT, 5, 200),
        FileInfo("/t/delta_2_2_0/bucket_00001", "", 0, 1, INSERT, 2, 50),
    ]
    m = WriteMetrics.from_files(files, ["/t/base_2"])
    assert (m.rows_inserted, m.rows_deleted, m.bytes_written) == (7, 3, 350)
    assert m.dirs == ["/t/base_2", "/t/delete_delta_2_2_0", "/t/delta_2_2_0"]
    assert m.files == [f.path for f in files]
    assert WriteMetrics.from_files([]) == WriteMetrics()
