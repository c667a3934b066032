"""Plain data files: what an insert-only (micro-managed, "MM") table holds in its directories.

An insert-only table (``'transactional'='true', 'transactional_properties'='insert_only'``)
keeps Hive's ``base_w`` / ``delta_w_w_s`` directories, but each file in them holds just the
table's columns — no ACID event struct, no ROW__IDs, no ``_orc_acid_version`` — named as
Hive's ``FileSinkOperator`` names a task's output: ``000000_0`` (``%06d`` writer or bucket id,
``_0`` attempt). The files are ORC, Parquet or text (``STORED AS ORC | PARQUET | TEXTFILE``):

* **ORC**: the table's columns as the root struct, written as every other ORC file of this
  project (pre-1970 fractions as ORC Java stores them, ``char``/``varchar`` types and the
  proleptic Gregorian calendar in the footer; see docs/values.md), codec ``orc.compress``;
* **Parquet**: pyarrow's writer, timestamps as INT96 (Hive's default,
  ``hive.parquet.write.int64.timestamp=false``), codec ``parquet.compression`` (default
  uncompressed, as Hive's);
* **text**: Hive's ``LazySimpleSerDe`` defaults — fields separated by ``\\x01``, rows by
  ``\\n``, NULL as ``\\N``, no escaping; values as Hive prints them (``true``, Java's
  ``Double.toString``, ``yyyy-MM-dd HH:mm:ss[.fffffffff]``). A value holding ``\\x01``,
  ``\\n`` or ``\\r`` could not be read back, and is refused (Hive would write it and misread it).
  Only primitive columns.

>>> import pyarrow as pa
>>> java_double(1e7), java_double(0.001), java_double(123.5), java_double(1e-4)
('1.0E7', '0.001', '123.5', '1.0E-4')
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyarrow.parquet as pq

from acid_platform.errors import AcidFormatError, AcidSchemaError
from acid_platform.format import types as t
from acid_platform.format.fs import create_new
from acid_platform.format.orc_footer import amend_footer, char_columns
from acid_platform.format.orc_timestamps import encode_table
from acid_platform.format.wide_timestamps import NARROW, WIDE, conform_wide, has_wide_type

ORC, PARQUET, TEXTFILE = "orc", "parquet", "textfile"
#: The storage formats of an insert-only table (a full ACID table is always ORC).
FILE_FORMATS = (ORC, PARQUET, TEXTFILE)
#: The table property naming the codec of a Parquet table (Hive's, and its default).
PARQUET_COMPRESSION_PROPERTY = "parquet.compression"
DEFAULT_PARQUET_COMPRESSION = "UNCOMPRESSED"
FIELD_DELIMITER = "\x01"
NULL_TEXT = "\\N"
_PARQUET_CODECS = {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd"}


def normalize_file_format(text: str, table: str = "") -> str:
    """``STORED AS`` text as one of :data:`FILE_FORMATS` (``TEXTFILE``, ``text``, …), or
    :class:`AcidFormatError`."""
    name = text.strip().lower()
    name = TEXTFILE if name in ("text", "textfile") else name
    if name not in FILE_FORMATS:
        where = f"table {table}: " if table else ""
        raise AcidFormatError(
            f"{where}STORED AS {text.upper()} is not supported; insert-only tables are stored "
            f"as one of {[f.upper() for f in FILE_FORMATS]}"
        )
    return name


def check_text_columns(schema: pa.Schema, table: str) -> None:
    """A text table holds primitive columns only (the nested delimiters are not written)."""
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        raise AcidSchemaError(
            f"table {table}: STORED AS TEXTFILE holds primitive columns only here; "
            f"{nested} are nested (use ORC or Parquet)"
        )


def write_plain_file(
    filesystem: pafs.FileSystem,
    path: str,
    rows: pa.Table,
    schema: pa.Schema,
    file_format: str,
    *,
    properties: Mapping[str, str],
    orc_codec: str,
    stripe_size: int,
) -> int:
    """Write ``rows`` (cast to ``schema``, the table's data columns) as one plain data file,
    created exclusively at ``path``; returns its size in bytes."""
    try:
        selected = rows.select(schema.names)
        if any(has_wide_type(f.type) for f in selected.schema):
            # timestamps beyond the nanosecond range, at microseconds (:mod:`.wide_timestamps`)
            wide = conform_wide(selected, schema, path)
            table = t.conform_chars(wide, wide.schema)
        else:
            table = t.conform_chars(selected.cast(schema), schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError) as exc:
        raise AcidSchemaError(f"{path}: rows do not fit {t.schema_to_hive(schema)}: {exc}") from exc
    if file_format == ORC:
        data = encode_table(table, orc_codec, stripe_size)
        data = amend_footer(data, char_columns(schema), source=path)
    elif file_format == PARQUET:
        data = _parquet_bytes(table, path, properties)
    elif file_format == TEXTFILE:
        if any(f.type == WIDE for f in table.schema):
            raise AcidSchemaError(
                f"{path}: a text table holds timestamps of the nanosecond range here "
                "(1677-09-21 to 2262-04-11); use ORC or Parquet for Hive's whole range"
            )
        data = encode_text(table, path)
    else:
        raise AcidFormatError(f"{path}: unknown file format {file_format!r}")
    with create_new(filesystem, path) as out:
        out.write(data)
    return len(data)


def read_plain_batches(
    filesystem: pafs.FileSystem,
    path: str,
    file_format: str,
    columns: Sequence[str],
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """The ``columns`` present in a Parquet or text file, batch by batch (row groups for
    Parquet), as the file holds them (the caller casts to the table's types)."""
    if file_format == PARQUET:
        with filesystem.open_input_file(path) as source:
            pf = pq.ParquetFile(source)
            present = [c for c in columns if c in pf.schema_arrow.names]
            for i in range(pf.num_row_groups):
                if not present:
                    yield _counted(pf.metadata.row_group(i).num_rows)
                    continue
                yield from pf.read_row_group(i, columns=present).to_batches()
        return
    if file_format == TEXTFILE:
        with filesystem.open_input_stream(path) as stream:
            data = stream.read()
        table = decode_text(data, schema, path)
        yield from table.select([c for c in columns if c in table.column_names]).to_batches()
        if not columns and table.num_rows:
            yield _counted(table.num_rows)
        return
    raise AcidFormatError(f"{path}: {file_format!r} files are not read here")


def count_plain_rows(filesystem: pafs.FileSystem, path: str, file_format: str) -> int:
    """The rows of one plain data file, from its footer (ORC, Parquet) or its lines (text)."""
    with filesystem.open_input_file(path) as source:
        if file_format == ORC:
            return int(po.ORCFile(source).nrows)
        if file_format == PARQUET:
            return int(pq.ParquetFile(source).metadata.num_rows)
        data = source.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def wide_parquet_columns(
    filesystem: pafs.FileSystem, paths: Sequence[str], schema: pa.Schema
) -> frozenset[str]:
    """The ``timestamp[ns]`` columns of ``schema`` that a Parquet file of ``paths`` stores as
    microseconds (written so because a value lies beyond the nanosecond range)."""
    names = {f.name for f in schema if f.type == NARROW}
    found: set[str] = set()
    for path in paths:
        if found == names:
            break
        with filesystem.open_input_file(path) as source:
            stored = pq.ParquetFile(source).schema_arrow
        found |= {f.name for f in stored if f.name in names and f.type == WIDE}
    return frozenset(found)


def _counted(n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_struct_array(pa.array([{}] * n, pa.struct([])))


# --------------------------------------------------------------------------- Parquet


def _parquet_bytes(table: pa.Table, path: str, properties: Mapping[str, str]) -> bytes:
    codec = properties.get(PARQUET_COMPRESSION_PROPERTY, DEFAULT_PARQUET_COMPRESSION).upper()
    if codec not in _PARQUET_CODECS:
        raise AcidFormatError(
            f"{path}: parquet.compression={codec!r} is not one of {sorted(_PARQUET_CODECS)}"
        )
    sink = pa.BufferOutputStream()
    # Hive's INT96, unless a value lies beyond the nanosecond range INT96 holds here: then
    # INT64 microseconds (TIMESTAMP_MICROS, which Hive 3.1.3+ and 4 read)
    wide = any(f.type == WIDE for f in table.schema)
    pq.write_table(
        table,
        sink,
        compression=_PARQUET_CODECS[codec],
        use_deprecated_int96_timestamps=not wide,
        coerce_timestamps="us" if wide else None,
        store_schema=False,
    )
    return bytes(sink.getvalue().to_pybytes())


# --------------------------------------------------------------------------- text


def encode_text(table: pa.Table, path: str) -> bytes:
    """Rows as ``LazySimpleSerDe`` writes them with its defaults (see module docs)."""
    check_text_columns(table.schema, path)
    columns = [_text_values(table.column(i), path) for i in range(table.num_columns)]
    out = io.StringIO()
    for row in zip(*columns, strict=True) if columns else [() for _ in range(table.num_rows)]:
        out.write(FIELD_DELIMITER.join(row))
        out.write("\n")
    return out.getvalue().encode("utf-8")


def _text_values(column: pa.ChunkedArray, path: str) -> list[str]:
    typ = column.type
    values = column.to_pylist()
    if pa.types.is_boolean(typ):
        return [NULL_TEXT if v is None else ("true" if v else "false") for v in values]
    if pa.types.is_floating(typ):
        return [NULL_TEXT if v is None else java_double(v) for v in values]
    if pa.types.is_timestamp(typ):
        return [NULL_TEXT if v is None else _timestamp_text(v) for v in _nanos(column)]
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        import base64

        return [NULL_TEXT if v is None else base64.b64encode(v).decode() for v in values]
    texts = pc.cast(column, pa.string()).to_pylist()
    for v in texts:
        if v is not None and any(c in v for c in (FIELD_DELIMITER, "\n", "\r")):
            raise AcidFormatError(
                f"{path}: value {v!r} holds a field or line delimiter, which a text table "
                "cannot store (Hive would misread it); use ORC or Parquet"
            )
    return [NULL_TEXT if v is None else v for v in texts]


def _nanos(column: pa.ChunkedArray) -> list[int | None]:
    return pc.cast(column, pa.timestamp("ns")).cast(pa.int64()).to_pylist()


def _timestamp_text(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    import datetime as dt

    text = (dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
    return text if not frac else f"{text}.{frac:09d}".rstrip("0")


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` prints it (what Hive's text serde writes)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text else f"{text}.0"
    mantissa, exponent = f"{value:.{_shortest(value)}e}".split("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


def _shortest(value: float) -> int:
    for precision in range(17):
        if float(f"{value:.{precision}e}") == value:
            return precision
    return 17


def decode_text(data: bytes, schema: pa.Schema, path: str) -> pa.Table:
    """A text file's rows in ``schema``: missing trailing fields are NULL, extra ones ignored,
    and a value that does not parse as its column's type is NULL (as Hive reads them)."""
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(schema)
    cells: list[list[str | None]] = [[] for _ in range(width)]
    for line in lines:
        fields = line.split(FIELD_DELIMITER)
        for i in range(width):
            value = fields[i] if i < len(fields) else None
            cells[i].append(None if value is None or value == NULL_TEXT else value)
    arrays = [_parse(pa.array(cells[i], pa.string()), f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(arrays, schema=pa.schema([(f.name, f.type) for f in schema]))


def _parse(values: pa.Array, typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return values.cast(typ)
    if pa.types.is_boolean(typ):
        lowered = pc.utf8_lower(values)
        return pc.if_else(
            pc.equal(lowered, "true"),
            True,
            pc.if_else(pc.equal(lowered, "false"), False, pa.scalar(None, pa.bool_())),
        )
    if pa.types.is_binary(typ):
        import base64

        return pa.array(
            [None if v is None else base64.b64decode(v) for v in values.to_pylist()], typ
        )
    try:
        return values.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_parse_one(v, typ) for v in values.to_pylist()], typ)


def _parse_one(value: str | None, typ: pa.DataType) -> object:
    if value is None:
        return None
    special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
    if pa.types.is_floating(typ) and value in special:
        return special[value]
    try:
        return pa.scalar(value).cast(typ).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


__all__ = [
    "DEFAULT_PARQUET_COMPRESSION",
    "FILE_FORMATS",
    "ORC",
    "PARQUET",
    "PARQUET_COMPRESSION_PROPERTY",
    "TEXTFILE",
    "check_text_columns",
    "count_plain_rows",
    "decode_text",
    "encode_text",
    "java_double",
    "normalize_file_format",
    "read_plain_batches",
    "wide_parquet_columns",
    "write_plain_file",
]
