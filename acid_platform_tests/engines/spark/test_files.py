"""A Spark task's event files are the embedded writer's, byte for byte (one event layout).

Runs :class:`~acid_platform.engines.spark.files.EventFiles` in this process, as an executor
would; no SparkSession needed.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acid_platform.engines.spark.files import EventFiles
from acid_platform.format import Location, encode_bucket
from acid_platform.metastore import TableSpec
from acid_platform.table.writes import EventSink, WriteMetrics

COLS = (("id", "int"), ("v", "string"))
ROWS = pa.table({"id": pa.array(range(100), pa.int32()), "v": [f"v{i}" for i in range(100)]})


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "spec",
    [
        TableSpec("default", "t", COLS),
        TableSpec(
            "default",
            "b",
            COLS,
            bucket_columns=("id",),
            num_buckets=3,
            properties={"orc.compress": "snappy"},
        ),
    ],
    ids=["unbucketed", "bucketed-snappy"],
)
def test_spark_task_files_equal_embedded_files(tmp_path: Path, spec: TableSpec) -> None:
    fs = pafs.LocalFileSystem()
    embedded, spark = tmp_path / "embedded", tmp_path / "spark"
    ids = pa.table(
        {
            "writeid": pa.array([1, 1, 1], pa.int64()),
            "bucketid": pa.array(
                [encode_bucket(0), encode_bucket(2), encode_bucket(0)], pa.int32()
            ),
            "rowid": pa.array([3, 4, 9], pa.int64()),
        }
    )

    sink = EventSink(spec, Location(fs, str(embedded)), 2)
    metrics = sink.write_inserts("", ROWS, 1)
    metrics.add(sink.write_deletes("", ids, 1))

    task = EventFiles(spec, str(spark), fs, 2, writer_id=0)
    task.write_inserts("", ROWS, 1)
    task.write_deletes("", ids, 1)
    files = task.close()

    assert _tree(embedded) == _tree(spark)
    assert len(_tree(spark)) == len(files) + 2  # and one _orc_acid_version per directory
    from_spark = WriteMetrics.from_files(files)
    assert (from_spark.rows_inserted, from_spark.rows_deleted) == (100, 3)
    assert (metrics.rows_inserted, metrics.rows_deleted) == (100, 3)
    assert from_spark.bytes_written == metrics.bytes_written
    assert len(from_spark.files) == len(metrics.files)
