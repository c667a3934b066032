"""Table schemas as Spark sees them, and Arrow batches in the exact form Spark expects.

Hive types map to Arrow in the format layer (:func:`acid_platform.format.to_arrow_type`) and from
Arrow to Spark with PySpark's own rules; Hive's ``timestamp`` (a wall-clock value without a zone)
becomes Spark's ``TIMESTAMP_NTZ``. A batch handed to Spark must carry exactly the Arrow schema
Spark derives from the Spark schema (microsecond timestamps, ``string`` not ``large_string``), so
:func:`to_spark_batch` casts; Hive's nanoseconds are truncated to Spark's microseconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from acid_platform.errors import UnknownColumnError
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_FIELDS, ROW_ID_TYPE
from acid_platform.metastore.model import TableSpec
from acid_platform.table.schema import table_schema


def table_arrow_schema(spec: TableSpec, with_row_id: bool = False) -> pa.Schema:
    """Arrow schema of the table as the data source shows it: [``row__id``,] data columns,
    partition columns."""
    schema = table_schema(spec)
    if with_row_id:
        schema = pa.schema([pa.field(ROW_ID_COLUMN, ROW_ID_TYPE), *schema])
    return schema


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (timestamps without zone -> ``TIMESTAMP_NTZ``)."""
    return from_arrow_schema(schema, prefer_timestamp_ntz=True)


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of batches for a Spark schema."""
    return to_arrow_schema(schema, timezone="UTC")


def output_columns(
    spec: TableSpec, schema: StructType, with_row_id: bool
) -> tuple[bool, list[str], list[str]]:
    """What a read with Spark schema ``schema`` needs: ``(row__id?, data columns, partition
    columns)``. Unknown names are an :class:`UnknownColumnError` naming the table."""
    table = table_arrow_schema(spec, with_row_id=True)
    data = {c for c, _ in spec.columns}
    parts = set(spec.partition_column_names)
    want_row_id = False
    data_cols: list[str] = []
    part_cols: list[str] = []
    for name in (f.name.lower() for f in schema.fields):
        source = row_level_source(name)
        if source == ROW_ID_COLUMN:
            want_row_id = True
        elif source != name:  # a deleted row's partition value: read the partition column
            if source not in part_cols:
                part_cols.append(source)
        elif name in data:
            data_cols.append(name)
        elif name in parts:
            part_cols.append(name)
        else:
            raise UnknownColumnError(
                f"table {spec.full_name} has no column {name!r}; its columns are "
                f"{[n for n in table.names if with_row_id or n != ROW_ID_COLUMN]}"
            )
    return want_row_id, data_cols, part_cols


#: The metadata columns of a row-level operation's scan (:file:`jvm/AcidRowLevel.java`): the
#: fields of ROW__ID, and ``_acid_p_<c>``, the value of partition column ``c``.
ROW_LEVEL_ROW_ID = {f"_acid_{name}": i for i, name in enumerate(ROW_ID_FIELDS)}
ROW_LEVEL_PARTITION = "_acid_p_"


def row_level_source(name: str) -> str:
    """The column a scan's column ``name`` is read from: ``row__id`` for a ROW__ID field, the
    partition column for a partition value, else ``name`` itself."""
    if name in ROW_LEVEL_ROW_ID:
        return ROW_ID_COLUMN
    if name.startswith(ROW_LEVEL_PARTITION):
        return name[len(ROW_LEVEL_PARTITION) :]
    return name


def scan_column(batch: pa.RecordBatch, name: str) -> pa.Array:
    """Column ``name`` (lower case) of a scan's output from a batch read with ROW__ID and the
    partition columns (see :func:`row_level_source`)."""
    source = row_level_source(name)
    if source == ROW_ID_COLUMN and name != ROW_ID_COLUMN:
        return batch.column(ROW_ID_COLUMN).field(ROW_LEVEL_ROW_ID[name])
    return batch.column(source)


def to_spark_batch(
    batch: pa.RecordBatch, target: pa.Schema, unscaled: frozenset[str] = frozenset()
) -> pa.RecordBatch:
    """``batch`` with exactly ``target``'s names and types (columns picked by name); a decimal
    column named in ``unscaled`` that ``target`` wants as ``int64`` becomes its unscaled values
    (:func:`unscaled_int64`: what the JVM scan asks for, see :file:`jvm/AcidScans.java`)."""
    if batch.schema.equals(target):
        return batch
    arrays = []
    for f in target:
        col = batch.column(f.name)
        if col.type == f.type:
            arrays.append(col)
        elif f.name.lower() in unscaled and f.type == pa.int64():
            arrays.append(unscaled_int64(col))
        else:
            arrays.append(col.cast(f.type, safe=False))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def unscaled_int64(array: pa.Array) -> pa.Array:
    """The unscaled values of a ``decimal128`` array of at most 18 digits as ``int64``: the low
    8 bytes of each little-endian 16-byte value (such a value fits them), nulls kept.

    >>> import decimal
    >>> unscaled_int64(pa.array([decimal.Decimal("-1.25"), None], pa.decimal128(5, 2))).to_pylist()
    [-125, None]
    """
    typ = array.type
    if not pa.types.is_decimal128(typ) or typ.precision > 18:
        raise TypeError(f"not a decimal of at most 18 digits: {typ}")
    end = array.offset + len(array)
    validity, data = array.buffers()
    words = np.frombuffer(data, dtype="<i8", count=2 * end)[0::2]
    return pa.Array.from_buffers(
        pa.int64(),
        len(array),
        [validity, pa.py_buffer(np.ascontiguousarray(words, dtype=np.int64))],
        null_count=array.null_count,
        offset=array.offset,
    )


#: Rows per Arrow batch handed to Spark. A stripe decodes as one batch (often a whole split);
#: sent whole, the JVM converts it only after Python has decoded all of it, and it no longer
#: fits in cache. Zero-copy slices let the JVM convert one while Python sends the next
#: (benchmarks/REPORT.md, bench_spark: the scan's CPU 3.4 s → 2.8 s on store_sales SF0.3).
BATCH_ROWS = 32_768


def spark_batches(
    batch: pa.RecordBatch,
    target: pa.Schema,
    rows: int = BATCH_ROWS,
    unscaled: frozenset[str] = frozenset(),
) -> Iterator[pa.RecordBatch]:
    """``batch`` as :func:`to_spark_batch` gives it, in zero-copy slices of at most ``rows``
    rows (a batch of no more rows as itself)."""
    out = to_spark_batch(batch, target, unscaled)
    if out.num_rows <= rows:
        yield out
        return
    for start in range(0, out.num_rows, rows):
        yield out.slice(start, rows)


def names_of(schema: StructType) -> Sequence[str]:
    """Lower-cased field names."""
    return [f.name.lower() for f in schema.fields]
