"""Timestamps before 1970 with a fraction of a second: stored as ORC Java stores them, and files
written the old way (pyarrow's negative nanos) still read back exactly."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
import pyorc
from pyorc.converters import ORCConverter

from acid_platform.format.orc_append import encode_chunk
from acid_platform.format.orc_timestamps import (
    encode_table,
    has_negative_fraction,
    has_null_nested_struct,
    java_timestamp_streams,
)
from acid_platform.format.writer import EventWriter, insert_events

B0 = 536870912
S = 1_000_000_000
#: 1969-12-31 23:59:58.5, 1900-01-01 12:00:00.123, 500 ns before 1969-12-31 23:59:59, 500 ns
#: after 1969-12-31 23:59:58,
#: 1969-12-31 23:59:59 exactly, 1970-01-01 00:00:00.5, and the issue's 23:59:59.999999 (in the
#: last second before 1970: ORC Java stores it with seconds 0, see the module's docstring)
VALUES = [
    -1 * S - S // 2,
    -2208945600 * S + 123_000_000,
    -1 * S - 500,
    -2 * S + 500,
    -1 * S,
    S // 2,
    -1000,
    None,
]


class RawPairs(ORCConverter):
    """What ORC C++ decodes from the DATA and SECONDARY streams: (seconds, nanos) as
    ``TimestampColumnReader`` returns them, before any conversion."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> tuple[int, int]:
        return seconds, nanoseconds

    @staticmethod
    def to_orc(obj: Any, timezone: Any) -> Any:  # pragma: no cover - reading only
        raise NotImplementedError


def stored_streams(decoded: tuple[int, int]) -> tuple[int, int]:
    """The (seconds since 1970, nanos) in the streams, from ORC C++'s decoded pair: the reader
    takes a second off when the stored seconds are negative and nanos > 999,999 (ORC-763), which
    is one-to-one, so equal decoded pairs mean equal streams."""
    seconds, nanos = decoded
    if seconds < -1 and nanos > 999_999:
        return seconds + 1, nanos
    return seconds, nanos


def raw_pairs(data: bytes | Path, column: list[int]) -> list[tuple[int, int] | None]:
    fh = open(data, "rb") if isinstance(data, Path) else io.BytesIO(data)  # noqa: SIM115
    with fh:
        reader = pyorc.Reader(fh, converters={pyorc.TypeKind.TIMESTAMP: RawPairs})
        out = []
        for row in reader:
            value = row
            for i in column:
                value = value[i] if value is not None else None
            out.append(value)
        return out


def test_java_encoding_rule() -> None:
    # ORC Java: seconds = (epoch millis) / 1000 rounded toward zero, nanos the positive fraction
    assert java_timestamp_streams(-S - S // 2) == (-1, 500_000_000)
    assert java_timestamp_streams(-1000) == (0, 999_999_000)
    assert java_timestamp_streams(-S - 500) == (-1, 999_999_500)
    assert java_timestamp_streams(-2 * S + 500) == (-2, 500)  # under a millisecond: floor
    assert java_timestamp_streams(-S) == (-1, 0)
    assert java_timestamp_streams(S // 2) == (0, 500_000_000)


def test_event_file_stores_timestamps_as_orc_java(tmp_path: Path) -> None:
    rows = pa.table(
        {
            "id": pa.array(range(len(VALUES)), pa.int32()),
            "ts": pa.array(VALUES, pa.timestamp("ns")),
            "nested": pa.array([{"t": v} for v in VALUES], pa.struct([("t", pa.timestamp("ns"))])),
        }
    )
    path = tmp_path / "bucket_00000"
    with EventWriter(path, rows.schema) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))
    expected = [None if v is None else java_timestamp_streams(v) for v in VALUES]
    for column in ([5, 1], [5, 2, 0]):
        pairs = raw_pairs(path, column)
        assert [None if p is None else stored_streams(p) for p in pairs] == expected
        assert all(p is None or 0 <= p[1] <= 999_999_999 for p in pairs)  # Java's check
    with open(path, "rb") as fh:  # Hive's footer metadata survives the re-encoding
        meta = dict(pyorc.Reader(fh).user_metadata)
    assert meta["hive.acid.key.index"] == f"1,{B0},{len(VALUES) - 1};".encode()
    assert meta["hive.acid.stats"] == f"{len(VALUES)},0,0".encode()
    # our reader: every value exact, except the last second before 1970 (one second late, as in
    # every Apache ORC reader: ORC-763 / ORC-771)
    got = po.read_table(path).column("row").combine_chunks().field("ts").cast(pa.int64())
    assert got.to_pylist() == [v + S if v is not None and -S < v < 0 else v for v in VALUES]


def test_plain_values_keep_pyarrows_writer(tmp_path: Path) -> None:
    rows = pa.table({"ts": pa.array([-S, 0, S // 3], pa.timestamp("ns"))})
    assert not has_negative_fraction(rows)
    path = tmp_path / "bucket_00000"
    with EventWriter(path, rows.schema) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))
    with open(path, "rb") as fh:
        assert "ORC C++" in pyorc.Reader(fh).software_version  # pyarrow's bundled ORC


def test_streaming_chunks_store_timestamps_as_orc_java() -> None:
    # streaming files are built from chunks encoded in memory (orc_append.encode_chunk)
    table = pa.table({"ts": pa.array(VALUES, pa.timestamp("ns"))})
    data = encode_table(table, "zlib", 64 * 1024 * 1024)
    expected = [None if v is None else java_timestamp_streams(v) for v in VALUES]
    assert [None if p is None else stored_streams(p) for p in raw_pairs(data, [0])] == expected
    assert encode_chunk(table, "zlib", 64 * 1024 * 1024).rows == len(VALUES)


def test_files_written_the_old_way_still_read_exactly(tmp_path: Path) -> None:
    # what earlier versions wrote: pyarrow's negative nanos, which ORC C++ decodes exactly
    table = pa.table({"ts": pa.array(VALUES, pa.timestamp("ns"))})
    path = tmp_path / "old.orc"
    po.write_table(table, path)
    assert any(p is not None and p[1] < 0 for p in raw_pairs(path, [0]))  # the old encoding
    assert po.read_table(path).column("ts").cast(pa.int64()).to_pylist() == VALUES


def test_has_negative_fraction_looks_inside_nested_types() -> None:
    ts = pa.timestamp("us")
    assert has_negative_fraction(pa.array([[-1]], pa.list_(ts)))
    assert has_negative_fraction(pa.array([[("k", -1)]], pa.map_(pa.string(), ts)))
    assert not has_negative_fraction(pa.array([[-1_000_000]], pa.list_(ts)))
    assert not has_negative_fraction(pa.array([-5], pa.timestamp("s")))


def test_null_structs_inside_the_row_struct_read_back_exactly(tmp_path: Path) -> None:
    # pyarrow's ORC writer stores the values after a NULL struct nested in a struct as zeros
    inner = pa.struct([("a", pa.int32()), ("b", pa.string())])
    rows = pa.table(
        {
            "s": pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": "z"}], inner),
            "l": pa.array(
                [[{"a": 1, "b": "x"}, None, {"a": 2, "b": "y"}], None, []], pa.list_(inner)
            ),
        }
    )
    assert has_null_nested_struct(insert_events(rows, 1, B0))
    path = tmp_path / "bucket_00000"
    with EventWriter(path, rows.schema) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))
    got = po.read_table(path).column("row").combine_chunks()
    assert got.to_pylist() == rows.to_pylist()


def test_a_file_switches_to_pyorc_midway_and_keeps_every_row(tmp_path: Path) -> None:
    schema = pa.schema([("ts", pa.timestamp("ns"))])
    path = tmp_path / "bucket_00000"
    with EventWriter(path, schema, batch_size=100) as w:
        plain = pa.table({"ts": pa.array(range(0, 3000), pa.timestamp("ns"))})
        w.write(insert_events(plain, 1, B0))  # pyarrow takes these
        late = pa.table({"ts": pa.array([-S - S // 2, 7], pa.timestamp("ns"))})
        w.write(insert_events(late, 1, B0, first_row_id=3000))  # these need pyorc
    got = po.read_table(path).column("row").combine_chunks().field("ts").cast(pa.int64())
    assert got.to_pylist() == [*range(3000), -S - S // 2, 7]
    with open(path, "rb") as fh:
        reader = pyorc.Reader(fh)
        assert dict(reader.user_metadata)["hive.acid.key.index"].endswith(f",{B0},3001;".encode())
