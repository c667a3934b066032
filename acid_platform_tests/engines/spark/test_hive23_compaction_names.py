"""Hive 2.3's own ACID code (``hive-exec`` in the PySpark wheel) on compaction output: Hive 4's
``base_N_v<T>`` makes its ``AcidUtils.getAcidState`` fail with the issue's NumberFormatException;
``acid.compactor.hive3.compatible`` output is listed, and its ``OrcInputFormat`` (the ACID
reader, ``OrcRawRecordMerger``) returns our rows from the compacted base (issue 14 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.compaction.config import HIVE3_COMPATIBLE
from acid_platform_tests.engines.spark.hive23 import hive_23_acid_state, hive_23_rows
from acid_platform_tests.helpers import acid_dirs, open_warehouse

pytestmark = pytest.mark.slow
KV = [("k", "int"), ("v", "string")]


def _compacted(wh: Warehouse, name: str, properties: dict[str, str]) -> Path:
    t = wh.create_table(name, KV, properties=properties)
    t.insert([{"k": k, "v": f"v{k}"} for k in range(5)])
    t.insert([{"k": k, "v": f"v{k}"} for k in range(5, 10)])
    t.update({"v": "'u'"}, where="k = 1")
    t.delete("k = 3")
    compact_table(wh, name, kind="major")
    run_cleaner(wh)
    return Path(t.spec.location)


def test_hive_23_reads_hive3_compatible_compaction_output(
    spark: SparkSession, tmp_path: Path
) -> None:
    with open_warehouse(tmp_path) as wh:
        hive4 = _compacted(wh, "h4", {})
        hive3 = _compacted(wh, "h3", {HIVE3_COMPATIBLE: "true"})
        (v4,) = acid_dirs(hive4)
        assert v4.startswith("base_0000004_v")
        # pyspark turns the Java exception into its own NumberFormatException
        with pytest.raises(Exception, match=r'^For input string: "0000004_v') as failed:
            hive_23_acid_state(spark, hive4, 10)
        assert type(failed.value).__name__ == "NumberFormatException"

        assert acid_dirs(hive3) == ["base_0000004"]
        ours = sorted((r["k"], r["v"]) for r in wh.table("h3").scan().to_arrow().to_pylist())
        assert ours == [(0, "v0"), (1, "u"), (2, "v2"), *[(k, f"v{k}") for k in range(4, 10)]]
        assert hive_23_acid_state(spark, hive3, 10) == ["base_0000004"]
        assert hive_23_rows(spark, hive3, 10) == ours

        # later writes on top of the Hive 3 named base: Hive 2.3 lists base + deltas
        t = wh.table("h3")
        t.insert([{"k": 100, "v": "after"}])
        t.delete("k = 4")
        assert hive_23_acid_state(spark, hive3, 10) == [
            "base_0000004",
            "delta_0000005_0000005_0000",
            "delete_delta_0000006_0000006_0000",
        ]
        # … and reads them: the insert delta like a base, the delete delta merged into both
        assert hive_23_rows(spark, hive3, 10) == [r for r in ours if r[0] != 4] + [(100, "after")]
