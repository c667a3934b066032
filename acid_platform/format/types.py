"""Hive type strings and their Arrow equivalents, and the ACID event schema.

Hive names types as text (``int``, ``decimal(10,2)``, ``struct<a:int,b:string>``); the catalog stores
that text and ORC files carry the matching ORC types. Arrow is the in-memory form everywhere.

>>> to_arrow_type("decimal(10,2)")
Decimal128Type(decimal128(10, 2))
>>> to_hive_type(to_arrow_type("array<struct<a:int,b:varchar(5)>>"))
'array<struct<a:int,b:string>>'
"""

from __future__ import annotations

import functools
import re

import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import AcidSchemaError, UnsupportedTypeError

#: Field names of the ACID event struct, in file order.
OPERATION = "operation"
ORIGINAL_TRANSACTION = "originalTransaction"
BUCKET = "bucket"
ROW_ID = "rowId"
CURRENT_TRANSACTION = "currentTransaction"
ROW = "row"
#: The event fields holding a row's ROW__ID, in the order events are sorted by.
ROW_ID_EVENT_FIELDS = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID)
#: A row version: its ROW__ID and the write id of the event (what readers check against the
#: snapshot and the delete set).
ROW_VERSION_FIELDS = (*ROW_ID_EVENT_FIELDS, CURRENT_TRANSACTION)
EVENT_KEY_COLUMNS = (OPERATION, *ROW_VERSION_FIELDS)

#: Event operation codes.
INSERT_OPERATION = 0
UPDATE_OPERATION = 1
DELETE_OPERATION = 2

#: The ROW__ID virtual column as SQL shows it: a struct of ``ROW_ID_FIELDS``, the values of the
#: event's ``ROW_ID_EVENT_FIELDS``.
ROW_ID_COLUMN = "row__id"
ROW_ID_FIELDS = ("writeid", "bucketid", "rowid")
ROW_ID_TYPE = pa.struct(list(zip(ROW_ID_FIELDS, (pa.int64(), pa.int32(), pa.int64()), strict=True)))

_PRIMITIVES: dict[str, pa.DataType] = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "float": pa.float32(),
    "double": pa.float64(),
    "double precision": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    # Hive timestamps are wall-clock values without a zone; ORC keeps nanoseconds.
    "timestamp": pa.timestamp("ns"),
}


def row_id_text(write_id: int, bucket_id: int, row_id: int) -> str:
    """A ROW__ID as Hive's CLI prints it.

    >>> row_id_text(1, 536870912, 0)
    '{"writeid":1,"bucketid":536870912,"rowid":0}'
    """
    values = (write_id, bucket_id, row_id)
    return "{" + ",".join(f'"{n}":{v}' for n, v in zip(ROW_ID_FIELDS, values, strict=True)) + "}"


def event_schema(row_schema: pa.Schema) -> pa.Schema:
    """The ORC schema of every full-ACID data file: five key fields and the ``row`` struct."""
    return pa.schema(
        [
            pa.field(OPERATION, pa.int32()),
            pa.field(ORIGINAL_TRANSACTION, pa.int64()),
            pa.field(BUCKET, pa.int32()),
            pa.field(ROW_ID, pa.int64()),
            pa.field(CURRENT_TRANSACTION, pa.int64()),
            pa.field(ROW, pa.struct(list(row_schema))),
        ]
    )


def is_event_schema(schema: pa.Schema) -> bool:
    """True when ``schema`` has the ACID event layout (names and order as Hive writes them)."""
    names = [f.name for f in schema]
    return len(names) == 6 and tuple(names[:5]) == EVENT_KEY_COLUMNS and names[5] == ROW


def check_event_schema(schema: pa.Schema, source: str) -> None:
    """Raise :class:`AcidSchemaError` naming ``source`` unless ``schema`` is an ACID event schema."""
    if not is_event_schema(schema):
        raise AcidSchemaError(
            f"{source}: expected the ACID event schema "
            f"struct<{','.join(EVENT_KEY_COLUMNS)},{ROW}:struct<...>>, found {schema_to_hive(schema)}"
        )
    if not pa.types.is_struct(schema.field(ROW).type):
        raise AcidSchemaError(
            f"{source}: the '{ROW}' field is {schema.field(ROW).type}, not a struct"
        )


def to_arrow_type(hive_type: str) -> pa.DataType:
    """Arrow type for a Hive type string (case-insensitive; nested types supported)."""
    parser = _TypeParser(hive_type)
    result = parser.parse_type()
    parser.expect_end()
    return result


def to_hive_type(arrow_type: pa.DataType) -> str:
    """Hive type string for an Arrow type (``varchar``/``char`` come back as ``string``)."""
    t = arrow_type
    if pa.types.is_int8(t):
        return "tinyint"
    if pa.types.is_int16(t):
        return "smallint"
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "bigint"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{to_hive_type(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{to_hive_type(t.key_type)},{to_hive_type(t.item_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{to_hive_type(f.type)}" for f in t) + ">"
    raise UnsupportedTypeError(f"Arrow type {t} has no Hive equivalent")


def schema_to_hive(schema: pa.Schema) -> str:
    return "struct<" + ",".join(f"{f.name}:{to_hive_type(f.type)}" for f in schema) + ">"


def row_schema(columns: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> pa.Schema:
    """Arrow schema of a table's row from ``(name, hive type)`` pairs. A ``char(n)`` or
    ``varchar(n)`` column is an Arrow string whose field metadata keeps the Hive type
    (:data:`HIVE_TYPE_METADATA`): writers apply Hive's length rules and name the ORC type by it.

    >>> row_schema([("c", "CHAR(5)")]).field("c").metadata
    {b'hive.type': b'char(5)'}
    """
    return _row_schema(tuple((name, t) for name, t in columns))


@functools.lru_cache(maxsize=256)
def _row_schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    # parsed once per column list: every split of a scan of 2,000 partitions asks for it
    return pa.schema([_field(name, t) for name, t in columns])


#: Field metadata key holding a string column's Hive type when it is ``char(n)``/``varchar(n)``.
HIVE_TYPE_METADATA = b"hive.type"
_CHAR_TYPE = re.compile(r"^(char|varchar)\((\d+)\)$")


def _field(name: str, hive_type: str) -> pa.Field:
    arrow = to_arrow_type(hive_type)
    text = normalize_hive_type(hive_type)
    if _CHAR_TYPE.match(text):
        return pa.field(name, arrow, metadata={HIVE_TYPE_METADATA: text.encode()})
    return pa.field(name, arrow)


def char_type(field: pa.Field) -> tuple[str, int] | None:
    """``("char", n)`` or ``("varchar", n)`` for a field made from such a Hive type, else None.

    >>> char_type(row_schema([("v", "varchar(3)")]).field("v"))
    ('varchar', 3)
    """
    raw = (field.metadata or {}).get(HIVE_TYPE_METADATA)
    m = _CHAR_TYPE.match(raw.decode()) if raw else None
    return (m.group(1), int(m.group(2))) if m else None


def has_char_fields(schema: pa.Schema) -> bool:
    """Whether any field of ``schema`` (or of a struct in it) is a ``char``/``varchar``."""
    return any(_has_char(f) for f in schema)


def _has_char(field: pa.Field) -> bool:
    if char_type(field) is not None:
        return True
    return pa.types.is_struct(field.type) and any(_has_char(c) for c in field.type)


def conform_chars(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (of ``schema``) with Hive's ``char``/``varchar`` rules applied to the fields that
    carry them, top-level or inside structs (:func:`apply_char_rules`)."""
    if not has_char_fields(schema):
        return table
    columns = [
        _conform_chars(table.column(i).combine_chunks(), f) if _has_char(f) else table.column(i)
        for i, f in enumerate(schema)
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _conform_chars(arr: pa.Array, field: pa.Field) -> pa.Array:
    char = char_type(field)
    if char is not None:
        return apply_char_rules(arr, *char)
    if not pa.types.is_struct(field.type):
        return arr
    children = [
        _conform_chars(arr.field(i), child) if _has_char(child) else arr.field(i)
        for i, child in enumerate(field.type)
    ]
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask)


def apply_char_rules(values: pa.Array | pa.ChunkedArray, kind: str, length: int) -> pa.Array:
    """Hive's rules for a ``varchar(n)`` / ``char(n)`` value: cut to ``n`` characters; a char is
    also padded with spaces to ``n`` (as Hive's ORC writer stores and its readers return it).

    >>> apply_char_rules(pa.array(["abcdef", "ab", None]), "varchar", 3).to_pylist()
    ['abc', 'ab', None]
    >>> apply_char_rules(pa.array(["abcdef", "ab", None]), "char", 5).to_pylist()
    ['abcde', 'ab   ', None]
    """
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    cut = pc.utf8_slice_codeunits(arr, 0, length)
    if kind == "char":
        cut = pc.utf8_rpad(cut, width=length, padding=" ")
    return cut


def normalize_hive_type(hive_type: str) -> str:
    """Canonical spelling: lower case, no spaces (``DECIMAL( 10, 2)`` -> ``decimal(10,2)``)."""
    return re.sub(r"\s+", "", hive_type.strip().lower()).replace("doubleprecision", "double")


class _TypeParser:
    _TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_ ]*?(?=\s*[<>(),:]|\s*$)|[<>(),:]|[0-9]+)")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [m.group(1).strip() for m in self._TOKEN.finditer(text)]
        if "".join(self.tokens).replace(" ", "") != re.sub(r"\s+", "", text):
            raise UnsupportedTypeError(f"cannot parse Hive type {text!r}")
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise UnsupportedTypeError(
                f"cannot parse Hive type {self.text!r}: expected {expected!r}"
            )
        self.pos += 1
        return tok

    def expect_end(self) -> None:
        if self.peek() is not None:
            raise UnsupportedTypeError(
                f"cannot parse Hive type {self.text!r}: trailing {self.peek()!r}"
            )

    def parse_type(self) -> pa.DataType:
        name = self.take().lower()
        if name in _PRIMITIVES:
            return _PRIMITIVES[name]
        if name in ("varchar", "char"):
            self.take("(")
            self.take()
            self.take(")")
            return pa.string()
        if name in ("decimal", "numeric"):
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
            return pa.decimal128(precision, scale)
        if name == "array":
            self.take("<")
            item = self.parse_type()
            self.take(">")
            return pa.list_(item)
        if name == "map":
            self.take("<")
            key = self.parse_type()
            self.take(",")
            value = self.parse_type()
            self.take(">")
            return pa.map_(key, value)
        if name == "struct":
            self.take("<")
            fields = []
            while True:
                fname = self.take()
                self.take(":")
                fields.append(pa.field(fname, self.parse_type()))
                if self.peek() == ",":
                    self.take(",")
                    continue
                self.take(">")
                return pa.struct(fields)
        raise UnsupportedTypeError(f"unsupported Hive type {name!r} in {self.text!r}")
