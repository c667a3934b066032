"""The ORC footer's type descriptions and calendar, set as Hive's writer sets them.

pyarrow's ORC writer knows only Arrow types: a ``char(5)`` or ``varchar(10)`` column comes out
as ORC ``string``, and the footer names no calendar, which ORC Java reads as "unknown" (the
hybrid Julian/Gregorian calendar of ``java.sql.Date``). Hive 3+ writes ``CHAR``/``VARCHAR``
types with their maximum length and ``calendar: PROLEPTIC_GREGORIAN``, the calendar Arrow's
day and nanosecond counts use, so ``0001-01-01`` reads as the same day in every reader.

:func:`amend_footer` rewrites the footer of a finished file's tail: the footer is decoded,
the chosen ``Type`` messages and the calendar field replaced, and it is compressed again with
the file's codec; the postscript's footer length follows. :func:`finish_footer` does that and
adds Hive's user metadata items in the same pass (what ``EventWriter.close`` calls: one
decompression, one walk of the footer's top-level fields, one compression per file written).
Field numbers are from ORC's ``orc_proto.proto``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from acid_platform.errors import CorruptAcidFileError
from acid_platform.format import types as t
from acid_platform.format.orc_tail import (
    COMPRESSION_NAMES,
    MAX_POSTSCRIPT,
    replace_varint_field,
)
from acid_platform.format.protobuf import (
    compress_stream,
    decode_message,
    decompress_stream,
    encode_varint,
    field_bytes,
    read_varint,
)

# Footer fields
_FOOTER_STRIPES = 3
_FOOTER_TYPES = 4
_FOOTER_METADATA = 5
_FOOTER_CALENDAR = 11
# Type fields and kinds
_TYPE_KIND = 1
_TYPE_MAXIMUM_LENGTH = 4
KIND_VARCHAR = 16
KIND_CHAR = 17
_KINDS = {"char": KIND_CHAR, "varchar": KIND_VARCHAR}
#: CalendarKind.PROLEPTIC_GREGORIAN
PROLEPTIC_GREGORIAN = 2
_POSTSCRIPT_FOOTER_LENGTH = 1
_POSTSCRIPT_COMPRESSION = 2
_POSTSCRIPT_BLOCK_SIZE = 3
_POSTSCRIPT_MAGIC = 8000
_STRIPE_NUMBER_OF_ROWS = 5


def char_columns(schema: pa.Schema) -> dict[int, tuple[int, int]]:
    """ORC column ids (pre-order, 0 = the root struct) of the ``char``/``varchar`` fields of
    ``schema``, at any depth, with their ORC kind and maximum length."""
    out: dict[int, tuple[int, int]] = {}
    next_id = 1

    def visit(field: pa.Field) -> None:
        nonlocal next_id
        column = next_id
        next_id += 1
        char = t.char_type(field)
        if char is not None:
            out[column] = (_KINDS[char[0]], char[1])
        typ = field.type
        if pa.types.is_struct(typ):
            for child in typ:
                visit(child)
        elif pa.types.is_map(typ):
            visit(typ.key_field)
            visit(typ.item_field)
        elif pa.types.is_list(typ) or pa.types.is_large_list(typ):
            visit(typ.value_field)

    for f in schema:
        visit(f)
    return out


def amend_footer(
    tail: bytes,
    types: Mapping[int, tuple[int, int]],
    *,
    calendar: int | None = PROLEPTIC_GREGORIAN,
    source: str = "<orc>",
) -> bytes:
    """``tail`` (the file from its metadata section on, or more) with the footer's types
    ``types`` (column id -> (kind, maximum length)) and its calendar set."""
    return finish_footer(tail, types, _no_items, calendar=calendar, source=source)


def _no_items(_: tuple[int, ...]) -> tuple[tuple[str, bytes], ...]:
    return ()


#: the user metadata items a finished file gets, from its stripes' row counts
ItemsOf = Callable[[tuple[int, ...]], Sequence[tuple[str, bytes]]]


def finish_footer(
    tail: bytes,
    types: Mapping[int, tuple[int, int]],
    items: ItemsOf,
    *,
    calendar: int | None = PROLEPTIC_GREGORIAN,
    source: str = "<orc>",
) -> bytes:
    """:func:`amend_footer` and :func:`~.orc_tail.append_user_metadata` of a writer's tail in
    one pass — the footer decompressed, walked and compressed once. ``items`` gives the user
    metadata items from the row count of each stripe the footer lists (a writer's key index
    needs them)."""
    try:
        return _finish_footer(tail, types, items, calendar, source)
    except CorruptAcidFileError:
        raise
    except Exception as exc:  # malformed varints, bad codecs, truncated buffers
        raise CorruptAcidFileError(f"{source}: not a readable ORC file tail ({exc})") from exc


def _finish_footer(
    tail: bytes,
    types: Mapping[int, tuple[int, int]],
    items: ItemsOf,
    calendar: int | None,
    source: str,
) -> bytes:
    if len(tail) < 4:
        raise CorruptAcidFileError(f"{source}: file is too short to be ORC")
    ps_len = tail[-1]
    if ps_len == 0 or ps_len + 1 > len(tail):
        raise CorruptAcidFileError(f"{source}: bad postscript length {ps_len}")
    ps_start = len(tail) - 1 - ps_len
    postscript = tail[ps_start:-1]
    ps = decode_message(postscript)
    if ps.get(_POSTSCRIPT_MAGIC, [b""])[0] != b"ORC":
        raise CorruptAcidFileError(f"{source}: postscript magic is not 'ORC'")
    footer_start = ps_start - int(ps[_POSTSCRIPT_FOOTER_LENGTH][0])
    if footer_start < 0:
        raise CorruptAcidFileError(f"{source}: footer extends before the start of the read tail")
    compression = COMPRESSION_NAMES.get(int(ps.get(_POSTSCRIPT_COMPRESSION, [0])[0]), "UNKNOWN")
    block_size = int(ps.get(_POSTSCRIPT_BLOCK_SIZE, [256 * 1024])[0])
    footer = decompress_stream(tail[footer_start:ps_start], compression, block_size)
    out = bytearray()
    stripe_rows = []
    type_index = 0
    for number, wire, raw in _fields(footer):
        if number == _FOOTER_CALENDAR and calendar is not None:
            continue  # written once below
        if number == _FOOTER_STRIPES:
            stripe = decode_message(_value(raw))
            stripe_rows.append(int(stripe.get(_STRIPE_NUMBER_OF_ROWS, [0])[0]))
        elif number == _FOOTER_TYPES:
            if type_index in types:
                kind, length = types[type_index]
                raw = _length_delimited(set_type(_value(raw), kind, length))
            type_index += 1
        out += encode_varint((number << 3) | wire) + raw
    if types and max(types) >= type_index:
        raise CorruptAcidFileError(
            f"{source}: the footer has {type_index} types, not {max(types) + 1}"
        )
    if calendar is not None:
        out += encode_varint(_FOOTER_CALENDAR << 3) + encode_varint(calendar)
    for name, value in items(tuple(stripe_rows)):  # UserMetadataItem: name = 1, value = 2
        out += field_bytes(_FOOTER_METADATA, field_bytes(1, name.encode()) + field_bytes(2, value))
    packed = compress_stream(bytes(out), compression, block_size)
    new_ps = replace_varint_field(postscript, _POSTSCRIPT_FOOTER_LENGTH, len(packed))
    if len(new_ps) > MAX_POSTSCRIPT:
        raise CorruptAcidFileError(f"{source}: ORC postscript would exceed 255 bytes")
    return tail[:footer_start] + packed + new_ps + bytes([len(new_ps)])


def set_type(message: bytes, kind: int, length: int) -> bytes:
    """A ``Type`` message re-encoded with ``kind`` and ``maximumLength``, the rest kept."""
    out = bytearray()
    for number, wire, raw in _fields(message):
        if number in (_TYPE_KIND, _TYPE_MAXIMUM_LENGTH):
            continue
        out += encode_varint((number << 3) | wire) + raw
    out += encode_varint(_TYPE_KIND << 3) + encode_varint(kind)
    out += encode_varint(_TYPE_MAXIMUM_LENGTH << 3) + encode_varint(length)
    return bytes(out)


def _fields(message: bytes) -> list[tuple[int, int, bytes]]:
    """``(field number, wire type, encoded value)`` in message order; the value bytes include
    a length-delimited field's length prefix."""
    out = []
    pos = 0
    while pos < len(message):
        key, start = read_varint(message, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, end = read_varint(message, start)
        elif wire == 2:
            length, body = read_varint(message, start)
            end = body + length
        elif wire == 1:
            end = start + 8
        elif wire == 5:
            end = start + 4
        else:
            raise CorruptAcidFileError(f"unsupported protobuf wire type {wire}")
        if end > len(message):
            raise CorruptAcidFileError("truncated protobuf field")
        out.append((number, wire, message[start:end]))
        pos = end
    return out


def _value(raw: bytes) -> bytes:
    _, body = read_varint(raw, 0)
    return raw[body:]


def _length_delimited(payload: bytes) -> bytes:
    return encode_varint(len(payload)) + payload
