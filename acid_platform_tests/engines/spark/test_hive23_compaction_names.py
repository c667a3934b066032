"""Hive 2.3's own ACID code (``hive-exec`` in the PySpark wheel) on compaction output: Hive 4's
``base_N_v<T>`` makes its ``AcidUtils.getAcidState`` fail with the issue's NumberFormatException;
``acid.compactor.hive3.compatible`` output is listed, and its ``OrcInputFormat`` (the ACID
reader, ``OrcRawRecordMerger``) returns our rows from the compacted base (issue 14 item 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.compaction.config import HIVE3_COMPATIBLE
from acid_platform_tests.helpers import acid_dirs, open_warehouse

pytestmark = pytest.mark.slow
KV = [("k", "int"), ("v", "string")]
LONG_MAX = 2**63 - 1


def _txns(spark: SparkSession, high_watermark: int) -> Any:
    """Hive 2.3's ValidReadTxnList: everything up to ``high_watermark`` committed (Hive 2.3
    has no write ids: per table, ours play its txn ids)."""
    jvm = spark._jvm
    assert jvm is not None
    return jvm.org.apache.hadoop.hive.common.ValidReadTxnList(f"{high_watermark}:{LONG_MAX}::")


def hive_23_acid_state(spark: SparkSession, path: Path, high_watermark: int) -> list[str]:
    """The base and current deltas Hive 2.3's ``AcidUtils.getAcidState`` selects (names)."""
    jvm = spark._jvm
    assert jvm is not None
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
    state = jvm.org.apache.hadoop.hive.ql.io.AcidUtils.getAcidState(
        jvm.org.apache.hadoop.fs.Path(str(path)), conf, _txns(spark, high_watermark)
    )
    base = state.getBaseDirectory()
    names = [] if base is None else [base.getName()]
    return names + [d.getPath().getName() for d in state.getCurrentDirectories()]


def hive_23_rows(spark: SparkSession, path: Path, high_watermark: int) -> list[tuple[int, str]]:
    """(k, v) of each row Hive 2.3's ``OrcInputFormat`` returns for an ACID table scan."""
    jvm = spark._jvm
    assert jvm is not None
    acid = jvm.org.apache.hadoop.hive.ql.io.AcidUtils
    job = jvm.org.apache.hadoop.mapred.JobConf(spark._jsc.hadoopConfiguration())  # type: ignore[union-attr]
    job.set("hive.txn.valid.txns", _txns(spark, high_watermark).writeToString())
    job.set("mapreduce.input.fileinputformat.inputdir", path.as_uri())
    for key, value in {
        "columns": "k,v",
        "columns.types": "int,string",
        "schema.evolution.columns": "k,v",
        "schema.evolution.columns.types": "int,string",
        "hive.io.file.readcolumn.ids": "0,1",
        "hive.io.file.readcolumn.names": "k,v",
    }.items():
        job.set(key, value)
    acid.setTransactionalTableScan(job, True)
    acid.setAcidOperationalProperties(job, acid.AcidOperationalProperties.getDefault())
    fmt = jvm.org.apache.hadoop.hive.ql.io.orc.OrcInputFormat()
    out = []
    for split in fmt.getSplits(job, 1):
        reader = fmt.getRecordReader(split, job, jvm.org.apache.hadoop.mapred.Reporter.NULL)
        key, value = reader.createKey(), reader.createValue()
        try:
            while reader.next(key, value):
                out.append((value.getFieldValue(0).get(), value.getFieldValue(1).toString()))
        finally:
            reader.close()
    return sorted(out)


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
