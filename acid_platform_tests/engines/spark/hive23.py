"""Hive's own ACID reader in the tests: Hive 2.3's ``AcidUtils`` and ``OrcInputFormat`` (the
``hive-exec`` jar in the PySpark wheel), driven as Hive's ``HiveInputFormat`` drives them for a
transactional table scan.

Hive copies the table's properties into the job before it asks ``OrcInputFormat`` for splits;
three of them decide what the reader does with a table that has no base yet:
``transactional=true`` and ``transactional_properties=default`` (split update: each insert
delta is read like a base, the delete deltas are merged into it; without them Hive 2.3 takes the
table for a legacy ACID table and builds no split that reads the insert deltas), and
``bucket_count`` (Hive 2.3 makes one split per bucket of a delta-only legacy table). Hive 2.3
has no write ids: per table, ours play its transaction ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

LONG_MAX = 2**63 - 1
#: (name, Hive type) of the columns read
Columns = Sequence[tuple[str, str]]
KV: Columns = (("k", "int"), ("v", "string"))


def _txns(spark: SparkSession, high_watermark: int) -> Any:
    """Hive 2.3's ValidReadTxnList: everything up to ``high_watermark`` committed."""
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


def ordered(rows: Iterable[Sequence[object]]) -> list[tuple[object, ...]]:
    """``rows`` as tuples, sorted (NULLs last in each column)."""
    return sorted((tuple(r) for r in rows), key=lambda r: [(v is None, v) for v in r])


def _value(field: Any, hive_type: str) -> object:
    if field is None:
        return None
    if hive_type in ("int", "bigint", "smallint", "tinyint"):
        return int(field.get())
    return str(field.toString())


def hive_23_rows(
    spark: SparkSession,
    path: Path,
    high_watermark: int,
    columns: Columns = KV,
    buckets: int = 1,
) -> list[tuple[object, ...]]:
    """Each row Hive 2.3's ``OrcInputFormat`` returns for an ACID table scan of ``path`` (a
    table's or a partition's directory), sorted; ``buckets``: the table's bucket count."""
    jvm = spark._jvm
    assert jvm is not None
    acid = jvm.org.apache.hadoop.hive.ql.io.AcidUtils
    job = jvm.org.apache.hadoop.mapred.JobConf(spark._jsc.hadoopConfiguration())  # type: ignore[union-attr]
    names = ",".join(n for n, _ in columns)
    types = ",".join(t for _, t in columns)
    for key, value in {
        "hive.txn.valid.txns": _txns(spark, high_watermark).writeToString(),
        "mapreduce.input.fileinputformat.inputdir": f"file://{path}",  # as_uri() escapes =
        # the table's properties, as HiveInputFormat copies them into the job
        "transactional": "true",
        "transactional_properties": "default",
        "bucket_count": str(buckets),
        "columns": names,
        "columns.types": types,
        "schema.evolution.columns": names,
        "schema.evolution.columns.types": types,
        "hive.io.file.readcolumn.ids": ",".join(str(i) for i in range(len(columns))),
        "hive.io.file.readcolumn.names": names,
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
                out.append(
                    tuple(_value(value.getFieldValue(i), t) for i, (_, t) in enumerate(columns))
                )
        finally:
            reader.close()
    return ordered(out)
