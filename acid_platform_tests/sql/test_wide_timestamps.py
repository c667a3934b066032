"""Timestamps in Hive's whole range, 0001-01-01 to 9999-12-31 (``format.wide_timestamps``):
beyond Arrow's nanosecond range (1677-09-21 .. 2262-04-11) a value is carried at microseconds
(``timestamp[us]``), through SQL, the Python API, DML, MERGE and compaction; a value never
comes back different, and one that cannot be carried raises an error naming it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import SchemaMismatchError, TimestampRangeError
from acid_platform.streaming import ArrowRecordWriter, StreamingConnection

CREATE = (
    "CREATE TABLE t (id INT, ts TIMESTAMP) STORED AS ORC TBLPROPERTIES ('transactional'='true')"
)
US = 1_000_000
#: 0001-01-01 00:00:00, 1500-06-01 10:00:00, 1677-09-21 00:12:43 (a second outside the
#: nanosecond range), 9999-12-31 23:59:59.999999, in microseconds since 1970
FIRST = -62135596800 * US
Y1500 = int((dt.datetime(1500, 6, 1, 10) - dt.datetime(1970, 1, 1)).total_seconds()) * US
BELOW_NS = -9223372037 * US
LAST = 253402300799 * US + 999999
#: 2024-03-10 02:30, inside the US daylight-saving gap
DST_GAP = 1710037800 * US


def _micros(wh: Warehouse, sql: str = "SELECT id, ts FROM t ORDER BY id") -> list[int | None]:
    got = wh.sql(sql)
    assert got.schema.field("ts").type == pa.timestamp("us")
    return got.column("ts").cast(pa.int64()).to_pylist()  # type: ignore[no-any-return]


def test_sql_literals_in_hives_range_round_trip(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql(
        "INSERT INTO t VALUES (1, TIMESTAMP '0001-01-01 00:00:00'), "
        "(2, TIMESTAMP '1500-06-01 10:00:00'), (3, TIMESTAMP '9999-12-31 23:59:59.999999'), "
        "(4, TIMESTAMP '2020-01-01 10:00:00.5'), (5, NULL)"
    )
    assert _micros(wh) == [FIRST, Y1500, LAST, 1577872800 * US + 500_000, None]
    assert wh.sql("SELECT id FROM t WHERE ts = TIMESTAMP '1500-06-01 10:00:00'").to_pylist() == [
        {"id": 2}
    ]
    assert wh.sql("SELECT CAST(ts AS STRING) AS s FROM t WHERE id = 3").to_pylist() == [
        {"s": "9999-12-31 23:59:59.999999"}
    ]


def test_nanoseconds_beyond_the_nanosecond_range_are_refused_not_cut(wh: Warehouse) -> None:
    wh.sql(CREATE)
    with pytest.raises(TimestampRangeError, match=r"9999-12-31 23:59:59\.999999999.*nanoseconds"):
        wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '9999-12-31 23:59:59.999999999')")
    with pytest.raises(TimestampRangeError, match=r"1500-06-01 10:00:00\.1234567"):
        wh.sql("SELECT CAST('1500-06-01 10:00:00.1234567' AS TIMESTAMP) AS x")
    # trailing zeros are no nanoseconds: kept exactly, at microseconds
    wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '9999-12-31 23:59:59.999999000')")
    assert _micros(wh) == [LAST]
    assert wh.sql("SELECT * FROM t").num_rows == 1


def test_outside_hives_range_is_refused_naming_the_value(wh: Warehouse) -> None:
    wh.sql(CREATE)
    year_10000 = pa.array([253402300800 * US], pa.timestamp("us"))
    with pytest.raises(SchemaMismatchError, match=r"column 'ts'.*10000-01-01 00:00:00.*0001-01-01"):
        wh.table("t").insert(pa.table({"id": pa.array([1], pa.int32()), "ts": year_10000}))
    assert wh.sql("SELECT * FROM t").num_rows == 0


def test_arrow_writes_and_reads_round_trip_boundaries(wh: Warehouse) -> None:
    wh.sql(CREATE)
    table = wh.table("t")
    wide = [FIRST, Y1500, Y1500 - 500_000, BELOW_NS, LAST, DST_GAP, None]
    table.insert(
        pa.table(
            {"id": pa.array(range(len(wide)), pa.int32()), "ts": pa.array(wide, pa.timestamp("us"))}
        )
    )
    got = table.scan().to_arrow()
    assert got.schema.field("ts").type == pa.timestamp("us")
    assert got.sort_by("id").column("ts").cast(pa.int64()).to_pylist() == wide
    streamed = table.scan().to_batches().read_all()
    assert streamed.schema.field("ts").type == pa.timestamp("us")
    assert streamed.sort_by("id").column("ts").cast(pa.int64()).to_pylist() == wide
    # the DST-gap value reads as written, whatever the zone (timestamps have none)
    assert wh.sql(
        f"SELECT CAST(ts AS STRING) AS s FROM t WHERE id = {wide.index(DST_GAP)}"
    ).to_pylist() == [{"s": "2024-03-10 02:30:00"}]
    assert wh.sql("SELECT CAST(ts AS STRING) AS s FROM t WHERE id = 2").to_pylist() == [
        {"s": "1500-06-01 09:59:59.5"}
    ]


def test_the_nanosecond_range_edges_keep_nanoseconds(wh: Warehouse) -> None:
    # inside Arrow's nanosecond range, down to its first value: exact nanoseconds, timestamp[ns]
    # (below 1677-09-21 00:12:44 pyarrow's reader refuses the stripe; pyorc decodes it)
    wh.sql(CREATE)
    edges = [-(2**63) + 1, -9_223_372_036 * 10**9 - 1, -9_223_372_036 * 10**9, 2**63 - 1]
    wh.table("t").insert(
        pa.table({"id": pa.array(range(4), pa.int32()), "ts": pa.array(edges, pa.timestamp("ns"))})
    )
    got = wh.table("t").scan().to_arrow().sort_by("id")
    assert got.schema.field("ts").type == pa.timestamp("ns")
    assert got.column("ts").cast(pa.int64()).to_pylist() == edges


def test_dml_merge_and_compaction_keep_wide_values(wh: Warehouse) -> None:
    wh.sql(CREATE)
    wh.sql(
        "INSERT INTO t VALUES (1, TIMESTAMP '0001-01-01 00:00:00'), "
        "(2, TIMESTAMP '1500-06-01 10:00:00'), (3, TIMESTAMP '9999-12-31 23:59:59.999999'), "
        "(4, TIMESTAMP '2024-03-10 02:30:00')"
    )
    wh.sql("UPDATE t SET id = 10 WHERE ts = TIMESTAMP '0001-01-01 00:00:00'")
    wh.sql("UPDATE t SET ts = TIMESTAMP '1677-09-21 00:12:43' WHERE id = 4")
    wh.sql("DELETE FROM t WHERE ts = TIMESTAMP '9999-12-31 23:59:59.999999'")
    wh.sql(
        "MERGE INTO t USING (SELECT 2 AS id, TIMESTAMP '0001-01-01 00:00:00' AS ts "
        "UNION ALL SELECT 5, TIMESTAMP '9999-12-31 23:59:59.999999') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET ts = s.ts WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.ts)"
    )
    expected = [FIRST, BELOW_NS, LAST, FIRST]  # ids 2, 4, 5, 10
    assert _micros(wh) == expected
    wh.sql("ALTER TABLE t COMPACT 'minor' AND WAIT")
    assert _micros(wh) == expected
    wh.sql("ALTER TABLE t COMPACT 'major' AND WAIT")
    assert _micros(wh) == expected
    dirs = [d.name for d in Path(wh.table("t").spec.location).iterdir()]
    assert any(d.startswith("base_") for d in dirs)


def test_nanoseconds_beside_wide_values_raise_naming_the_value(wh: Warehouse) -> None:
    # one column cannot carry both: never a cut value
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '2020-01-01 10:00:00.123456789')")
    wh.sql("INSERT INTO t VALUES (2, TIMESTAMP '1500-06-01 10:00:00')")
    with pytest.raises(TimestampRangeError, match=r"2020-01-01 10:00:00\.123456789.*nanoseconds"):
        wh.sql("SELECT * FROM t")
    with pytest.raises(TimestampRangeError, match=r"2020-01-01 10:00:00\.123456789"):
        wh.table("t").scan().to_arrow()
    # a column without the wide values still reads
    assert wh.sql("SELECT id FROM t ORDER BY id").column("id").to_pylist() == [1, 2]


def test_streamed_wide_values_read_back(wh: Warehouse) -> None:
    # a streaming file merges its chunks' footers without timestamp bounds: the scan finds the
    # wide column from the stripes' statistics (and pyorc's file statistics, which crash on
    # such a footer, are never asked)
    wh.sql(CREATE)
    conn = (
        StreamingConnection.builder(wh)
        .with_table("t")
        .with_transaction_batch_size(5)
        .with_record_writer(ArrowRecordWriter())
        .connect()
    )
    try:
        for i, value in enumerate([DST_GAP, DST_GAP + 1, FIRST, LAST]):
            if i == 2:  # two chunks in range: the common path, nanoseconds
                assert wh.table("t").scan().to_arrow().schema.field("ts").type == pa.timestamp("ns")
            conn.begin_transaction()
            conn.write(
                pa.table(
                    {"id": pa.array([i], pa.int32()), "ts": pa.array([value], pa.timestamp("us"))}
                )
            )
            conn.commit_transaction()
        assert _micros(wh) == [DST_GAP, DST_GAP + 1, FIRST, LAST]
    finally:
        conn.close()


def test_the_change_feed_names_a_wide_value_it_cannot_carry(wh: Warehouse) -> None:
    # the change feed keeps timestamp[ns] (docs/values.md): an error naming the value, never a
    # wrapped one
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '0001-01-01 00:00:00')")
    with pytest.raises(TimestampRangeError, match=r"0001-01-01 00:00:00 lies outside.*change feed"):
        wh.table("t").changes(0, 1).to_arrow()


def test_constants_beyond_the_range_compare_with_nanosecond_columns(wh: Warehouse) -> None:
    # every value fits nanoseconds; the engine could not compare them with 1500 (regression)
    wh.sql(CREATE)
    wh.sql("INSERT INTO t VALUES (1, TIMESTAMP '2020-01-01 10:00:00.123456'), (2, NULL)")
    assert wh.sql("SELECT id FROM t WHERE ts > TIMESTAMP '1500-01-01 00:00:00'").to_pylist() == [
        {"id": 1}
    ]
    assert wh.sql("SELECT count(*) AS c FROM t WHERE ts < '9999-01-01 00:00:00'").to_pylist() == [
        {"c": 1}
    ]
    assert wh.table("t").scan(
        where="ts >= '0001-01-01 00:00:00'", columns=["id"]
    ).to_arrow().to_pylist() == [{"id": 1}]
    wh.sql("DELETE FROM t WHERE ts > TIMESTAMP '1500-01-01 00:00:00'")
    assert wh.sql("SELECT id FROM t").to_pylist() == [{"id": 2}]
    # a value with nanoseconds cannot be compared at microseconds: named, never cut
    wh.sql("INSERT INTO t VALUES (3, TIMESTAMP '2020-01-01 10:00:00.123456789')")
    with pytest.raises(
        TimestampRangeError, match=r"2020-01-01 10:00:00\.123456789 has nanoseconds"
    ):
        wh.sql("SELECT id FROM t WHERE ts > TIMESTAMP '1500-01-01 00:00:00'")
    assert wh.sql("SELECT id FROM t WHERE ts > TIMESTAMP '2000-01-01 00:00:00'").to_pylist() == [
        {"id": 3}
    ]
