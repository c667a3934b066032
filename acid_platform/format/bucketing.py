"""Which bucket a row belongs to: Hive's bucketing hash, versions 1 and 2.

A bucketed table sends each row to bucket ``(hash & 0x7FFFFFFF) % num_buckets``, where ``hash``
folds the bucketing columns as ``h = 31 * h + field_hash`` (from 0, NULL hashes to 0) in 32-bit
Java arithmetic. The field hash depends on the table's ``bucketing_version``:

* version 1 (``ObjectInspectorUtils.getBucketHashCodeOld``): Java ``hashCode``-style rules;
* version 2 (``ObjectInspectorUtils.getBucketHashCode``, Hive 3 default): Murmur3 32-bit with
  seed 104729 over the value's big-endian bytes (UTF-8 for text), Hive's variant of the tail.

``bucket_for`` answers for one row, ``bucket_ids`` for Arrow columns (vectorised, same answers).

>>> bucket_hash([1], ["int"])
1321152925
>>> bucket_for(["Trino rocks"], ["string"], 4, version=1)
2
>>> import pyarrow as pa
>>> bucket_ids([pa.array([0, 1, None])], ["int"], 2).tolist()
[1, 1, 0]
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import operator
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import InvalidBucketError, UnsupportedTypeError

#: Hive's ``Murmur3.DEFAULT_SEED``.
MURMUR3_SEED = 104729

U32 = npt.NDArray[np.uint32]


def bucket_hash(values: Sequence[object], hive_types: Sequence[str], version: int = 2) -> int:
    """The bucketing hash of one row, as a signed 32-bit Java int.

    ``values`` are Python values of the bucketing columns in order (``None`` is NULL).

    >>> bucket_hash([0], ["int"]), bucket_hash([0], ["int"], version=1)
    (1362653161, 0)
    >>> bucket_hash(["a", 1], ["string", "bigint"])
    -1586117854
    """
    _check_version(version)
    if len(values) != len(hive_types):
        raise ValueError(f"{len(values)} values for {len(hive_types)} bucketing columns")
    h = 0
    for value, text in zip(values, hive_types, strict=True):
        h = (31 * h + _field_hash(value, _parse_type(text), version)) & _M32
    return _signed(h)


def bucket_for(
    values: Sequence[object], hive_types: Sequence[str], num_buckets: int, version: int = 2
) -> int:
    """The bucket (0 .. ``num_buckets`` - 1) Hive puts this row in.

    >>> bucket_for([0], ["int"], 2), bucket_for([1], ["int"], 2)
    (1, 1)
    """
    _check_num_buckets(num_buckets)
    return (bucket_hash(values, hive_types, version) & 0x7FFFFFFF) % num_buckets


def bucket_ids(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    hive_types: Sequence[str],
    num_buckets: int,
    version: int = 2,
) -> npt.NDArray[np.int32]:
    """Vectorised :func:`bucket_for` over Arrow columns: the bucket of every row (``int32``).

    Fixed-width types and decimals up to 18 digits hash fully in numpy; text takes one numpy
    step per 4 bytes of its longest values (a few very long ones finish in Python); wider
    decimals go one value at a time.

    >>> import pyarrow as pa
    >>> bucket_ids([pa.array(["a", "abc"]), pa.array([1, 2], pa.int32())], ["string", "int"], 8)
    array([3, 3], dtype=int32)
    """
    _check_version(version)
    _check_num_buckets(num_buckets)
    if not columns or len(columns) != len(hive_types):
        raise ValueError(f"{len(columns)} columns for {len(hive_types)} bucketing columns")
    lengths = {len(c) for c in columns}
    if len(lengths) != 1:
        raise ValueError(f"bucketing columns have different lengths: {sorted(lengths)}")
    h = np.zeros(lengths.pop(), dtype=np.uint32)
    for column, text in zip(columns, hive_types, strict=True):
        h = h * np.uint32(31) + _column_hashes(column, _parse_type(text), version)
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int32)


def murmur3_32(data: bytes, seed: int = MURMUR3_SEED) -> int:
    """Hive's ``Murmur3.hash32`` of ``data``, as a signed 32-bit int.

    Hive combines the 1-3 tail bytes sign-extended, so it differs from reference MurmurHash3
    when a tail byte is >= 0x80 (the reference is unsigned there).

    >>> murmur3_32(b"a"), murmur3_32(b"hello")
    (1086686554, 1321743225)
    """
    return _signed(_murmur_from(bytes(data), seed & _M32, 0))


# --------------------------------------------------------------------------- Hive types
_M32 = 0xFFFFFFFF
_INT_WIDTHS = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8}
_SIMPLE = {
    "tinyint": "tinyint",
    "smallint": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "boolean": "boolean",
    "float": "float",
    "double": "double",
    "double precision": "double",
    "string": "string",
    "date": "date",
    "timestamp": "timestamp",
    "binary": "binary",
}
_SIZED = re.compile(r"(varchar|char)\s*\(\s*(\d+)\s*\)")
_DECIMAL = re.compile(r"decimal\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?")


@dataclass(frozen=True)
class _HiveType:
    """A parsed bucketing column type: canonical ``name`` plus the text the caller gave."""

    name: str
    text: str
    length: int = 0
    precision: int = 0
    scale: int = 0


@functools.lru_cache(maxsize=256)
def _parse_type(text: str) -> _HiveType:
    norm = " ".join(text.strip().lower().split())
    if norm in _SIMPLE:
        return _HiveType(_SIMPLE[norm], text)
    if m := _SIZED.fullmatch(norm):
        length, limit = int(m[2]), (65535 if m[1] == "varchar" else 255)
        if not 1 <= length <= limit:
            raise UnsupportedTypeError(f"{m[1]} length must be 1..{limit}: {text!r}")
        return _HiveType(m[1], text, length=length)
    if m := _DECIMAL.fullmatch(norm):
        precision, scale = int(m[1] or 10), int(m[2] or 0)
        if not (1 <= precision <= 38 and 0 <= scale <= precision):
            raise UnsupportedTypeError(f"decimal precision/scale out of range: {text!r}")
        return _HiveType("decimal", text, precision=precision, scale=scale)
    raise UnsupportedTypeError(f"bucketing on Hive type {text!r} is not supported")


def _check_version(version: int) -> None:
    if version not in (1, 2):
        raise InvalidBucketError(f"bucketing_version must be 1 or 2, got {version!r}")


def _check_num_buckets(num_buckets: int) -> None:
    if isinstance(num_buckets, bool) or not 0 < operator.index(num_buckets) <= 0x7FFFFFFF:
        raise InvalidBucketError(f"number of buckets must be 1..2147483647, got {num_buckets!r}")


def _misfit(value: object, t: _HiveType, why: str = "") -> InvalidBucketError:
    detail = f" ({why})" if why else ""
    return InvalidBucketError(f"value {value!r} does not fit Hive type {t.text}{detail}")


# --------------------------------------------------------------------------- one value
def _field_hash(value: object, t: _HiveType, version: int) -> int:
    """The unsigned 32-bit field hash of one value (NULL -> 0)."""
    if value is None:
        return 0
    name = t.name
    if name == "boolean":
        if not isinstance(value, bool | np.bool_):
            raise _misfit(value, t)
        return 1 if value else 0
    if name in _INT_WIDTHS:
        v = _as_int(value, t)
        if version == 1 or name == "tinyint":
            return (v ^ (v >> 32)) & _M32 if name == "bigint" else v & _M32
        return _murmur(v.to_bytes(_INT_WIDTHS[name], "big", signed=True))
    if name == "float":
        bits = _float_bits(_as_float(value, t), t)
        if version == 1:
            return bits
        # Hive writes putFloat(floatToIntBits(f)): the int bits are *converted* to a float.
        return _murmur(struct.pack(">f", float(_signed(bits))))
    if name == "double":
        bits64 = _double_bits(_as_float(value, t))
        if version == 1:
            return (bits64 ^ (bits64 >> 32)) & _M32
        # Likewise putDouble(doubleToLongBits(d)) converts the long bits to a double.
        return _murmur(struct.pack(">d", float(bits64 - (bits64 >> 63 << 64))))
    if name in ("string", "varchar", "char", "binary"):
        data = _text_bytes(value, t)
        if version == 2:
            if name == "binary":
                raise UnsupportedTypeError(_BINARY_V2)
            return _murmur(data)
        # String starts from 0; Text/BytesWritable.hashCode (varchar, char, binary) from 1.
        return _java_bytes_hash(data, 0 if name == "string" else 1)
    if name == "date":
        if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
            raise _misfit(value, t)
        days = value.toordinal() - _EPOCH_ORDINAL
        return days & _M32 if version == 1 else _murmur(days.to_bytes(4, "big", signed=True))
    if name == "timestamp":
        seconds, nanos = _timestamp_parts(value, t)
        if version == 1:
            s = ((seconds << 30) | nanos) & 0xFFFFFFFFFFFFFFFF
            return (s ^ (s >> 32)) & _M32
        return _murmur(_timestamp_bytes(seconds, nanos))
    unscaled, scale = _decimal_parts(value, t)
    if version == 1:
        return _big_decimal_hash(unscaled, scale)
    bit_length = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return _murmur(unscaled.to_bytes(bit_length // 8 + 1, "big", signed=True))


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_REVERSED_3_DIGITS = np.array([int(f"{i:03d}"[::-1]) for i in range(1000)], np.int64)
_EPOCH = dt.datetime(1970, 1, 1)
_BINARY_V2 = (
    "bucketing_version 2 cannot hash binary columns reproducibly: Hive hashes the whole "
    "BytesWritable buffer, padding included"
)


def _as_int(value: object, t: _HiveType) -> int:
    if isinstance(value, bool | np.bool_):
        raise _misfit(value, t)
    try:
        v = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise _misfit(value, t) from None
    bound = 1 << (8 * _INT_WIDTHS[t.name] - 1)
    if not -bound <= v < bound:
        raise _misfit(value, t, "out of range")
    return v


def _as_float(value: object, t: _HiveType) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, float | int | np.number):
        raise _misfit(value, t)
    return float(value)


def _float_bits(f: float, t: _HiveType) -> int:
    if math.isnan(f):
        return 0x7FC00000  # Float.floatToIntBits canonical NaN
    try:
        return int.from_bytes(struct.pack(">f", f), "big")
    except OverflowError:
        raise _misfit(f, t, "out of float range") from None


def _double_bits(f: float) -> int:
    if math.isnan(f):
        return 0x7FF8000000000000  # Double.doubleToLongBits canonical NaN
    return int.from_bytes(struct.pack(">d", f), "big")


def _text_bytes(value: object, t: _HiveType) -> bytes:
    if t.name == "binary":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise _misfit(value, t)
        return bytes(value)
    if not isinstance(value, str):
        raise _misfit(value, t)
    if t.name == "char":
        value = value.rstrip(" ")  # Hive hashes CHAR without its padding
    if t.length and len(value) > t.length:
        raise _misfit(value, t, f"longer than {t.length} characters")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _misfit(value, t, str(e)) from None


def _timestamp_parts(value: object, t: _HiveType) -> tuple[int, int]:
    if not isinstance(value, dt.datetime) or value.tzinfo is not None:
        raise _misfit(value, t, "Hive timestamps are naive datetime.datetime wall-clock values")
    delta = value - _EPOCH
    nanos = delta.microseconds * 1000 + int(getattr(value, "nanosecond", 0))
    return delta.days * 86400 + delta.seconds, nanos


def _decimal_parts(value: object, t: _HiveType) -> tuple[int, int]:
    """``(unscaled, scale)`` with trailing zeros trimmed, as HiveDecimal keeps it."""
    if isinstance(value, int) and not isinstance(value, bool):
        unscaled, scale = value, 0
    elif isinstance(value, decimal.Decimal) and value.is_finite():
        numerator, denominator = value.as_integer_ratio()  # lowest terms: trailing zeros gone
        twos = (denominator & -denominator).bit_length() - 1
        scale = max(twos, _POWERS_OF_FIVE.get(denominator >> twos, 99))
        unscaled = numerator * 10**scale // denominator
    else:
        raise _misfit(value, t)
    if scale > t.scale or abs(unscaled) >= 10 ** (t.precision - t.scale + scale):
        raise _misfit(value, t)
    return unscaled, scale


_POWERS_OF_FIVE = {5**k: k for k in range(39)}


def _big_decimal_hash(unscaled: int, scale: int) -> int:
    """``java.math.BigDecimal.hashCode``: 31 * BigInteger.hashCode() + scale."""
    magnitude, h = abs(unscaled), 0
    for shift in range((magnitude.bit_length() + 31) // 32 * 32 - 32, -1, -32):
        h = (31 * h + ((magnitude >> shift) & _M32)) & _M32
    if unscaled < 0:
        h = -h & _M32
    return (31 * h + scale) & _M32


def _java_bytes_hash(data: bytes, initial: int) -> int:
    """``r = 31 * r + b`` over signed bytes, as Java ``String``/``Text`` hash UTF-8 bytes."""
    h = initial
    for b in data:
        h = (31 * h + b - ((b & 0x80) << 1)) & _M32
    return h


def _timestamp_bytes(seconds: int, nanos: int) -> bytes:
    """``TimestampWritableV2.getBytes()``: the LazyBinary timestamp encoding Hive hashes."""
    reversed_nanos = int(str(nanos).rjust(9, "0")[::-1]) if nanos else 0
    has_second_vint = not 0 <= seconds <= 0x7FFFFFFF
    flagged = has_second_vint or reversed_nanos != 0
    first = (seconds & 0x7FFFFFFF) | (0x80000000 if flagged else 0)
    out = first.to_bytes(4, "big")
    if flagged:
        out += _vlong(-reversed_nanos - 1 if has_second_vint else reversed_nanos)
    if has_second_vint:
        out += _vlong(seconds >> 31)
    return out


def _vlong(v: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong`` (as ``LazyBinaryUtils.writeVLongToByteArray``)."""
    if -112 <= v <= 127:
        return (v & 0xFF).to_bytes(1, "big")
    magnitude, marker = (~v, -120) if v < 0 else (v, -112)
    size = (magnitude.bit_length() + 7) // 8
    return ((marker - size) & 0xFF).to_bytes(1, "big") + magnitude.to_bytes(size, "big")


# --------------------------------------------------------------------------- Murmur3, scalar
_C1, _C2, _N = 0xCC9E2D51, 0x1B873593, 0xE6546B64


def _murmur(data: bytes) -> int:
    return _murmur_from(data, MURMUR3_SEED, 0)


def _murmur_from(data: bytes, h: int, first_block: int) -> int:
    """Finish ``Murmur3.hash32`` from block ``first_block`` with running hash ``h`` (unsigned)."""
    n = len(data)
    end = n & ~3
    for (k,) in struct.iter_unpack("<I", data[first_block * 4 : end]):
        k = _rotl((k * _C1) & _M32, 15) * _C2 & _M32
        h = (_rotl(h ^ k, 13) * 5 + _N) & _M32
    k1 = 0
    for i in range(n - end - 1, -1, -1):  # sign-extended tail: Hive's quirk
        b = data[end + i]
        k1 ^= ((b - ((b & 0x80) << 1)) << (8 * i)) & _M32
    if n > end:
        h ^= _rotl((k1 * _C1) & _M32, 15) * _C2 & _M32
    return _fmix(h ^ n)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _signed(u: int) -> int:
    return u - ((u & 0x80000000) << 1)


# --------------------------------------------------------------------------- Arrow columns
def _column_hashes(column: pa.Array | pa.ChunkedArray, t: _HiveType, version: int) -> U32:
    """Field hashes of a whole column, NULL -> 0."""
    if isinstance(column, pa.ChunkedArray):
        parts = [_column_hashes(c, t, version) for c in column.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    if not isinstance(column, pa.Array):
        raise TypeError(f"bucketing columns must be pyarrow arrays, got {type(column).__name__}")
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_null(column.type):  # all NULL
        return np.zeros(len(column), np.uint32)
    kind = t.name
    if kind in ("string", "varchar", "char", "binary"):
        hashes = _text_column(column, t, version)
    elif kind == "decimal" and pa.types.is_decimal(column.type) and column.type.precision <= 18:
        hashes = _decimal64_column(column, t, version)
    elif kind == "decimal":  # wider than 64 bits, or not decimal typed: one value at a time
        hashes = np.fromiter(
            (_field_hash(v, t, version) for v in column.to_pylist()), np.uint32, len(column)
        )
    else:
        hashes = _FIXED[kind](column, t, version)
    if column.null_count:
        hashes[column.is_null().to_numpy(zero_copy_only=False)] = 0
    return hashes


def _values(column: pa.Array, t: _HiveType, accept: Callable[[pa.DataType], bool]) -> np.ndarray:
    if not accept(column.type):
        raise InvalidBucketError(f"Arrow {column.type} column does not fit Hive type {t.text}")
    return column.fill_null(False if pa.types.is_boolean(column.type) else 0).to_numpy(
        zero_copy_only=False
    )


def _boolean_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    return _values(column, t, pa.types.is_boolean).astype(np.uint32)


def _integer_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    raw = _values(column, t, pa.types.is_integer)
    width = _INT_WIDTHS[t.name]
    if column.null_count < len(column):
        lo, hi = pc.min_max(column).values()
        bound = 1 << (8 * width - 1)
        for v in (lo.as_py(), hi.as_py()):
            if not -bound <= v < bound:
                raise _misfit(v, t, "out of range")
    if width == 8:
        v64 = raw.astype(np.int64)
        if version == 2:
            return _murmur_int64(v64)
        u = v64.view(np.uint64)
        return ((u ^ (u >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    v = raw.astype(np.int32)
    if version == 1 or width == 1:
        return v.view(np.uint32)
    return _murmur_int16(v.astype(np.int16)) if width == 2 else _murmur_int32(v)


def _float_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    raw = _values(column, t, _is_number).astype(np.float64)
    with np.errstate(over="ignore"):
        f = raw.astype(np.float32)
    overflow = np.isinf(f) & np.isfinite(raw)
    if overflow.any():
        raise _misfit(float(raw[np.argmax(overflow)]), t, "out of float range")
    bits = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
    if version == 1:
        return bits.view(np.uint32)
    return _murmur_int32(bits.astype(np.float32).view(np.int32))


def _double_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    f = _values(column, t, _is_number).astype(np.float64)
    bits = np.where(np.isnan(f), np.int64(0x7FF8000000000000), f.view(np.int64))
    if version == 1:
        u = bits.view(np.uint64)
        return ((u ^ (u >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    return _murmur_int64(bits.astype(np.float64).view(np.int64))


def _date_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    if pa.types.is_date64(column.type):
        column = column.cast(pa.date32())
    days = _values(column, t, pa.types.is_date32).astype("datetime64[D]").astype(np.int32)
    return days.view(np.uint32) if version == 1 else _murmur_int32(days)


def _timestamp_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    if not pa.types.is_timestamp(column.type) or column.type.tz is not None:
        raise InvalidBucketError(
            f"Arrow {column.type} column does not fit Hive type {t.text} (needs a naive timestamp)"
        )
    per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[column.type.unit]
    ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    seconds, fraction = np.divmod(ticks, np.int64(per_second))
    nanos = fraction * np.int64(1_000_000_000 // per_second)
    if version == 1:
        s = (seconds.view(np.uint64) << np.uint64(30)) | nanos.view(np.uint64)
        return ((s ^ (s >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    return _murmur_rows(*_timestamp_matrix(seconds, nanos))


def _decimal64_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    """Decimals of precision <= 18, whose unscaled values fit an int64."""
    column = column.cast(pa.decimal128(column.type.precision, column.type.scale))
    words = np.frombuffer(column.buffers()[1], "<i8").reshape(-1, 2)
    unscaled = words[column.offset : column.offset + len(column), 0].copy()  # low 64 bits
    if column.null_count:
        unscaled[column.is_null().to_numpy(zero_copy_only=False)] = 0
    scale = np.full(len(unscaled), column.type.scale, np.int64)
    while (trailing_zero := (scale > 0) & (unscaled % 10 == 0)).any():  # zero ends at scale 0
        unscaled[trailing_zero] //= 10
        scale[trailing_zero] -= 1
    digits_allowed = t.precision - t.scale + scale  # |unscaled| < 10 ** digits_allowed
    misfit = (scale > t.scale) | (
        (digits_allowed < 19) & (np.abs(unscaled) >= 10 ** np.minimum(digits_allowed, 18))
    )
    if misfit.any():
        raise _misfit(column[int(np.argmax(misfit))].as_py(), t)
    magnitude = np.abs(unscaled).view(np.uint64)
    if version == 1:  # BigDecimal.hashCode over the (at most two) 32-bit magnitude words
        high = (magnitude >> np.uint64(32)).astype(np.uint32)
        h = high * np.uint32(31) + (magnitude & np.uint64(_M32)).astype(np.uint32)
        h = np.where(unscaled < 0, np.uint32(0) - h, h)
        return h * np.uint32(31) + scale.astype(np.uint32)
    # BigInteger.toByteArray: minimal two's complement; shift it to the front of 8 BE bytes
    bits = np.where(unscaled < 0, ~unscaled, unscaled)
    length = np.ones(len(bits), np.int64)
    for k in range(1, 8):
        length += bits >= (1 << (8 * k - 1))
    front = unscaled.view(np.uint64) << (np.uint64(8) * (np.uint64(8) - length.astype(np.uint64)))
    matrix = np.zeros((len(unscaled), 12), np.uint8)
    matrix[:, :8] = front.byteswap().view(np.uint8).reshape(-1, 8)
    return _murmur_rows(matrix, length)


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_floating(t) or pa.types.is_integer(t))


_FIXED: dict[str, Callable[[pa.Array, _HiveType, int], U32]] = {
    "boolean": _boolean_column,
    "tinyint": _integer_column,
    "smallint": _integer_column,
    "int": _integer_column,
    "bigint": _integer_column,
    "float": _float_column,
    "double": _double_column,
    "date": _date_column,
    "timestamp": _timestamp_column,
}


def _text_column(column: pa.Array, t: _HiveType, version: int) -> U32:
    binary = t.name == "binary"
    is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    is_bytes = pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)
    if not (is_bytes if binary else is_text or pa.types.is_string_view(column.type)):
        raise InvalidBucketError(f"Arrow {column.type} column does not fit Hive type {t.text}")
    if binary and version == 2:
        raise UnsupportedTypeError(_BINARY_V2)
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    if t.name == "char":
        column = pc.utf8_rtrim(column, characters=" ")
    if t.length:
        too_long = pc.greater(pc.utf8_length(column), t.length)
        if pc.any(too_long).as_py():
            first = column.filter(too_long)[0].as_py()
            raise _misfit(first, t, f"longer than {t.length} characters")
    column = column.cast(pa.large_binary())
    if len(column) == 0:
        return np.zeros(0, np.uint32)
    offsets = np.frombuffer(column.buffers()[1], np.int64)[column.offset :][: len(column) + 1]
    lengths = np.diff(offsets)
    lengths[column.is_null().to_numpy(zero_copy_only=False)] = 0
    buffer = column.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    data = data[offsets[0] : offsets[-1]] if len(offsets) else data[:0]
    if lengths.sum() != len(data):  # NULL slots owning bytes: drop them
        keep = np.repeat(lengths > 0, np.diff(offsets))
        data = data[keep]
    if version == 2:
        return _murmur_segments(data, lengths)
    return _java_hash_segments(data, lengths, 0 if t.name == "string" else 1)


# --------------------------------------------------------------------------- Murmur3, numpy
_SCALAR_TAIL_ROWS = 32  # below this many rows still running, finish them in plain Python


def _mix_vec(k: U32, h: U32) -> U32:
    k = k * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    h = h ^ (k * np.uint32(_C2))
    return ((h << np.uint32(13)) | (h >> np.uint32(19))) * np.uint32(5) + np.uint32(_N)


def _fmix_vec(h: U32, length: npt.NDArray[np.integer] | int) -> U32:
    h = h ^ np.asarray(length).astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def _seed(n: int) -> U32:
    return np.full(n, MURMUR3_SEED, np.uint32)


def _murmur_int32(v: npt.NDArray[np.int32]) -> U32:
    # Big-endian bytes read as a little-endian block == the byte-swapped value.
    return _fmix_vec(_mix_vec(v.view(np.uint32).byteswap(), _seed(len(v))), 4)


def _murmur_int64(v: npt.NDArray[np.int64]) -> U32:
    u = v.view(np.uint64)
    high = (u >> np.uint64(32)).astype(np.uint32).byteswap()
    low = (u & np.uint64(_M32)).astype(np.uint32).byteswap()
    return _fmix_vec(_mix_vec(low, _mix_vec(high, _seed(len(v)))), 8)


def _murmur_int16(v: npt.NDArray[np.int16]) -> U32:
    # Two tail bytes, sign-extended: k1 = (low << 8) ^ high.
    high = (v >> 8).astype(np.int32)
    low = (v & 0xFF).astype(np.uint8).view(np.int8).astype(np.int32)
    return _fmix_vec(_seed(len(v)) ^ _tail_mix(((low << 8) ^ high).view(np.uint32)), 2)


def _tail_mix(k1: U32) -> U32:
    k1 = k1 * np.uint32(_C1)
    k1 = (k1 << np.uint32(15)) | (k1 >> np.uint32(17))
    return k1 * np.uint32(_C2)


def _murmur_segments(data: npt.NDArray[np.uint8], lengths: npt.NDArray[np.int64]) -> U32:
    """Murmur3 of back-to-back byte strings (``data`` split by ``lengths``)."""
    words, s, n, order = _segments(data, lengths)
    blocks = n >> 2
    h = _seed(len(n))
    finished: dict[int, int] = {}
    for j, running in _running_rows(blocks):
        if running < _SCALAR_TAIL_ROWS:
            for r in range(running):
                finished[r] = _murmur_from(bytes(data[s[r] : s[r] + n[r]]), int(h[r]), j)
            break
        h[:running] = _mix_vec(words[s[:running] + 4 * j], h[:running])
    k1 = _signed_tail(words[s + (blocks << 2)], n & 3)
    h = _fmix_vec(h ^ _tail_mix(k1.view(np.uint32)), n)
    for r, value in finished.items():
        h[r] = value
    return _unsort(h, order)


def _murmur_rows(matrix: npt.NDArray[np.uint8], lengths: npt.NDArray[np.int64]) -> U32:
    """Murmur3 of short byte strings given as zero-padded rows of a C-contiguous matrix."""
    words = matrix.view("<u4")
    blocks = lengths >> 2
    h = _seed(len(lengths))
    for j in range(words.shape[1] - 1):
        h = np.where(blocks > j, _mix_vec(words[:, j], h), h)
    k1 = _signed_tail(words[np.arange(len(lengths)), blocks], lengths & 3)
    return _fmix_vec(h ^ _tail_mix(k1.view(np.uint32)), lengths)


def _java_hash_segments(
    data: npt.NDArray[np.uint8], lengths: npt.NDArray[np.int64], initial: int
) -> U32:
    """``r = 31 * r + b`` over the signed bytes of back-to-back strings, 4 bytes a step."""
    words, s, n, order = _segments(data, lengths)
    blocks = n >> 2
    h = np.full(len(n), initial, np.uint32)
    finished: dict[int, int] = {}
    for j, running in _running_rows(blocks):
        if running < _SCALAR_TAIL_ROWS:
            for r in range(running):
                finished[r] = _java_bytes_hash(bytes(data[s[r] + 4 * j : s[r] + n[r]]), int(h[r]))
            break
        w = words[s[:running] + 4 * j]
        acc = h[:running]
        for i in range(4):
            acc = acc * np.uint32(31) + _signed_byte(w, i).view(np.uint32)
        h[:running] = acc
    rest, w = n & 3, words[s + (blocks << 2)]
    for i in range(3):
        h = np.where(rest > i, h * np.uint32(31) + _signed_byte(w, i).view(np.uint32), h)
    for r, value in finished.items():
        h[r] = value
    return _unsort(h, order)


def _segments(
    data: npt.NDArray[np.uint8], lengths: npt.NDArray[np.int64]
) -> tuple[U32, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """Words at every byte offset, and row starts/lengths sorted longest first (+ the order)."""
    starts = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    blocks = lengths >> 2
    top = int(blocks.max()) if len(blocks) else 0
    key = top - blocks  # ascending key == longest first; small keys sort by radix
    order = np.argsort(key.astype(np.uint16) if top < 1 << 16 else key, kind="stable")
    return _words_at(data), starts[order], lengths[order], order


def _words_at(data: npt.NDArray[np.uint8]) -> U32:
    """``out[p]`` = the little-endian 32-bit word at byte ``p`` (zero past the end), no copy."""
    padded = np.concatenate([data, np.zeros(4, np.uint8)])
    overlapping = np.lib.stride_tricks.as_strided(padded, (len(data) + 1, 4), (1, 1))
    return overlapping.view("<u4")[:, 0]


def _running_rows(blocks: npt.NDArray[np.int64]) -> Iterator[tuple[int, int]]:
    """``(j, running)``: rows sorted longest first, the first ``running`` have block ``j``."""
    descending = -blocks
    j = 0
    while (running := int(np.searchsorted(descending, -j, side="left"))) > 0:
        yield j, running
        j += 1


def _signed_byte(words: U32, i: int) -> npt.NDArray[np.int32]:
    byte = ((words >> np.uint32(8 * i)) & np.uint32(0xFF)).astype(np.int32)
    return (byte ^ 0x80) - 0x80


def _signed_tail(words: U32, rest: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """Hive's tail block: bytes ``< rest`` of each word, each sign-extended, XORed in place."""
    k1 = np.zeros(len(words), np.int32)
    for i in range(3):
        k1 ^= np.where(rest > i, _signed_byte(words, i) << np.int32(8 * i), np.int32(0))
    return k1


def _unsort(h: U32, order: npt.NDArray[np.intp]) -> U32:
    out = np.empty_like(h)
    out[order] = h
    return out


def _timestamp_matrix(
    seconds: npt.NDArray[np.int64], nanos: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Vectorised :func:`_timestamp_bytes`: one zero-padded 20-byte row each, and the lengths."""
    # The 9 nanosecond digits reversed, 3 digits at a time through a table.
    reversed_nanos = _REVERSED_3_DIGITS[nanos % 1000] * 1_000_000
    reversed_nanos += _REVERSED_3_DIGITS[nanos // 1000 % 1000] * 1000
    reversed_nanos += _REVERSED_3_DIGITS[nanos // 1_000_000]
    has_second_vint = (seconds < 0) | (seconds > 0x7FFFFFFF)
    flagged = has_second_vint | (reversed_nanos != 0)
    first = (seconds & 0x7FFFFFFF) | np.where(flagged, 0x80000000, 0)
    nanos_vint, nanos_len = _vlong_matrix(
        np.where(has_second_vint, -reversed_nanos - 1, reversed_nanos)
    )
    seconds_vint, seconds_len = _vlong_matrix(seconds >> 31)
    nanos_len = np.where(flagged, nanos_len, 0)
    seconds_len = np.where(has_second_vint, seconds_len, 0)
    matrix = np.zeros((len(seconds), 20), np.uint8)
    matrix[:, :4] = first.astype(np.uint32).byteswap().view(np.uint8).reshape(-1, 4)
    width = nanos_vint.shape[1]
    matrix[:, 4 : 4 + width] = np.where(np.arange(width) < nanos_len[:, None], nanos_vint, 0)
    rows = np.arange(len(seconds))
    for i in range(int(seconds_len.max(initial=0))):  # after the nanos, so a per-row offset
        on = i < seconds_len
        matrix[rows[on], 4 + nanos_len[on] + i] = seconds_vint[on, i]
    return matrix, 4 + nanos_len + seconds_len


def _vlong_matrix(
    v: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Vectorised :func:`_vlong`: a row of bytes per value (as wide as the longest), the counts."""
    small = (v >= -112) & (v <= 127)
    magnitude = np.where(small, 0, np.where(v < 0, ~v, v))
    width = 1 + (int(magnitude.max(initial=0)).bit_length() + 7) // 8
    size = np.zeros(len(v), np.int64)
    for i in range(width - 1):
        size += magnitude >= (np.int64(1) << np.int64(8 * i))
    out = np.zeros((len(v), width), np.uint8)
    out[:, 0] = (
        np.where(small, v, np.where(v < 0, -120, -112) - size).astype(np.int8).view(np.uint8)
    )
    for i in range(1, width):  # byte i of the size-byte big-endian magnitude
        shift = 8 * (size - i)
        byte = (magnitude >> np.maximum(shift, 0)) & 0xFF
        out[:, i] = np.where(~small & (shift >= 0), byte, 0).astype(np.uint8)
    return out, np.where(small, 1, size + 1)
