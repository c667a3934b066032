"""ORC Java (Spark's native ORC reader and writer, orc-core) against our files: timestamps before
1970 with a fraction of a second are stored as ORC Java stores them, stream for stream, and read
back by ORC Java exactly; what ORC Java writes reads back exactly here."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
import pytest
from py4j.java_gateway import get_field
from pyspark.sql import SparkSession

from acid_platform.format.types import row_schema
from acid_platform.format.writer import EventWriter, insert_events
from acid_platform_tests.format.test_orc_timestamps import raw_pairs

B0 = 536870912
US = 1_000_000
#: microseconds since 1970 (Spark's precision): 1969-12-31 23:59:58.5, 1900-01-01 12:00:00.123,
#: 1969-12-31 23:59:58.000001, 1969-12-31 23:59:59.999999 (the last second before 1970),
#: 1960-06-02 00:00:00, 1970-01-01 00:00:00.25
MICROS = [
    -US - US // 2,
    -2208945600 * US + 123_000,
    -2 * US + 1,
    -1,
    -302400000 * US,
    US // 4,
]
#: ORC Java reads the last second before 1970 one second late (ORC-763/ORC-771), from its own
#: files and from ours alike
WINDOW = {-1: US - 1}

pytestmark = pytest.mark.slow


def _write_ours(path: Path) -> None:
    rows = pa.table(
        {
            "id": pa.array(range(len(MICROS)), pa.int32()),
            "ts": pa.array(MICROS, pa.timestamp("us")).cast(pa.timestamp("ns")),
        }
    )
    with EventWriter(path, rows.schema) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))


def orc_java_micros(spark: SparkSession, path: Path, column: list[int]) -> list[int]:
    """The timestamps of ``column`` (a path of field positions) as ORC Java's own reader
    (``org.apache.orc.Reader.rows()`` on Spark's JVM) decodes them, in microseconds; raises
    ``ValueError`` for nanos outside 0..999,999,999 (Hive's ``nextTimestamp`` refuses those)."""
    jvm = spark._jvm
    assert jvm is not None
    reader = jvm.org.apache.orc.OrcFile.createReader(
        jvm.org.apache.hadoop.fs.Path(str(path)),
        jvm.org.apache.orc.OrcFile.readerOptions(spark._jsc.hadoopConfiguration()),  # type: ignore[union-attr]
    )
    batch = reader.getSchema().createRowBatch()
    rows = reader.rows()
    out: list[int] = []
    try:
        while rows.nextBatch(batch):
            vec = get_field(batch, "cols")[column[0]]
            for i in column[1:]:
                vec = get_field(vec, "fields")[i]
            millis, nanos = get_field(vec, "time"), get_field(vec, "nanos")
            for r in range(get_field(batch, "size")):
                if not 0 <= nanos[r] <= 999_999_999:
                    raise ValueError(f"nanos > 999999999 or < 0: {nanos[r]}")
                out.append((millis[r] // 1000) * US + nanos[r] // 1000)
    finally:
        rows.close()
    return out


def test_orc_java_reads_our_timestamps_exactly(spark: SparkSession, tmp_path: Path) -> None:
    ours = tmp_path / "bucket_00000"
    _write_ours(ours)
    assert orc_java_micros(spark, ours, [5, 1]) == [WINDOW.get(v, v) for v in MICROS]
    # the bug this guards against: pyarrow's own encoding gives ORC Java negative nanos
    old = tmp_path / "old.orc"
    po.write_table(pa.table({"ts": pa.array(MICROS, pa.timestamp("us"))}), old)
    with pytest.raises(ValueError, match="nanos"):
        orc_java_micros(spark, old, [0])


def test_our_streams_equal_orc_javas(spark: SparkSession, tmp_path: Path) -> None:
    ours = tmp_path / "ours" / "bucket_00000"
    ours.parent.mkdir()
    _write_ours(ours)
    spark_file = orc_java_file(spark, tmp_path / "spark", MICROS)
    assert raw_pairs(ours, [5, 1]) == pairs_by_id(spark_file)
    # and what ORC Java wrote reads back here as ORC Java reads it
    ts = po.read_table(spark_file).column("ts").cast(pa.int64()).to_pylist()
    ids = po.read_table(spark_file).column("id").to_pylist()
    assert [v // 1000 for _, v in sorted(zip(ids, ts, strict=True))] == [
        WINDOW.get(v, v) for v in MICROS
    ]


def orc_java_file(spark: SparkSession, directory: Path, micros: list[int]) -> Path:
    """An ORC file ORC Java (Spark's ``write.orc``) wrote: ``id`` and ``ts`` = ``micros``."""
    values = ",".join(f"({i}, {v})" for i, v in enumerate(micros))
    (
        spark.sql(f"SELECT id, timestamp_micros(us) AS ts FROM VALUES {values} AS v(id, us)")
        .coalesce(1)
        .write.orc(str(directory))
    )
    (spark_file,) = [p for p in directory.iterdir() if p.suffix == ".orc"]
    return spark_file


def pairs_by_id(spark_file: Path) -> list[tuple[int, int] | None]:
    """The stored (seconds, nanos) of :func:`orc_java_file`'s ``ts``, in ``id`` order."""
    ids = po.ORCFile(spark_file).read(columns=["id"]).column("id").to_pylist()
    return [p for _, p in sorted(zip(ids, raw_pairs(spark_file, [1]), strict=True))]


def _orc_java_reader(spark: SparkSession, path: Path) -> Any:
    jvm = spark._jvm
    assert jvm is not None
    options = jvm.org.apache.orc.OrcFile.readerOptions(
        spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    ).convertToProlepticGregorian(True)  # what Hive 3.1+ and Spark 3+ read with
    return jvm.org.apache.orc.OrcFile.createReader(
        jvm.org.apache.hadoop.fs.Path(str(path)), options
    )


def _column(reader: Any, column: list[int]) -> tuple[Any, int]:
    batch = reader.getSchema().createRowBatch()
    rows = reader.rows()
    assert rows.nextBatch(batch)
    rows.close()
    vec = get_field(batch, "cols")[column[0]]
    for i in column[1:]:
        vec = get_field(vec, "fields")[i]
    return vec, get_field(batch, "size")


def test_orc_java_reads_our_calendar_dates_and_char_types(
    spark: SparkSession, tmp_path: Path
) -> None:
    schema = row_schema([("d", "date"), ("c", "char(5)"), ("v", "varchar(3)")])
    dates = [dt.date(1, 1, 1), dt.date(1582, 10, 10), dt.date(9999, 12, 31)]
    rows = pa.table(
        {"d": pa.array(dates), "c": ["ab", "x", "abcdefg"], "v": ["abcdef", "x", None]}
    ).cast(schema)
    ours = tmp_path / "bucket_00000"
    with EventWriter(ours, schema) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))
    reader = _orc_java_reader(spark, ours)
    assert reader.writerUsedProlepticGregorian()
    assert str(reader.getSchema().toString()).endswith("row:struct<d:date,c:char(5),v:varchar(3)>>")
    days, n = _column(reader, [5, 0])
    assert [get_field(days, "vector")[i] for i in range(n)] == [-719162, -141432, 2932896]
    chars, _ = _column(reader, [5, 1])
    texts = []
    for i in range(n):  # ORC Java trims a char's padding as it reads (Hive pads it back to show it)
        out = spark._jvm.java.lang.StringBuilder()  # type: ignore[union-attr]
        chars.stringifyValue(out, i)
        texts.append(str(out.toString()))
    assert texts == ['"ab"', '"x"', '"abcde"']
    # what the calendar field prevents: a file without it is taken as hybrid Julian, and its
    # 0001-01-01 becomes 0001-01-03 (1582-10-10, 10 days off)
    old = tmp_path / "old.orc"
    po.write_table(pa.table({"d": pa.array(dates)}), old)
    old_reader = _orc_java_reader(spark, old)
    assert not old_reader.writerUsedProlepticGregorian()
    old_days, _ = _column(old_reader, [0])
    assert [get_field(old_days, "vector")[i] for i in range(n)] == [-719160, -141442, 2932896]


def hive_23_timestamps(spark: SparkSession, path: Path, column: list[int]) -> list[str]:
    """The timestamps of ``column`` as Hive 2.3's own ORC reader (``hive-exec``'s
    ``org.apache.hadoop.hive.ql.io.orc.RecordReaderImpl``, in the PySpark wheel) returns them."""
    jvm = spark._jvm
    assert jvm is not None
    orc_file = jvm.org.apache.hadoop.hive.ql.io.orc.OrcFile
    reader = orc_file.createReader(
        jvm.org.apache.hadoop.fs.Path(str(path)),
        orc_file.readerOptions(spark._jsc.hadoopConfiguration()),  # type: ignore[union-attr]
    )
    rows = reader.rows()
    out, row = [], None
    try:
        while rows.hasNext():
            row = rows.next(row)
            value = row
            for i in column:
                value = value.getFieldValue(i)
            out.append(str(value.getTimestamp().toString()))
    finally:
        rows.close()
    return out


def test_hive_23_reads_our_timestamps(spark: SparkSession, tmp_path: Path) -> None:
    ours = tmp_path / "bucket_00000"
    _write_ours(ours)
    assert hive_23_timestamps(spark, ours, [5, 1]) == [
        "1969-12-31 23:59:58.5",
        "1900-01-01 12:00:00.123",
        "1969-12-31 23:59:58.000001",
        "1970-01-01 00:00:00.999999",  # the last second before 1970: one second late (ORC-763)
        "1960-06-02 00:00:00.0",
        "1970-01-01 00:00:00.25",
    ]
    # the symptom, with pyarrow's own encoding
    old = tmp_path / "old.orc"
    po.write_table(pa.table({"ts": pa.array(MICROS, pa.timestamp("us"))}), old)
    with pytest.raises(Exception, match=r"nanos > 999999999 or < 0"):
        hive_23_timestamps(spark, old, [0])


#: beyond Arrow's nanosecond range, after the Gregorian switch (where ORC Java's hybrid calendar
#: and ours agree): 1600-01-01 00:00:00.5 (before 1970 with a fraction), 1677-09-21 00:12:43,
#: 2500-06-01 12:00:00, 9999-12-31 23:59:59.999999 — in microseconds since 1970
WIDE_MICROS = [
    -11676096000 * US + US // 2,
    -9223372037 * US,
    16738315200 * US,
    253402300799 * US + 999_999,
]


def test_orc_java_reads_and_writes_wide_timestamps_as_we_do(
    spark: SparkSession, tmp_path: Path
) -> None:
    ours = tmp_path / "ours" / "bucket_00000"
    ours.parent.mkdir()
    rows = pa.table(
        {
            "id": pa.array(range(len(WIDE_MICROS)), pa.int32()),
            "ts": pa.array(WIDE_MICROS, pa.timestamp("us")),
        }
    )
    with EventWriter(ours, pa.schema([("id", pa.int32()), ("ts", pa.timestamp("ns"))])) as w:
        w.write(insert_events(rows, write_id=1, bucket_property=B0))
    assert orc_java_micros(spark, ours, [5, 1]) == WIDE_MICROS
    spark_file = orc_java_file(spark, tmp_path / "spark", WIDE_MICROS)
    assert raw_pairs(ours, [5, 1]) == pairs_by_id(spark_file)
    # and Hive 2.3's own reader (hive-exec) shows them as written
    assert hive_23_timestamps(spark, ours, [5, 1]) == [
        "1600-01-01 00:00:00.5",
        "1677-09-21 00:12:43.0",
        "2500-06-01 12:00:00.0",
        "9999-12-31 23:59:59.999999",
    ]
