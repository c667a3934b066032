"""ORC Java — the reader under Hive's — opens every committed prefix of a streaming bucket file
as Hive does (``OrcFile.createReader(path, readerOptions(conf).maxLength(flush length))``),
through the JVM that PySpark carries (orc-core 2.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from py4j.java_gateway import get_field

from acid_platform import Warehouse
from acid_platform.streaming import StreamingConnection, StrictDelimitedInputWriter

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("codec", ["ZLIB", "SNAPPY", "LZ4", "ZSTD", "NONE"])
def test_orc_java_reads_each_flush_length(local_wh: Warehouse, spark: Any, codec: str) -> None:
    t = local_wh.create_table(
        "t", [("id", "int"), ("v", "string")], properties={"orc.compress": codec}
    )
    conn = (
        StreamingConnection.builder(local_wh)
        .with_table("t")
        .with_transaction_batch_size(5)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .with_memory_limit(1)
        .connect()
    )
    delta = Path(t.spec.location) / "delta_0000001_0000005"
    lengths: list[tuple[int, int, int]] = []  # (flush length, rows, write id) per commit
    rows = 0
    for k in range(5):
        conn.begin_transaction()
        conn.write([f"{k * 100 + i},v{i}".encode() for i in range(10 + k)])
        conn.write([f"{k * 100 + 50 + i},w{i}".encode() for i in range(5)])
        if k == 2:
            conn.abort_transaction()
            continue
        conn.commit_transaction()
        rows += 15 + k
        side = (delta / "bucket_00000_flush_length").read_bytes()
        lengths.append((int.from_bytes(side[-8:], "big"), rows, k + 1))
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(str(delta / "bucket_00000"))
    for length, expected_rows, write_id in lengths:
        options = jvm.org.apache.orc.OrcFile.readerOptions(conf).maxLength(length)
        reader = jvm.org.apache.orc.OrcFile.createReader(path, options)
        assert reader.getNumberOfRows() == expected_rows
        assert reader.getCompressionKind().toString() == codec
        key_index = bytes(
            jvm.java.nio.charset.StandardCharsets.UTF_8.decode(
                reader.getMetadataValue("hive.acid.key.index")
            ).toString(),
            "utf-8",
        )
        assert key_index.count(b";") == reader.getStripes().size()
        batch = reader.getSchema().createRowBatch()
        records = reader.rows()
        seen = 0
        while records.nextBatch(batch):
            seen += get_field(batch, "size")
        records.close()
        assert seen == expected_rows
        stats = reader.getStatistics()
        assert stats[5].getMaximum() == write_id  # currentTransaction: the last committed
    conn.close()
