"""Hive's bucket of every row of a DataFrame, computed on the executors.

>>> # keyed = with_bucket_column(df, spec, "__bucket")   # int column: hash(bucket cols) % n
>>> # keyed.repartition(spec.num_buckets, "__bucket")    # one task per bucket

The hash is the table layer's (:func:`acid_platform.table.event_layout.hive_buckets`: Hive's
bucketing hash of the table's ``bucketing_version``) over the bucketing columns converted to the
table's types, so a bucket computed here is the bucket the writers put the row in.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, StructField, StructType

from acid_platform.metastore.model import TableSpec
from acid_platform.table.event_layout import hive_buckets
from acid_platform.table.schema import conform, table_schema


def with_bucket_column(df: DataFrame, spec: TableSpec, name: str) -> DataFrame:
    """``df`` (holding ``spec``'s bucketing columns, any case) with an ``int`` column ``name``:
    each row's bucket in the bucketed table ``spec``."""
    if not spec.num_buckets:
        raise ValueError(f"table {spec.full_name} is not bucketed")
    schema = StructType([*df.schema.fields, StructField(name, IntegerType())])
    return df.mapInArrow(lambda it: bucket_batches(spec, it, name), schema)


def bucket_batches(
    spec: TableSpec, batches: Iterator[pa.RecordBatch], name: str
) -> Iterator[pa.RecordBatch]:
    """Each batch with its rows' buckets appended as a last ``int32`` column ``name``."""
    target = table_schema(spec)
    bucket_schema = pa.schema([target.field(c) for c in spec.bucket_columns])
    for batch in batches:
        rows = pa.Table.from_batches([batch])
        present = {c.lower(): c for c in rows.column_names}
        cols = rows.select([present[c] for c in spec.bucket_columns if c in present])
        typed = conform(
            spec.full_name,
            cols.rename_columns([c.lower() for c in cols.column_names]),
            bucket_schema,
        )
        buckets = hive_buckets(spec, typed).astype(np.int32)
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(buckets, pa.int32())],
            names=[*batch.schema.names, name],
        )


__all__ = ["bucket_batches", "with_bucket_column"]
