"""Timestamps beyond Arrow's nanosecond range in the files (``format.wide_timestamps``): stored
as ORC Java stores them, decoded exactly where pyarrow's reader refuses them, detected from the
footer statistics; Hive-written files decode the same either way."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pytest

from acid_platform.errors import TimestampRangeError
from acid_platform.format import OrcDataFile
from acid_platform.format.orc_timestamps import java_timestamp_streams
from acid_platform.format.wide_timestamps import cast_column, decode_stripe, wide_columns
from acid_platform.format.writer import EventWriter, insert_events
from acid_platform_tests.format.test_orc_timestamps import B0, raw_pairs, stored_streams
from acid_platform_tests.helpers import HIVE_FIXTURES

US = 1_000_000
NS = 1000 * US
#: 0001-01-01 00:00:00; 1500-06-01 09:59:59.5 (before 1970 with a fraction: ORC Java's rule);
#: 1677-09-21 00:12:43 (a second below the nanosecond range); 9999-12-31 23:59:59.999999
WIDE_US = [
    -62135596800 * US,
    -14579964000 * US - 500_000,
    -9223372037 * US,
    253402300799 * US + 999_999,
]
SCHEMA = pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])


def _write(
    path: Path, values_us: Sequence[int | None], stripe_size: int = 64 * 1024 * 1024
) -> None:
    rows = pa.table(
        {
            "id": pa.array(range(len(values_us)), pa.int32()),
            "ts": pa.array(values_us, pa.timestamp("us")),
        }
    )
    with EventWriter(path, SCHEMA, stripe_size=stripe_size) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))


def test_wide_values_are_stored_as_orc_java_stores_them(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    _write(path, [*WIDE_US, None])
    expected = [java_timestamp_streams(v * 1000) for v in WIDE_US] + [None]
    pairs = raw_pairs(path, [5, 1])
    assert [None if p is None else stored_streams(p) for p in pairs] == expected
    assert expected[1] == (-14579964000, 500_000_000)  # seconds + 1, a positive remainder
    assert all(p is None or 0 <= p[1] <= 999_999_999 for p in pairs)  # Java's check


def test_pyarrows_reader_refuses_wide_stripes_rather_than_wrapping(tmp_path: Path) -> None:
    # what the design relies on: a refusal to catch, never a silently wrapped value
    path = tmp_path / "bucket_00000"
    _write(path, WIDE_US[:1])
    with pytest.raises(pa.ArrowInvalid, match="out of range for nanosecond resolution"):
        po.read_table(path)


def test_only_the_stripe_holding_wide_values_reads_at_microseconds(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    plain = [(i * 7919 % 1_000_003) * US + i for i in range(200_000)]
    _write(path, [*plain, *WIDE_US], stripe_size=1024)
    with OrcDataFile(pafs.LocalFileSystem(), str(path)) as f:
        assert f.num_stripes > 1
        batches = [f.read_stripe(i, ["row.ts", "rowId"]) for i in range(f.num_stripes)]
    types = [b.column("row").type.field("ts").type for b in batches]
    assert types[0] == pa.timestamp("ns") and types[-1] == pa.timestamp("us")
    got = [
        v
        for b in batches
        for v in b.column("row").field("ts").cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()
    ]
    assert got == [*plain, *WIDE_US]
    assert wide_columns(pafs.LocalFileSystem(), [(str(path), None)], SCHEMA) == {"ts"}


def test_statistics_find_no_wide_column_in_range(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    # the nanosecond range's own edges are not wide
    _write(path, [-(2**63) // 1000 + 1, (2**63 - 1) // 1000, None])
    assert wide_columns(pafs.LocalFileSystem(), [(str(path), None)], SCHEMA) == frozenset()
    assert (
        wide_columns(pafs.LocalFileSystem(), [(str(path), None)], pa.schema([("id", pa.int32())]))
        == frozenset()
    )


def test_nanoseconds_are_never_cut_to_fit_a_wide_column() -> None:
    fine = pa.array([1_577_872_800_123_456_789], pa.timestamp("ns"))
    with pytest.raises(TimestampRangeError, match=r"column 'ts'.*2020-01-01 10:00:00\.123456789"):
        cast_column(fine, pa.timestamp("us"), "column 'ts'")
    wide = pa.array([WIDE_US[0]], pa.timestamp("us"))
    with pytest.raises(TimestampRangeError, match=r"0001-01-01 00:00:00 lies outside"):
        cast_column(wide, pa.timestamp("ns"), "column 'ts'")
    assert cast_column(pa.array([5000], pa.timestamp("ns")), pa.timestamp("us"), "x").to_pylist()


def _orc_files() -> list[Path]:
    out = []
    for p in sorted(HIVE_FIXTURES.rglob("*")):
        if p.is_file() and p.read_bytes()[:3] == b"ORC":
            out.append(p)
    return out


@pytest.mark.parametrize("path", _orc_files(), ids=lambda p: str(p.relative_to(HIVE_FIXTURES)))
def test_hive_written_files_decode_the_same_through_pyorc(path: Path) -> None:
    # the fallback decoder against pyarrow's, on every Hive-written fixture (all types)
    data = path.read_bytes()
    orc = po.ORCFile(pa.BufferReader(data))
    for i in range(orc.nstripes):
        expected = orc.read_stripe(i)
        assert decode_stripe(io.BytesIO(data), i, orc.schema, None).equals(expected)
