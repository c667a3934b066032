"""The Mutation API on Spark: prepare a change set as the documentation prescribes, and apply it
from the executors.

>>> # client = MutatorClient(wh, ["db.sales", "db.ledger"])
>>> # txn = client.new_transaction().begin()
>>> # prepared = prepare_change_set(spark, txn, "db.sales", changes_df, key=["id"])
>>> # reports = apply_change_set(prepared, txn.table("db.sales"))   # coordinators on executors
>>> # txn.commit(reports + other_reports)                           # driver: all or nothing

:func:`prepare_change_set` reads the table at the transaction's snapshot on Spark (the ``acid``
data source: ROW__ID, the key and the partition columns only), LEFT JOINs the changes to it on
the key (a change means what it means in the MERGE of :mod:`.changes`; a row matched twice raises
:class:`~acid_platform.errors.CardinalityViolationError`), stamps each insert with its bucket
(Hive's hash, on the executors), takes the ROW__ID and partition of the matched row for updates
and deletes, then **groups** — ``repartition`` by (partition columns, bucket), so each group
lives in one Spark partition — and **sorts** each Spark partition by (partition, bucket,
ROW__ID, then value). :func:`apply_change_set` runs one :class:`~.coordinator.MutatorCoordinator`
per Spark partition (``mapInArrow``) and collects the reports on the driver; a failed task
removes its files and fails the job, which raises the task's error (typed) on the driver —
abort the transaction then.

This module lives in ``streaming/`` (above ``engines/``), not in ``engines/spark/``: it drives
the coordinator, and ``engines/`` may not import ``streaming/``. What is Spark-generic — Hive's
bucket of each row (:func:`acid_platform.engines.spark.buckets.with_bucket_column`) and reading a
table at a given snapshot (the ``acid`` source's ``valid_txns`` / ``valid_write_ids`` options) —
is in ``engines/spark`` and used from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from acid_platform.engines.spark import SparkEngine
from acid_platform.engines.spark.buckets import with_bucket_column
from acid_platform.engines.spark.dml import task_error
from acid_platform.engines.spark.schema import spark_schema
from acid_platform.format import (
    ROW_ID_COLUMN,
    ROW_ID_FIELDS,
    ROW_ID_TYPE,
    encode_bucket,
)
from acid_platform.streaming.mutate.buckets import UNASSIGNED
from acid_platform.streaming.mutate.changes import cardinality_error, check_key
from acid_platform.streaming.mutate.coordinator import MUTATION, MutatorCoordinator
from acid_platform.streaming.mutate.report import MutationReport
from acid_platform.streaming.mutate.table import AcidTable
from acid_platform.table.row_order import orderable_columns
from acid_platform.table.schema import data_schema, partition_schema

if TYPE_CHECKING:
    from acid_platform.streaming.mutate.client import MutationTransaction

_BUCKET = "__acid_bucket"
_T = "__acid_t_"  # prefix of the target's columns in the join


def prepare_change_set(
    spark: SparkSession,
    txn: MutationTransaction,
    table: str,
    changes: DataFrame,
    key: Sequence[str],
    *,
    mutation_column: str = MUTATION,
    partitions: int | None = None,
) -> DataFrame:
    """The change set as a DataFrame of prepared batches (see module docs): columns
    :data:`~.coordinator.MUTATION`, ``row__id``, data and partition columns; each (partition,
    bucket) group in one of ``partitions`` Spark partitions (default
    ``spark.sql.shuffle.partitions``), in order."""
    handle = txn.table(table)
    spec = handle.spec
    keys = check_key(spec, key, changes.columns)
    present = {c.lower(): c for c in changes.columns}
    part_cols = list(spec.partition_column_names)
    target = read_at_snapshot(spark, txn, handle, list(dict.fromkeys([*keys, *part_cols])))
    t = target.select([F.col(c).alias(_T + c) for c in target.columns])
    on = [F.col(present[k]) == F.col(_T + k) for k in keys]
    joined = changes.join(t, on=_and(on), how="left")
    code = F.lower(F.substring(F.col(present[mutation_column.lower()]).cast("string"), 1, 1))
    found = F.col(_T + ROW_ID_COLUMN).isNotNull()
    _check_cardinality(joined.where(found), handle, part_cols)
    is_insert = (code == "i") & ~found
    joined = joined.where(is_insert | (found & code.isin("u", "d")))
    insert_flag = "__acid_insert"
    joined = joined.withColumn(insert_flag, is_insert).withColumn("__acid_code", code)
    data_fields = data_schema(spec)
    typed = [
        (F.col(present[f.name]) if f.name in present else F.lit(None))
        .cast(spark_schema(pa.schema([f])).fields[0].dataType)
        .alias(f.name)
        for f in data_fields
    ]
    joined = joined.select(
        "*", *[c.alias("__acid_d_" + f.name) for c, f in zip(typed, data_fields, strict=True)]
    )
    if spec.num_buckets:  # Hive's hash of the change's bucketing columns (for inserts)
        stamped = with_bucket_column(joined, spec, _BUCKET)
    else:
        stamped = joined.withColumn(_BUCKET, F.lit(0))
    row_id = _row_id(F.col(insert_flag), F.col(_BUCKET), F.col(_T + ROW_ID_COLUMN))
    part_types = {
        f.name: spark_schema(pa.schema([f])).fields[0].dataType for f in partition_schema(spec)
    }
    parts = [
        F.when(F.col(insert_flag), F.col(present[c]) if c in present else F.lit(None))
        .otherwise(F.col(_T + c))
        .cast(part_types[c])
        .alias(c)
        for c in part_cols
    ]
    mutation = (
        F.when(F.col(insert_flag), F.lit("insert"))
        .when(F.col("__acid_code") == "u", F.lit("update"))
        .otherwise(F.lit("delete"))
    )
    out = stamped.select(
        mutation.alias(MUTATION),
        row_id.alias(ROW_ID_COLUMN),
        *[F.col("__acid_d_" + f.name).alias(f.name) for f in data_fields],
        *parts,
    )
    bucket = _bucket_of(F.col(f"{ROW_ID_COLUMN}.bucketid"))
    out = out.withColumn(_BUCKET, bucket)
    n = partitions or int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    grouped = out.repartition(n, *[F.col(c) for c in part_cols], F.col(_BUCKET))
    order = [
        *[F.col(c).asc_nulls_first() for c in part_cols],
        F.col(_BUCKET).asc(),
        *[F.col(f"{ROW_ID_COLUMN}.{f}").asc() for f in ROW_ID_FIELDS],
        *[F.col(c).asc_nulls_first() for c in orderable_columns(data_fields)],
    ]
    return grouped.sortWithinPartitions(*order).drop(_BUCKET)


def apply_change_set(prepared: DataFrame, table: AcidTable) -> list[MutationReport]:
    """Apply a prepared change set with one coordinator per Spark partition, on the executors;
    returns their reports (for ``txn.commit``). A failed task raises its error here."""
    rows = prepared.mapInArrow(lambda it: _apply_task(table, it), "report STRING")
    try:
        collected = rows.collect()
    except Exception as exc:
        raise task_error(exc, table.spec) from exc
    return [MutationReport.from_json(r["report"]) for r in collected]


def read_at_snapshot(
    spark: SparkSession, txn: MutationTransaction, table: AcidTable, columns: Sequence[str]
) -> DataFrame:
    """``row__id`` and ``columns`` of a table of the transaction, read by Spark at the
    transaction's snapshot (only those columns are read)."""
    fields = [pa.field(ROW_ID_COLUMN, ROW_ID_TYPE)]
    schema = data_schema(table.spec)
    parts = partition_schema(table.spec)
    for c in columns:
        fields.append(schema.field(c) if c in schema.names else parts.field(c))
    return (
        SparkEngine(spark)
        .reader(txn.client.warehouse)
        .schema(spark_schema(pa.schema(fields)))
        .options(
            table=table.name,
            with_row_id="true",
            valid_txns=table.valid_txns,
            valid_write_ids=table.valid_write_ids,
        )
        .load()
    )


# --------------------------------------------------------------------------- helpers


def _apply_task(table: AcidTable, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    coordinator = MutatorCoordinator(table)
    for batch in batches:
        if batch.num_rows:
            coordinator.mutate(batch)
    report = coordinator.close()
    yield pa.RecordBatch.from_pydict({"report": [report.to_json()]})


def _row_id(is_insert: Column, bucket: Column, matched: Column) -> Column:
    unassigned = F.lit(UNASSIGNED).cast("bigint")
    stamped = F.struct(
        unassigned.alias(ROW_ID_FIELDS[0]),
        (F.lit(encode_bucket(0)) + F.shiftleft(bucket, 16)).cast("int").alias(ROW_ID_FIELDS[1]),
        unassigned.alias(ROW_ID_FIELDS[2]),
    )
    return F.when(is_insert, stamped).otherwise(matched)


def _bucket_of(bucket_property: Column) -> Column:
    """The bucket id of a bucket property (codec V1; V0 values are the bucket id)."""
    version = F.shiftrightunsigned(bucket_property, 29)
    return F.when(version == 0, bucket_property).otherwise(
        F.shiftright(bucket_property.bitwiseAND(F.lit(0x0FFF0000)), 16)
    )


def _check_cardinality(matched: DataFrame, table: AcidTable, part_cols: list[str]) -> None:
    keys = [F.col(_T + ROW_ID_COLUMN), *[F.col(_T + c) for c in part_cols]]
    twice = matched.groupBy(*keys).count().where(F.col("count") > 1).limit(1).collect()
    if twice:
        raise cardinality_error(table, *twice[0][0])


def _and(conditions: list[Column]) -> Column:
    out = conditions[0]
    for c in conditions[1:]:
        out = out & c
    return out


__all__ = ["apply_change_set", "prepare_change_set", "read_at_snapshot"]
