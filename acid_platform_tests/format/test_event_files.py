"""The event writer and reader: Hive's schema, footer metadata, order, compression, bad files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyorc
import pytest

from acid_platform.errors import (
    AcidFormatError,
    AcidSchemaError,
    CorruptAcidFileError,
    FlushLengthError,
    MissingAcidVersionError,
)
from acid_platform.format.flush_length import read_flush_length
from acid_platform.format.orc_footer import KIND_VARCHAR, amend_footer, finish_footer
from acid_platform.format.orc_tail import append_user_metadata, parse_tail
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.types import event_schema
from acid_platform.format.writer import (
    COMPRESSION,
    EventWriter,
    delete_events,
    insert_events,
    write_acid_version_file,
)

B0 = 536870912  # bucket 0, statement 0

ROWS = pa.table(
    {
        "id": pa.array(np.arange(5000, dtype=np.int32)),
        "name": pa.array([f"n{i}" for i in range(5000)]),
        "salary": pa.array(np.arange(5000, dtype=np.int64) * 10),
    }
)


def _meta(path: Path) -> dict[str, bytes]:
    with open(path, "rb") as fh:
        return dict(pyorc.Reader(fh).user_metadata)


def test_insert_file_has_hive_schema_metadata_and_order(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    with EventWriter(path, ROWS.schema) as w:
        w.write(insert_events(ROWS, write_id=1, bucket_property=B0))
    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh)
        assert str(reader.schema) == (
            "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
            "currentTransaction:bigint,row:struct<id:int,name:string,salary:bigint>>"
        )
    meta = _meta(path)
    assert meta["hive.acid.version"] == b"2"
    assert meta["hive.acid.stats"] == b"5000,0,0"
    assert meta["hive.acid.key.index"] == b"1,536870912,4999;"
    table = po.read_table(path)
    assert table.column("rowId").to_pylist() == list(range(5000))
    assert table.column("row").combine_chunks().field("name").to_pylist()[:2] == ["n0", "n1"]
    assert (
        w.result is not None and w.result.inserts == 5000 and w.result.size == path.stat().st_size
    )


def test_key_index_names_last_key_of_every_stripe(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00003"
    big = pa.table({"x": pa.array(np.random.default_rng(1).random(200_000))})
    with EventWriter(path, big.schema, stripe_size=256 * 1024) as w:
        for off in range(0, 200_000, 30_000):  # several write calls: boundaries need not align
            w.write(insert_events(big.slice(off, 30_000), 7, 537067520, first_row_id=off))
    f = OrcDataFile(pafs.LocalFileSystem(), str(path))
    assert f.num_stripes > 3
    rows = f.stripe_rows()
    ends = np.cumsum(rows) - 1
    assert [(k.original_write_id, k.bucket, k.row_id) for k in f.key_index] == [
        (7, 537067520, int(e)) for e in ends
    ]


def test_delete_events_have_null_row_and_are_sorted(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    with EventWriter(path, ROWS.schema) as w:
        w.write(
            delete_events([3, 1, 1], [B0, B0, B0], [0, 9, 2], write_id=4, row_schema=ROWS.schema)
        )
    out = po.read_table(path).to_pylist()
    assert [(r["originalTransaction"], r["rowId"]) for r in out] == [(1, 2), (1, 9), (3, 0)]
    assert all(
        r["operation"] == 2 and r["currentTransaction"] == 4 and r["row"] is None for r in out
    )
    meta = _meta(path)
    assert meta["hive.acid.stats"] == b"0,0,3"
    assert meta["hive.acid.key.index"] == b"3,536870912,0;"


@pytest.mark.parametrize("codec", sorted(COMPRESSION))
def test_compression_follows_orc_compress(tmp_path: Path, codec: str) -> None:
    path = tmp_path / f"bucket_{codec}"
    with EventWriter(path, ROWS.schema, compression=codec) as w:
        w.write(insert_events(ROWS, 1, B0))
    with open(path, "rb") as fh:
        assert parse_tail(fh.read()).compression == codec
    assert po.read_table(path).num_rows == 5000
    assert _meta(path)["hive.acid.version"] == b"2"


def test_unknown_compression_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(AcidFormatError, match="orc.compress"):
        EventWriter(tmp_path / "b", ROWS.schema, compression="brotli")


def test_out_of_order_events_are_refused_and_file_removed(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    with pytest.raises(AcidFormatError, match="out of order"), EventWriter(path, ROWS.schema) as w:
        w.write(insert_events(ROWS.slice(0, 10), 2, B0, first_row_id=100))
        w.write(insert_events(ROWS.slice(10, 10), 2, B0, first_row_id=0))
    assert not path.exists()


def test_wrong_event_columns_are_a_schema_error(tmp_path: Path) -> None:
    with EventWriter(tmp_path / "b", ROWS.schema) as w, pytest.raises(AcidSchemaError):
        w.write(ROWS)
    with pytest.raises(AcidSchemaError):
        ev = insert_events(pa.table({"id": pa.array(["x"])}), 1, B0)
        with EventWriter(tmp_path / "c", pa.schema([("id", pa.int32())])) as w2:
            w2.write(ev)


def test_acid_version_file_holds_2(tmp_path: Path) -> None:
    write_acid_version_file(tmp_path / "delta_0000001_0000001_0000")
    assert (tmp_path / "delta_0000001_0000001_0000" / "_orc_acid_version").read_bytes() == b"2"


def test_tail_rewrite_keeps_existing_metadata_items() -> None:
    buf = io.BytesIO()
    po.write_table(ROWS, buf, compression="zlib")
    once = append_user_metadata(buf.getvalue(), [("a", b"1")])
    twice = append_user_metadata(once, [("b", b"2")])
    assert parse_tail(twice).user_metadata == {"a": b"1", "b": b"2"}
    assert po.ORCFile(pa.BufferReader(twice)).read().equals(ROWS)


@pytest.mark.parametrize("codec", ["uncompressed", "zlib", "zstd"])
def test_one_pass_footer_is_the_amended_footer_with_the_items(codec: str) -> None:
    """``finish_footer`` (what the writer calls) gives what ``amend_footer`` then
    ``append_user_metadata`` give: the same types, calendar, items and rows."""
    rows = pa.table({"id": pa.array([1, 2], pa.int32()), "c": pa.array(["a", "bb"])})
    buf = io.BytesIO()
    po.write_table(rows, buf, compression=codec, stripe_size=64 << 20)
    data = buf.getvalue()
    types = {2: (KIND_VARCHAR, 7)}
    seen: list[tuple[int, ...]] = []

    def items(stripe_rows: tuple[int, ...]) -> list[tuple[str, bytes]]:
        seen.append(stripe_rows)
        return [("a", b"1"), ("b", b"2")]

    one = finish_footer(data, types, items)
    two = append_user_metadata(amend_footer(data, types), [("a", b"1"), ("b", b"2")])
    assert seen == [tuple(s.number_of_rows for s in parse_tail(data).stripes)] == [(2,)]
    assert parse_tail(one).user_metadata == parse_tail(two).user_metadata == {"a": b"1", "b": b"2"}
    assert po.ORCFile(pa.BufferReader(one)).read().equals(rows)
    for tail in (one, two):
        reader = pyorc.Reader(io.BytesIO(tail))
        assert str(reader.schema) == "struct<id:int,c:varchar(7)>"
        assert reader.user_metadata == {"a": b"1", "b": b"2"}
    with pytest.raises(CorruptAcidFileError):
        finish_footer(data[:-3] + b"XYZ", types, items)


# ------------------------------------------------------------------ reader checks


def test_reader_refuses_acid_file_without_acid_version(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    po.write_table(insert_events(ROWS, 1, B0).cast(event_schema(ROWS.schema)), path)
    with pytest.raises(MissingAcidVersionError, match="hive.acid.version") as err:
        OrcDataFile(pafs.LocalFileSystem(), str(path))
    assert str(path) in str(err.value)


def test_reader_names_corrupt_and_truncated_files(tmp_path: Path) -> None:
    good = tmp_path / "good"
    with EventWriter(good, ROWS.schema) as w:
        w.write(insert_events(ROWS, 1, B0))
    data = good.read_bytes()
    for name, content in {
        "garbage": b"not an orc file at all",
        "truncated": data[: len(data) // 2],
    }.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(CorruptAcidFileError) as err:
            OrcDataFile(pafs.LocalFileSystem(), str(p))
        assert str(p) in str(err.value)


def test_reader_refuses_plain_schema_in_acid_dir(tmp_path: Path) -> None:
    p = tmp_path / "bucket_00000"
    buf = io.BytesIO()
    po.write_table(ROWS, buf)
    p.write_bytes(append_user_metadata(buf.getvalue(), [("hive.acid.version", b"2")]))
    with pytest.raises(AcidSchemaError, match="ACID event schema"):
        OrcDataFile(pafs.LocalFileSystem(), str(p))


def test_flush_length_side_file(tmp_path: Path) -> None:
    side = tmp_path / "bucket_00000_flush_length"
    side.write_bytes((100).to_bytes(8, "big") + (250).to_bytes(8, "big"))
    assert read_flush_length(pafs.LocalFileSystem(), str(side)) == 250
    side.write_bytes(b"")
    with pytest.raises(FlushLengthError, match="empty") as err:
        read_flush_length(pafs.LocalFileSystem(), str(side))
    assert str(side) in str(err.value)


def test_stripe_statistics_reach_row_columns(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    with EventWriter(path, ROWS.schema, stripe_size=64 * 1024) as w:
        w.write(insert_events(ROWS, 1, B0))
    f = OrcDataFile(pafs.LocalFileSystem(), str(path))
    stats = f.column_statistics(0, ["id"])
    assert stats is not None and stats["minimum"] == 0
    last = f.column_statistics(f.num_stripes - 1, ["salary"])
    assert last is not None and last["maximum"] == 49990
