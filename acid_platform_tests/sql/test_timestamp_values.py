"""Timestamps and dates at their boundaries, through SQL and through the files: nanoseconds kept
from SQL constants, 0001-01-01 and 9999-12-31 as the same proleptic Gregorian days, pre-1970
fractions, a DST gap (timestamps have no zone), and the nanosecond range's edges."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po

from acid_platform import Warehouse
from acid_platform.table.schema import TIMESTAMP_RANGE

CREATE = (
    "CREATE TABLE t (id INT, ts TIMESTAMP, d DATE) STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true')"
)
#: proleptic Gregorian days since 1970-01-01
DAY_0001_01_01 = -719162
DAY_9999_12_31 = 2932896


def _nanos(wh: Warehouse) -> list[int | None]:
    table = wh.sql("SELECT id, ts FROM t ORDER BY id")
    return table.column("ts").cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def test_sql_constants_keep_nanoseconds(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql(
        "INSERT INTO t VALUES (1, TIMESTAMP '2020-01-01 10:00:00.123456789', DATE '2020-01-01'), "
        "(2, CAST('1969-12-31 23:59:58.000000001' AS TIMESTAMP), NULL), "
        "(3, '1900-01-01 12:00:00.123', NULL), (4, TIMESTAMP '2020-01-01 10:00:00.5', DATE '2020-01-01')"
    )
    assert _nanos(wh) == [
        1577872800_123456789,
        -1_999_999_999,
        -2208945599_877000000,
        1577872800_500000000,
    ]
    assert wh.sql(
        "SELECT id FROM t WHERE ts = TIMESTAMP '2020-01-01 10:00:00.123456789'"
    ).to_pylist() == [{"id": 1}]


def test_boundary_values_round_trip(wh: Warehouse) -> None:
    wh.sql(CREATE)
    lo, hi = -9_223_372_036 * 10**9, 2**63 - 1  # inside TIMESTAMP_RANGE, to the nanosecond
    assert str(pa.scalar(hi, pa.timestamp("ns"))) == TIMESTAMP_RANGE[1]
    rows = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int32()),
            "ts": pa.array(
                [
                    lo,
                    hi,
                    -500_000_000,
                    1710037800 * 10**9,
                ],  # 2024-03-10 02:30 (US DST gap)
                pa.timestamp("ns"),
            ),
            "d": pa.array(
                [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1582, 10, 10), None], pa.date32()
            ),
        }
    )
    wh.table("t").insert(rows)
    got = wh.sql("SELECT * FROM t ORDER BY id")
    assert got.column("ts").cast(pa.int64()).to_pylist() == [
        lo,
        hi,
        -500_000_000 + 1_000_000_000,  # the last second before 1970: as every ORC reader (docs)
        1710037800 * 10**9,
    ]
    assert got.column("d").to_pylist() == rows.column("d").to_pylist()
    assert wh.sql("SELECT CAST(ts AS STRING) AS s FROM t WHERE id = 4").to_pylist() == [
        {"s": "2024-03-10 02:30:00"}
    ]
    # in the file: the proleptic Gregorian day numbers (the footer says which calendar)
    (path,) = Path(wh.table("t").spec.location).glob("delta_*/bucket_*")
    days = po.read_table(path).column("row").combine_chunks().field("d").cast(pa.int32())
    assert days.to_pylist()[:2] == [DAY_0001_01_01, DAY_9999_12_31]


def test_timestamps_beyond_nanoseconds_are_no_longer_refused(wh: Warehouse) -> None:
    # were refused ("1677-09-21 00:12:44 to 2262…"); now kept at microseconds (test_wide_timestamps)
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '1500-06-01 10:00:00', DATE '1500-06-01')")
    assert wh.sql("SELECT ts, d FROM t").to_pylist() == [
        {"ts": dt.datetime(1500, 6, 1, 10), "d": dt.date(1500, 6, 1)}
    ]
