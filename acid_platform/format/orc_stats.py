"""Merging ORC ``ColumnStatistics``: the file statistics of stripes written apart.

A file's footer holds one ``ColumnStatistics`` per column for the whole file. When stripes
encoded as separate ORC files are joined into one (:mod:`.orc_append`), the joined footer's
statistics are the merge of theirs: counts and sizes add up, ``hasNull`` is either's, minimum
and maximum are the smaller and larger, sums add. Whatever cannot be merged exactly — a sum that
overflows, string bounds stored truncated, timestamp bounds, a kind this module does not know —
is dropped, never guessed: a reader then knows less about the file, never something false.

Field numbers are from ORC's ``orc_proto.proto``.

>>> from acid_platform.format.protobuf import field_bytes, field_sint, field_varint
>>> ints = lambda lo, hi: field_varint(1, 2) + field_bytes(2, field_sint(1, lo) + field_sint(2, hi))
>>> merged = decode_message(merge_column_statistics(ints(3, 9), ints(-1, 4)))
>>> merged[1], decode_message(merged[2][0])
([4], {1: [1], 2: [18]})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from acid_platform.format.protobuf import (
    Message,
    as_double,
    decode_message,
    encode_varint,
    field_bytes,
    field_double,
    field_sint,
    field_varint,
    packed_varints,
    zigzag_decode,
)

# ColumnStatistics fields
_NUMBER_OF_VALUES = 1
_INT, _DOUBLE, _STRING, _BUCKET, _DECIMAL, _DATE, _BINARY, _TIMESTAMP = 2, 3, 4, 5, 6, 7, 8, 9
_HAS_NULL = 10
_BYTES_ON_DISK = 11
_COLLECTION = 12
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def merge_column_statistics(a: bytes, b: bytes) -> bytes:
    """One ``ColumnStatistics`` message for the values of both ``a`` and ``b``."""
    ma, mb = decode_message(a), decode_message(b)
    out = field_varint(
        _NUMBER_OF_VALUES, _first(ma, _NUMBER_OF_VALUES) + _first(mb, _NUMBER_OF_VALUES)
    )
    for kind, merge in _KINDS.items():
        ka, kb = ma.get(kind), mb.get(kind)
        if ka is None and kb is None:
            continue
        if ka is None or kb is None:
            # one side has values of this kind and the other none: keep the side with values
            side = kb if ka is None else ka
            other = ma if ka is None else mb
            if side is not None and _first(other, _NUMBER_OF_VALUES) == 0:
                out += field_bytes(kind, bytes(side[0]))  # type: ignore[arg-type]
            continue
        merged = merge(decode_message(ka[0]), decode_message(kb[0]))  # type: ignore[arg-type]
        if merged is not None:
            out += field_bytes(kind, merged)
    out += field_varint(_HAS_NULL, int(bool(_first(ma, _HAS_NULL) or _first(mb, _HAS_NULL))))
    if _BYTES_ON_DISK in ma and _BYTES_ON_DISK in mb:
        out += field_varint(_BYTES_ON_DISK, _first(ma, _BYTES_ON_DISK) + _first(mb, _BYTES_ON_DISK))
    return out


def merge_all(statistics: Sequence[Sequence[bytes]]) -> list[bytes]:
    """Column-wise merge of several files' statistics lists (all of the same schema)."""
    merged = list(statistics[0])
    for stats in statistics[1:]:
        merged = [merge_column_statistics(x, y) for x, y in zip(merged, stats, strict=True)]
    return merged


# --------------------------------------------------------------------------- the kinds


def _merge_int(a: Message, b: Message) -> bytes | None:
    out = _bounds(a, b, zigzag_decode, field_sint)
    if out is None:
        return None
    if 3 in a and 3 in b:
        total = zigzag_decode(_first(a, 3)) + zigzag_decode(_first(b, 3))
        if _INT64_MIN <= total <= _INT64_MAX:
            out += field_sint(3, total)
    return out


def _merge_double(a: Message, b: Message) -> bytes | None:
    out = _bounds(a, b, as_double, field_double)
    if out is None:
        return None
    if 3 in a and 3 in b:
        out += field_double(3, as_double(_first(a, 3)) + as_double(_first(b, 3)))
    return out


def _merge_string(a: Message, b: Message) -> bytes | None:
    out = b""
    # bounds stored truncated (fields 4, 5) are left out rather than merged
    if all(k in m and 4 not in m and 5 not in m for m in (a, b) for k in (1, 2)):
        lo = min(bytes(a[1][0]), bytes(b[1][0]))  # type: ignore[arg-type]
        hi = max(bytes(a[2][0]), bytes(b[2][0]))  # type: ignore[arg-type]
        out += field_bytes(1, lo) + field_bytes(2, hi)
    if 3 in a and 3 in b:
        out += field_sint(3, zigzag_decode(_first(a, 3)) + zigzag_decode(_first(b, 3)))
    return out


def _merge_bucket(a: Message, b: Message) -> bytes | None:
    ca, cb = _counts(a), _counts(b)
    if len(ca) != len(cb):
        return None
    return field_bytes(1, b"".join(encode_varint(x + y) for x, y in zip(ca, cb, strict=True)))


def _merge_decimal(a: Message, b: Message) -> bytes | None:
    try:
        da = {k: Decimal(bytes(v[0]).decode()) for k, v in a.items()}  # type: ignore[arg-type]
        db = {k: Decimal(bytes(v[0]).decode()) for k, v in b.items()}  # type: ignore[arg-type]
    except (InvalidOperation, UnicodeDecodeError):
        return None
    out = b""
    if all(k in d for d in (da, db) for k in (1, 2)):
        out += field_bytes(1, str(min(da[1], db[1])).encode())
        out += field_bytes(2, str(max(da[2], db[2])).encode())
    if 3 in da and 3 in db:
        out += field_bytes(3, str(da[3] + db[3]).encode())
    return out


def _merge_date(a: Message, b: Message) -> bytes | None:
    return _bounds(a, b, zigzag_decode, field_sint)


def _merge_binary(a: Message, b: Message) -> bytes | None:
    if 1 in a and 1 in b:
        return field_sint(1, zigzag_decode(_first(a, 1)) + zigzag_decode(_first(b, 1)))
    return b""


def _merge_collection(a: Message, b: Message) -> bytes | None:
    if not all(k in m for m in (a, b) for k in (1, 2, 3)):
        return None
    return (
        field_varint(1, min(_first(a, 1), _first(b, 1)))
        + field_varint(2, max(_first(a, 2), _first(b, 2)))
        + field_varint(3, _first(a, 3) + _first(b, 3))
    )


#: Timestamp statistics (bounds in two time zones plus nanoseconds) are dropped, not merged.
_KINDS: dict[int, Callable[[Message, Message], bytes | None]] = {
    _INT: _merge_int,
    _DOUBLE: _merge_double,
    _STRING: _merge_string,
    _BUCKET: _merge_bucket,
    _DECIMAL: _merge_decimal,
    _DATE: _merge_date,
    _BINARY: _merge_binary,
    _TIMESTAMP: lambda a, b: None,
    _COLLECTION: _merge_collection,
}


# --------------------------------------------------------------------------- helpers


def _first(message: Message, field: int) -> int:
    return int(message.get(field, [0])[0])  # type: ignore[arg-type]


def _bounds(
    a: Message,
    b: Message,
    decode: Callable[[int], Any],
    encode: Callable[[int, Any], bytes],
) -> bytes | None:
    """Minimum (field 1) and maximum (field 2) of both, or ``None`` when either lacks one."""
    if not all(k in m for m in (a, b) for k in (1, 2)):
        return None
    lo = min(decode(_first(a, 1)), decode(_first(b, 1)))
    hi = max(decode(_first(a, 2)), decode(_first(b, 2)))
    return encode(1, lo) + encode(2, hi)


def _counts(message: Message) -> list[int]:
    out: list[int] = []
    for value in message.get(1, []):
        if isinstance(value, bytes):
            out.extend(packed_varints(value))
        else:
            out.append(value)
    return out
