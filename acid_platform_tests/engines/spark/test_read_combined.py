"""The ``acid`` source plans one Spark task per group of small splits, not one per split
(issue 34 item 3): a read of 300 one-day partitions is 10 tasks that read every row once.
The reader is planned and read as Spark's Python worker does, without a Spark session."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from acid_platform.engines.spark.options import SourceOptions, warehouse_options
from acid_platform.engines.spark.reader import AcidSourceReader
from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform_tests.helpers import open_warehouse


def test_small_splits_share_a_spark_task(tmp_path: Path) -> None:
    with open_warehouse(tmp_path) as wh:
        t = wh.create_table("days", [("id", "bigint")], partition_columns=[("d", "int")])
        ids = list(range(3000))
        t.insert(pa.table({"id": pa.array(ids, pa.int64()), "d": [i // 10 for i in ids]}))
        options = SourceOptions.parse({"path": "default.days"}, warehouse_options(wh))
        reader = AcidSourceReader(options, t.spec, spark_schema(table_arrow_schema(t.spec)))
        slots = reader.partitions()
        # each split counts as its bytes plus Spark's 4 MiB open cost, a task takes 128 MiB
        # of that: 32 small splits a task
        assert len(slots) == 10
        rows = [r for s in slots for b in reader.read(s) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == ids
    assert {r["d"] for r in rows} == set(range(300))
