"""A table's Arrow schema, and fitting user data to it.

Data handed to the table API (Arrow, a list of dicts, pandas) is matched to the table by column
name (case-insensitive, as Hive), and each column converted under Hive-like implicit conversion
rules: numbers convert among themselves (fractions truncate toward zero when stored in an integer
column, overflow is an error), anything converts to ``string`` (bytes when they are UTF-8),
text converts to ``date``, ``timestamp`` and ``decimal`` when it parses. Everything else — text
into an ``int`` column, say — is a :class:`~acid_platform.errors.SchemaMismatchError` naming the
table and column. Every string stored, nested ones included, is checked to be UTF-8
(:class:`~acid_platform.errors.InvalidUtf8Error` names the column and the row).

>>> import pyarrow as pa
>>> target = pa.schema([("id", pa.int32()), ("name", pa.string())])
>>> conform("default.t", pa.table({"ID": [1, 2]}), target).to_pylist()
[{'id': 1, 'name': None}, {'id': 2, 'name': None}]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import (
    AcidFormatError,
    InvalidUtf8Error,
    NotNullViolationError,
    SchemaMismatchError,
    TimestampRangeError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.format import row_schema, to_hive_type
from acid_platform.format.plain_files import (
    ORC,
    TEXTFILE,
    check_text_columns,
    normalize_file_format,
)
from acid_platform.format.utf8 import (
    as_text,
    check_utf8,
    find_invalid_text_value,
    utf8_error,
)
from acid_platform.format.wide_timestamps import (
    NARROW,
    WIDE,
    check_hive_range,
    widen_schema,
)
from acid_platform.metastore.model import FILE_FORMAT_PROPERTY, TableSpec

#: Table property holding the NOT NULL columns (comma separated), set by ``create_table``.
NOT_NULL_PROPERTY = "acid_platform.constraint.not_null"
#: Column names starting with this prefix are reserved for the DML plan.
RESERVED_PREFIX = "__acid_"


def data_schema(spec: TableSpec) -> pa.Schema:
    """Arrow schema of the table's data columns (what the ORC ``row`` struct holds)."""
    return row_schema(spec.columns)


def partition_schema(spec: TableSpec) -> pa.Schema:
    """Arrow schema of the table's partition columns."""
    return row_schema(spec.partition_columns)


def table_schema(spec: TableSpec) -> pa.Schema:
    """Arrow schema of the table as SQL shows it: data columns, then partition columns."""
    return pa.schema(list(data_schema(spec)) + list(partition_schema(spec)))


def storage_properties(
    full_name: str, properties: Mapping[str, str], columns: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """A new table's properties with its file format checked and spelled one way: a full ACID
    table is ORC (Hive's ``TransactionalValidationListener`` message otherwise); an
    insert-only one ORC, Parquet or text (text with primitive columns only). ORC is not
    recorded (it is what an absent :data:`FILE_FORMAT_PROPERTY` means)."""
    props = dict(properties)
    given = props.pop(FILE_FORMAT_PROPERTY, None)
    if given is None:
        return props
    try:
        fmt = normalize_file_format(given, full_name)
    except AcidFormatError as exc:
        raise UnsupportedOperationError(str(exc)) from None
    probe = TableSpec("d", "t", (), properties=props)
    if fmt != ORC and probe.is_transactional and not probe.is_insert_only:
        raise UnsupportedOperationError(
            f"The table must be stored using an ACID compliant format (such as ORC): {full_name}"
        )
    if fmt != ORC and not probe.is_transactional:
        raise UnsupportedOperationError(
            f"table {full_name}: STORED AS {given.upper()} is for insert-only transactional "
            "tables here (non-transactional tables are ORC)"
        )
    if fmt == TEXTFILE:
        check_text_columns(row_schema(tuple(columns)), full_name)
    if fmt != ORC:
        props[FILE_FORMAT_PROPERTY] = fmt
    return props


def not_null_columns(spec: TableSpec) -> tuple[str, ...]:
    """The table's NOT NULL columns."""
    text = spec.properties.get(NOT_NULL_PROPERTY, "")
    return tuple(c for c in text.split(",") if c)


def to_arrow(data: Any, what: str = "data", *, table: str = "") -> pa.Table:
    """An Arrow table from Arrow data, a list of dicts, a dict of lists or a pandas frame.

    A ``str`` holding lone surrogates (bytes that were not UTF-8, decoded with
    ``surrogateescape``) is an :class:`~acid_platform.errors.InvalidUtf8Error` naming its
    column and row (``what`` begins the message; ``table`` is the table written to)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    try:
        return _python_to_arrow(data, what)
    except UnicodeEncodeError as exc:
        raise _surrogate_error(data, what, table) or SchemaMismatchError(f"{what}: {exc}") from None


def _python_to_arrow(data: Any, what: str) -> pa.Table:
    if isinstance(data, Mapping):
        return pa.table(dict(data))
    if isinstance(data, list | tuple):
        if not all(isinstance(r, Mapping) for r in data):
            raise SchemaMismatchError(f"{what}: a list of rows must hold dicts (column -> value)")
        # every key of every row is a column (pyarrow's from_pylist takes the first row's
        # keys only and drops the others' silently); a row without a key holds NULL there
        columns = list(dict.fromkeys(k for r in data for k in r))
        try:
            return pa.table({k: [r.get(k) for r in data] for k in columns})
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatchError(f"{what}: rows do not form a table: {exc}") from exc
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise SchemaMismatchError(
        f"{what}: expected a pyarrow Table/RecordBatch, a list of dicts or a pandas DataFrame, "
        f"not {type(data).__name__}"
    )


def _surrogate_error(data: Any, what: str, table: str) -> InvalidUtf8Error | None:
    """The error naming the first value of Python ``data`` (rows, columns or a pandas frame)
    that is a ``str`` with lone surrogates; ``None`` if there is none."""
    if isinstance(data, list | tuple):
        columns: dict[str, list[Any]] = {}
        for i, row in enumerate(data):
            for name, value in dict(row).items():
                columns.setdefault(str(name), [None] * len(data))[i] = value
    else:  # a dict of columns, or a pandas frame
        columns = {str(k): list(v) for k, v in data.items()}
    best: tuple[int, str, bytes] | None = None
    for name, values in columns.items():
        for row, value in enumerate(values):
            if best is not None and row >= best[0]:
                break
            found = find_invalid_text_value(value)
            if found is not None:
                best = (row, name + found[0], found[1])
                break
    if best is None:
        return None
    row, column, value = best
    return utf8_error(f"table {table}: " if table else f"{what}: ", column, row, value, table)


def conform(
    table: str,
    data: pa.Table,
    target: pa.Schema,
    *,
    fill_missing: bool = True,
    what: str = "",
    first_row: int = 0,
) -> pa.Table:
    """``data`` with exactly ``target``'s columns and types (missing columns NULL).

    Raises :class:`UnknownColumnError` for a column the table does not have,
    :class:`SchemaMismatchError` for a value that cannot be stored and its
    :class:`~acid_platform.errors.InvalidUtf8Error` for text that is not UTF-8, naming the row
    (``first_row`` is the position of ``data``'s first row in the statement's input).
    """
    by_name: dict[str, int] = {}
    for i, name in enumerate(data.column_names):
        key = name.lower()
        if key in by_name:
            raise SchemaMismatchError(f"table {table}: {what}column {name!r} is given twice")
        by_name[key] = i
    unknown = [data.column_names[i] for k, i in by_name.items() if target.get_field_index(k) < 0]
    if unknown:
        raise UnknownColumnError(
            f"table {table} has no column(s) {unknown}; its columns are {target.names}"
        )
    arrays = []
    for field in target:
        idx = by_name.get(field.name)
        if idx is None:
            if not fill_missing:
                raise SchemaMismatchError(f"table {table}: {what}column {field.name!r} is missing")
            arrays.append(pa.nulls(data.num_rows, field.type))
            continue
        arrays.append(
            convert_column(
                table, field.name, data.column(idx), field.type, what=what, first_row=first_row
            )
        )
    return fitted_table(arrays, target)


def fitted_table(arrays: list[pa.ChunkedArray], target: pa.Schema) -> pa.Table:
    """``target``'s columns from :func:`convert_column`'s ``arrays``: a timestamp column may
    have come back wide (``timestamp[us]``, beyond the nanosecond range)."""
    wide = [f.name for f, a in zip(target, arrays, strict=True) if a.type != f.type]
    return pa.Table.from_arrays(arrays, schema=widen_schema(target, wide))


def convert_column(
    table: str,
    column: str,
    values: pa.ChunkedArray | pa.Array,
    target: pa.DataType,
    *,
    what: str = "",
    first_row: int = 0,
) -> pa.ChunkedArray:
    """One column converted to the table's type under the implicit conversion rules; every
    string in it checked to be UTF-8 (``format.utf8``: an
    :class:`~acid_platform.errors.InvalidUtf8Error` names the row, ``first_row`` being the
    position of ``values``' first one in the statement's input)."""
    arr = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
    converted = _converted(table, column, arr, target)
    check_utf8(converted, table=table, column=column, what=what, first_row=first_row)
    return converted


def _converted(
    table: str, column: str, arr: pa.ChunkedArray, target: pa.DataType
) -> pa.ChunkedArray:
    source = arr.type
    if source == target:
        return arr
    if arr.null_count == len(arr):  # NULL is of every type in Hive (`SELECT NULL` is an int here)
        return pa.chunked_array([pa.nulls(len(arr), target)], type=target)
    rule = _conversion(source, target)
    if rule is None:
        raise SchemaMismatchError(
            f"table {table}: column {column!r} is {_hive(target)}; cannot store {_hive(source)} "
            f"values{_example(arr)}"
        )
    try:
        return rule(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        if target == NARROW and "out of bounds" in str(exc):
            return _wide(table, column, arr, source, exc)
        raise SchemaMismatchError(
            f"table {table}: column {column!r} is {_hive(target)}; a {_hive(source)} value does "
            f"not fit: {exc}"
        ) from exc


def _wide(
    table: str, column: str, arr: pa.ChunkedArray, source: pa.DataType, exc: Exception
) -> pa.ChunkedArray:
    """A timestamp column beyond the nanosecond range, kept at microseconds (Hive's 0001-9999;
    ``format.wide_timestamps``), or the error naming the value that does not fit."""
    try:
        wide = arr.cast(WIDE, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as second:
        raise SchemaMismatchError(
            f"table {table}: column {column!r} is timestamp; a {_hive(source)} value does not "
            f"fit: {exc}; beyond {TIMESTAMP_RANGE[0]} to {TIMESTAMP_RANGE[1]} timestamps are "
            f"kept at microseconds, and this one does not fit those either ({second}); see "
            "docs/values.md"
        ) from second
    try:
        check_hive_range(wide, f"table {table}: column {column!r}")
    except TimestampRangeError as err:
        raise SchemaMismatchError(str(err)) from err
    return wide


def has_wide_constant(predicate: object) -> bool:
    """Whether ``predicate`` (a sqlglot tree) holds a string or ``TIMESTAMP`` constant that
    reads as a timestamp beyond the nanosecond range: the engine cannot compare it with a column
    carried at nanoseconds, so a scan filtered by it reads its timestamp columns at microseconds.

    >>> import sqlglot
    >>> has_wide_constant(sqlglot.parse_one("ts > TIMESTAMP '1500-06-01 10:00:00'", read="hive"))
    True
    >>> has_wide_constant(sqlglot.parse_one("ts > '2020-01-01' AND s = '1500'", read="hive"))
    False
    """
    from sqlglot import exp  # here: a Spark worker reading splits imports no SQL parser

    if not isinstance(predicate, exp.Expr):
        return False
    for literal in predicate.find_all(exp.Literal):
        if literal.is_string and _WIDE_TEXT.match(literal.name):
            try:
                us = int(
                    np.datetime64(literal.name.strip().replace(" ", "T"), "us").astype(np.int64)
                )
            except ValueError:
                continue
            if not -(2**63) <= us * 1000 < 2**63:
                return True
    return False


_WIDE_TEXT = re.compile(r"^\s*\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*$")


#: Where a table's timestamps keep nanoseconds (Arrow's 64-bit nanosecond range); beyond it, to
#: Hive's 0001-01-01 .. 9999-12-31, they are kept at microseconds (``format.wide_timestamps``).
TIMESTAMP_RANGE = ("1677-09-21 00:12:43.145224192", "2262-04-11 23:47:16.854775807")


def check_not_null(table: str, data: pa.Table, columns: Iterable[str]) -> None:
    """Raise :class:`NotNullViolationError` if a NOT NULL column of ``data`` holds a NULL."""
    for col in columns:
        if col in data.column_names and data.column(col).null_count:
            raise NotNullViolationError(
                f"table {table}: column {col!r} is NOT NULL; {data.column(col).null_count} row(s) "
                "would store NULL"
            )


# --------------------------------------------------------------------------- conversions

_Rule = Callable[[pa.ChunkedArray, pa.DataType], pa.ChunkedArray]


def _plain(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    return arr.cast(target, safe=True)


def _truncating(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    as_float = arr.cast(pa.float64()) if pa.types.is_decimal(arr.type) else arr
    return pc.trunc(as_float).cast(target, safe=True)


def _text(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "true", "false").cast(target)
    return arr.cast(target, safe=True)


def _decoded(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    # bytes into text, top level or nested: viewed as strings, which convert_column then checks
    # are UTF-8, naming the row (a cast would refuse the whole column without naming it)
    return as_text(arr).cast(target, safe=True)


def _widened(arr: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    # An integer type casts to a decimal only if every value of the type would fit; cast to
    # one wide enough first, then to the column's, checking the values themselves.
    wide = pa.decimal128(min(38, 19 + max(target.scale, 0)), target.scale)
    return arr.cast(wide, safe=True).cast(target, safe=True)


def _conversion(source: pa.DataType, target: pa.DataType) -> _Rule | None:
    t = pa.types
    if t.is_null(source):
        return _plain
    if t.is_string(target) or t.is_large_string(target):
        if t.is_binary(source) or t.is_large_binary(source):
            return _decoded
        nested = t.is_struct(source) or t.is_list(source) or t.is_map(source)
        return None if nested else _text
    numeric = _is_numeric(source)
    if t.is_integer(target):
        if t.is_integer(source):
            return _plain
        return _truncating if numeric else None
    if t.is_decimal(target) and t.is_integer(source):
        return _widened
    if t.is_floating(target) or t.is_decimal(target):
        if numeric:
            return _plain
        return _plain if t.is_decimal(target) and _is_text(source) else None
    if t.is_boolean(target):
        return _plain if t.is_boolean(source) else None
    if t.is_date(target) or t.is_timestamp(target):
        ok = t.is_date(source) or t.is_timestamp(source) or _is_text(source)
        return _plain if ok else None
    if t.is_binary(target) or t.is_large_binary(target):
        return _plain if t.is_binary(source) or t.is_large_binary(source) else None
    if _same_kind(source, target):
        return _decoded
    return None


def _is_numeric(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)


def _is_text(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)


def _same_kind(source: pa.DataType, target: pa.DataType) -> bool:
    t = pa.types
    return (
        (t.is_struct(source) and t.is_struct(target))
        or ((t.is_list(source) or t.is_large_list(source)) and t.is_list(target))
        or (t.is_map(source) and t.is_map(target))
    )


def _hive(typ: pa.DataType) -> str:
    try:
        return to_hive_type(typ)
    except Exception:  # noqa: BLE001 - only used to word an error message
        return str(typ)


def _example(arr: pa.ChunkedArray) -> str:
    for chunk in arr.chunks:
        valid = chunk.drop_null()
        if len(valid):
            return f" (e.g. {valid[0].as_py()!r})"
    return ""
