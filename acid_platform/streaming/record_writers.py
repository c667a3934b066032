"""Record writers: what turns the records a streaming client writes into rows of the table.

Hive's ``StrictDelimitedInputWriter``, ``StrictJsonWriter`` and ``StrictRegexWriter`` take
records as bytes; :class:`ArrowRecordWriter` and :class:`PandasRecordWriter` take whole Arrow
tables / record batches and pandas frames. A record carries the table's data columns in order,
followed by its partition columns when the connection partitions dynamically (as in Hive).

Each writer's :meth:`~RecordWriter.parse` returns an Arrow table of exactly the record schema
(names and types) or raises :class:`~acid_platform.errors.MalformedRecordError` naming the first
bad record — its position in the transaction and its text — and what is wrong with it. Records
are parsed vectorised (pyarrow's CSV and JSON readers); only when that fails are they looked at
one by one, to name the bad one.

>>> import pyarrow as pa
>>> schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
>>> StrictDelimitedInputWriter(",").parse([b"1,a", b"2,\\\\N"], schema, "db.t", 0).to_pylist()
[{'id': 1, 'name': 'a'}, {'id': 2, 'name': None}]
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson

from acid_platform.errors import (
    InvalidUtf8Error,
    InvalidUtf8RecordError,
    MalformedRecordError,
    SchemaMismatchError,
)
from acid_platform.format.utf8 import excerpt
from acid_platform.table.schema import conform, to_arrow

#: How much of a bad record an error quotes.
QUOTE_CHARS = 200
#: Hive's text for NULL in delimited records (LazySimpleSerDe's ``serialization.null.format``).
HIVE_NULL = "\\N"
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


class RecordWriter(Protocol):
    """Turns what a client writes into rows of the record schema."""

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        """``data`` as a table of ``schema``; ``first_index`` is the position of its first record
        in the transaction (for error messages)."""


# --------------------------------------------------------------------------- text records


@dataclass(frozen=True)
class StrictDelimitedInputWriter:
    """Records of delimited text, one field per column in order (Hive's
    ``StrictDelimitedInputWriter``; LazySimpleSerDe's layout). ``\\N`` is NULL; an empty field is
    NULL in a non-string column. Strict: a record must have exactly one field per column and
    every value must parse as its column's type. Array, map and struct columns split on
    ``collection_delimiter`` (and ``map_key_delimiter`` between a key and its value)."""

    field_delimiter: str = "\x01"
    collection_delimiter: str = "\x02"
    map_key_delimiter: str = "\x03"
    null_text: str = HIVE_NULL

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        records = as_text_records(data, table, first_index, self._field_of(schema))
        if not records:
            return schema.empty_table()
        if not any("\n" in r or "\r" in r for r in records):
            try:
                return self._parse_csv("\n".join(records), schema)
            except _ARROW_ERRORS:
                pass  # find the record that broke it, below
        fields = []
        for i, record in enumerate(records):
            values = record.split(self.field_delimiter)
            if len(values) != len(schema):
                raise malformed(
                    first_index + i,
                    record,
                    table,
                    f"has {len(values)} field(s) separated by {self.field_delimiter!r}; "
                    f"the table takes {len(schema)} ({', '.join(schema.names)})",
                )
            fields.append(values)
        columns = {
            f.name: [self._value(row[c], f.type) for row in fields] for c, f in enumerate(schema)
        }
        return typed_table(columns, schema, table, records, first_index)

    def _parse_csv(self, text: str, schema: pa.Schema) -> pa.Table:
        simple = csv_types(schema.names, schema)
        out = pcsv.read_csv(
            io.BytesIO(text.encode()),
            read_options=pcsv.ReadOptions(column_names=schema.names, block_size=1 << 26),
            parse_options=pcsv.ParseOptions(
                delimiter=self.field_delimiter, quote_char=False, escape_char=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types={n: simple.get(n, pa.string()) for n in schema.names},
                null_values=[self.null_text, ""],
                strings_can_be_null=False,
            ),
        )
        columns = []
        for f in schema:
            col = out.column(f.name)
            if pa.types.is_string(col.type):  # NULL text in a string column
                col = pc.if_else(pc.equal(col, self.null_text), pa.scalar(None, col.type), col)
            if f.name not in simple:
                col = pa.chunked_array(
                    [_column([self._value(v, f.type) for v in col.to_pylist()], f.type)]
                )
            columns.append(col)
        return pa.Table.from_arrays(columns, schema=schema)

    def _value(self, text: str | None, typ: pa.DataType, nested: bool = False) -> Any:
        """One field's text as its column's value: complex types are split here (their
        elements converted), a primitive column's text is left for :func:`typed_table`."""
        if text is None or text == self.null_text:
            return None
        if pa.types.is_list(typ) or pa.types.is_large_list(typ):
            items = text.split(self.collection_delimiter)
            return [self._value(v, typ.value_type, True) for v in items]
        if pa.types.is_map(typ):
            pairs = [
                p.split(self.map_key_delimiter, 1) for p in text.split(self.collection_delimiter)
            ]
            return [
                (
                    _scalar(p[0], typ.key_type),
                    self._value(p[1] if len(p) > 1 else None, typ.item_type, True),
                )
                for p in pairs
            ]
        if pa.types.is_struct(typ):
            parts = text.split(self.collection_delimiter)
            return {f.name: self._value(p, f.type, True) for f, p in zip(typ, parts, strict=False)}
        if text == "" and not pa.types.is_string(typ):
            return None
        return _scalar(text, typ) if nested else text

    def _field_of(self, schema: pa.Schema) -> Callable[[str], str | None]:
        def field_of(record: str) -> str | None:
            fields = record.split(self.field_delimiter)
            return _first_with_bad_bytes(schema.names, fields)

        return field_of


@dataclass(frozen=True)
class StrictRegexWriter:
    """Records matched whole by a regular expression, one capture group per column in order
    (Hive's ``StrictRegexWriter`` / RegexSerDe). Strict: a record that does not match is an
    error (RegexSerDe would make it a row of NULLs), as is a value that does not parse."""

    regex: str

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        pattern = re.compile(self.regex, re.DOTALL)
        if pattern.groups != len(schema):
            raise SchemaMismatchError(
                f"table {table}: the regex {self.regex!r} has {pattern.groups} group(s); the "
                f"table takes {len(schema)} column(s) ({', '.join(schema.names)})"
            )

        def field_of(record: str) -> str | None:
            match = pattern.fullmatch(record)
            return None if match is None else _first_with_bad_bytes(schema.names, match.groups())

        records = as_text_records(data, table, first_index, field_of)
        rows = []
        for i, record in enumerate(records):
            match = pattern.fullmatch(record)
            if match is None:
                raise malformed(first_index + i, record, table, f"does not match {self.regex!r}")
            rows.append(match.groups())
        columns = {f.name: [row[c] for row in rows] for c, f in enumerate(schema)}
        return typed_table(columns, schema, table, records, first_index)


@dataclass(frozen=True)
class StrictJsonWriter:
    """Records of one JSON object each (Hive's ``StrictJsonWriter`` / JsonSerDe): keys are the
    columns (case-insensitive), a missing key is NULL. Strict: a record that is not a JSON
    object, has a key the table lacks, or a value its column cannot hold is an error."""

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        records = as_text_records(data, table, first_index, _json_field_of)
        if not records:
            return schema.empty_table()
        for i, record in enumerate(records):  # before pyarrow: a `null` line crashes it
            if not record.lstrip().startswith("{"):
                raise malformed(first_index + i, record, table, "is not a JSON object")
        try:
            # a raw line break inside a JSON object can only be whitespace: one line each
            text = "\n".join(r.replace("\r", " ").replace("\n", " ") for r in records)
            parsed = pjson.read_json(
                io.BytesIO(text.encode()), read_options=pjson.ReadOptions(block_size=1 << 26)
            )
            if parsed.num_rows == len(records):
                return _fit_json(parsed, schema, table)
        except (*_ARROW_ERRORS, SchemaMismatchError):
            pass  # find the record that broke it, below
        for i, record in enumerate(records):
            try:
                value = json.loads(record)
            except ValueError as exc:
                raise malformed(first_index + i, record, table, f"is not JSON ({exc})") from None
            if not isinstance(value, dict):
                raise malformed(first_index + i, record, table, "is not a JSON object")
            try:
                _fit_json(pa.Table.from_pylist([value]), schema, table)
            except (*_ARROW_ERRORS, SchemaMismatchError) as exc:
                raise malformed(first_index + i, record, table, f"does not fit: {exc}") from None
        raise malformed(first_index, records[0], table, "does not parse as JSON lines")


# --------------------------------------------------------------------------- Arrow and pandas


@dataclass(frozen=True)
class ArrowRecordWriter:
    """Arrow tables, record batches or batch readers whose columns are the record's (matched
    by name, case-insensitive, converted under the table API's rules); a missing column is
    NULL, one the table lacks an error."""

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        if not isinstance(data, pa.Table | pa.RecordBatch | pa.RecordBatchReader):
            raise SchemaMismatchError(
                f"table {table}: ArrowRecordWriter takes Arrow tables or record batches, not "
                f"{type(data).__name__}"
            )
        return _conform_records(table, to_arrow(data), schema, first_index)


@dataclass(frozen=True)
class PandasRecordWriter:
    """pandas DataFrames (the index is dropped), fitted as :class:`ArrowRecordWriter` fits
    Arrow data."""

    def parse(self, data: Any, schema: pa.Schema, table: str, first_index: int) -> pa.Table:
        if not type(data).__module__.startswith("pandas"):
            raise SchemaMismatchError(
                f"table {table}: PandasRecordWriter takes pandas DataFrames, not "
                f"{type(data).__name__}"
            )
        return _conform_records(table, to_arrow(data), schema, first_index)


def _conform_records(table: str, data: pa.Table, schema: pa.Schema, first_index: int) -> pa.Table:
    """Arrow records fitted to the record schema (the table API's
    :func:`~acid_platform.table.schema.conform`); text that is not UTF-8 is an
    :class:`~acid_platform.errors.InvalidUtf8RecordError` naming the record and the column."""
    try:
        return conform(table, data, schema)
    except InvalidUtf8Error as exc:
        index = first_index + exc.row
        raise InvalidUtf8RecordError(
            f"table {table}: record {index} of the transaction is not UTF-8 in column "
            f"{exc.column!r}: '{exc.excerpt}'",
            index,
            exc.excerpt,
            table=table,
            column=exc.column,
            excerpt=exc.excerpt,
        ) from None


# --------------------------------------------------------------------------- helpers


def csv_types(header: list[str], schema: pa.Schema) -> dict[str, pa.DataType]:
    """The table's type of each CSV column it has (by name, case-insensitive), for the types
    a CSV value parses into directly."""
    out: dict[str, pa.DataType] = {}
    for name in header:
        index = schema.get_field_index(name.lower())
        if index >= 0 and _csv_parses(schema.field(index).type):
            out[name] = schema.field(index).type
    return out


def _csv_parses(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_date32(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_decimal(t)
    )


def as_text_records(
    data: Any,
    table: str = "",
    first_index: int = 0,
    field_of: Callable[[str], str | None] | None = None,
) -> list[str]:
    """One record (``bytes`` / ``str``) or a sequence of them, as text; bytes that are not
    UTF-8 are an :class:`~acid_platform.errors.InvalidUtf8RecordError` naming the record and,
    when ``field_of`` finds it in the record (its bad bytes as lone surrogates, Python's
    ``surrogateescape``), the column."""
    items: Sequence[Any] = [data] if isinstance(data, bytes | bytearray | str) else data
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bytes | bytearray):
            try:
                out.append(bytes(item).decode("utf-8", errors="strict"))
            except UnicodeDecodeError as exc:
                raise _not_utf8(first_index + i, bytes(item), exc.start, table, field_of) from None
        elif isinstance(item, str):
            out.append(item)
        else:
            raise SchemaMismatchError(
                f"a text record writer takes bytes or str records, not {type(item).__name__}"
            )
    return out


def _not_utf8(
    index: int,
    record: bytes,
    at: int,
    table: str,
    field_of: Callable[[str], str | None] | None,
) -> InvalidUtf8RecordError:
    """The error for record ``index``, whose byte ``at`` (0-based) starts what is not UTF-8."""
    column = None
    if field_of is not None:
        try:
            column = field_of(record.decode("utf-8", errors="surrogateescape"))
        except (ValueError, RecursionError):
            column = None  # the record does not parse either: it is named without its column
    shown = record.decode("utf-8", errors="backslashreplace")
    quoted = shown if len(shown) <= QUOTE_CHARS else shown[:QUOTE_CHARS] + "…"
    where = f" in column {column!r}" if column else ""
    return InvalidUtf8RecordError(
        f"table {table}: record {index} of the transaction is not UTF-8{where} (byte {at + 1}): "
        f"{quoted!r}",
        index,
        quoted,
        table=table,
        column=column or "",
        excerpt=excerpt(record),
    )


def malformed(index: int, record: str, table: str, problem: str) -> MalformedRecordError:
    """The error for record ``index`` (its text quoted, cut short)."""
    quoted = record if len(record) <= QUOTE_CHARS else record[:QUOTE_CHARS] + "…"
    return MalformedRecordError(
        f"table {table}: record {index} of the transaction {problem}: {quoted!r}", index, quoted
    )


def typed_table(
    columns: dict[str, list[Any]],
    schema: pa.Schema,
    table: str,
    records: Sequence[str],
    first_index: int,
) -> pa.Table:
    """Columns of Python values (text for primitive columns) as a table of ``schema``; a value
    that does not convert names its record."""
    arrays = []
    for f in schema:
        values = columns[f.name]
        try:
            arrays.append(_column(values, f.type))
        except _ARROW_ERRORS:
            for i, v in enumerate(values):
                try:
                    _column([v], f.type)
                except _ARROW_ERRORS as exc:
                    raise malformed(
                        first_index + i,
                        records[i],
                        table,
                        f"has {v!r} in column {f.name!r}, which is not a {f.type}: {exc}",
                    ) from None
            raise
    return pa.Table.from_arrays(arrays, schema=schema)


def _column(values: list[Any], typ: pa.DataType) -> pa.Array:
    texts = [v for v in values if v is not None]
    if texts and all(isinstance(v, str) for v in texts) and not pa.types.is_string(typ):
        parsed = pa.array([_blank_to_none(v) for v in values], pa.string())
        return pc.cast(parsed, typ, safe=True)
    return pa.array(values, typ)


def _blank_to_none(value: str | None) -> str | None:
    return None if value == "" else value


def _scalar(text: str, typ: pa.DataType) -> Any:
    return pc.cast(pa.array([text], pa.string()), typ, safe=True)[0].as_py()


def _has_bad_bytes(value: Any) -> bool:
    """Whether ``value`` (text decoded with ``surrogateescape``, or JSON made of it) holds a
    byte that was not UTF-8."""
    if isinstance(value, str):
        return any("\udc80" <= c <= "\udcff" for c in value)
    if isinstance(value, dict):
        return any(_has_bad_bytes(k) or _has_bad_bytes(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_bad_bytes(v) for v in value)
    return False


def _first_with_bad_bytes(names: Sequence[str], fields: Sequence[Any]) -> str | None:
    """The column of the first of a record's ``fields`` holding a byte that was not UTF-8 (a
    field past the table's columns is named by its position)."""
    for k, value in enumerate(fields):
        if _has_bad_bytes(value):
            return names[k] if k < len(names) else f"field {k + 1}"
    return None


def _json_field_of(record: str) -> str | None:
    value = json.loads(record)
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        if _has_bad_bytes(key) or _has_bad_bytes(item):  # a bad key is shown escaped
            raw = key.lower().encode("utf-8", errors="surrogateescape")
            return raw.decode("utf-8", errors="backslashreplace")
    return None


def _fit_json(parsed: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
    return conform(table, parsed.rename_columns([n.lower() for n in parsed.column_names]), schema)


__all__ = [
    "HIVE_NULL",
    "ArrowRecordWriter",
    "PandasRecordWriter",
    "RecordWriter",
    "StrictDelimitedInputWriter",
    "StrictJsonWriter",
    "StrictRegexWriter",
    "as_text_records",
    "csv_types",
    "malformed",
    "typed_table",
]
