"""ORC Java (Spark's native ORC reader and writer, orc-core) against our files: timestamps before
1970 with a fraction of a second are stored as ORC Java stores them, stream for stream, and read
back by ORC Java exactly; what ORC Java writes reads back exactly here."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest
from py4j.java_gateway import get_field
from pyspark.sql import SparkSession

from acid_platform.format.writer import EventWriter, insert_events
from acid_platform_tests.format.test_orc_timestamps import raw_pairs

B0 = 536870912
US = 1_000_000
#: microseconds since 1970 (Spark's precision): 1969-12-31 23:59:58.5, 1900-01-01 12:00:00.123,
#: 1969-12-31 23:59:58.000001, 1969-12-31 23:59:59.999999 (the last second before 1970),
#: 1960-06-01 00:00:00, 1970-01-01 00:00:00.25
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
    theirs = tmp_path / "spark"
    values = ",".join(f"({i}, {v})" for i, v in enumerate(MICROS))
    (
        spark.sql(f"SELECT id, timestamp_micros(us) AS ts FROM VALUES {values} AS v(id, us)")
        .coalesce(1)
        .write.orc(str(theirs))
    )
    (spark_file,) = [p for p in theirs.iterdir() if p.suffix == ".orc"]
    java_pairs = sorted(
        zip(
            po.read_table(spark_file).column("id").to_pylist(),
            raw_pairs(spark_file, [1]),
            strict=True,
        )
    )
    assert raw_pairs(ours, [5, 1]) == [p for _, p in java_pairs]
    # and what ORC Java wrote reads back here as ORC Java reads it
    ts = po.read_table(spark_file).column("ts").cast(pa.int64()).to_pylist()
    ids = po.read_table(spark_file).column("id").to_pylist()
    assert [v // 1000 for _, v in sorted(zip(ids, ts, strict=True))] == [
        WINDOW.get(v, v) for v in MICROS
    ]
