"""Hive's bucketing field hashes, one value at a time: Hive type names, the version 1 and 2
rules for each type, and Hive's Murmur3 variant (see :mod:`.bucketing` for the whole story).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import operator
import re
import struct
from dataclasses import dataclass

import numpy as np

from acid_platform.errors import InvalidBucketError, UnsupportedTypeError

#: Hive's ``Murmur3.DEFAULT_SEED``.
MURMUR3_SEED = 104729

# --------------------------------------------------------------------------- Hive types
MASK32 = 0xFFFFFFFF  # 32-bit Java int arithmetic
INT_WIDTHS = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8}
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
class HiveType:
    """A parsed bucketing column type: canonical ``name`` plus the text the caller gave."""

    name: str
    text: str
    length: int = 0
    precision: int = 0
    scale: int = 0


@functools.lru_cache(maxsize=256)
def parse_hive_type(text: str) -> HiveType:
    """Parse a bucketing column's Hive type name (``int``, ``varchar(10)``, ``decimal(9,2)``…)."""
    norm = " ".join(text.strip().lower().split())
    if norm in _SIMPLE:
        return HiveType(_SIMPLE[norm], text)
    if m := _SIZED.fullmatch(norm):
        length, limit = int(m[2]), (65535 if m[1] == "varchar" else 255)
        if not 1 <= length <= limit:
            raise UnsupportedTypeError(f"{m[1]} length must be 1..{limit}: {text!r}")
        return HiveType(m[1], text, length=length)
    if m := _DECIMAL.fullmatch(norm):
        precision, scale = int(m[1] or 10), int(m[2] or 0)
        if not (1 <= precision <= 38 and 0 <= scale <= precision):
            raise UnsupportedTypeError(f"decimal precision/scale out of range: {text!r}")
        return HiveType("decimal", text, precision=precision, scale=scale)
    raise UnsupportedTypeError(f"bucketing on Hive type {text!r} is not supported")


def check_bucketing_version(version: int) -> None:
    """Raise ``InvalidBucketError`` unless ``version`` is 1 or 2."""
    if version not in (1, 2):
        raise InvalidBucketError(f"bucketing_version must be 1 or 2, got {version!r}")


def check_num_buckets(num_buckets: int) -> None:
    """Raise ``InvalidBucketError`` unless ``num_buckets`` is 1..2147483647."""
    if isinstance(num_buckets, bool) or not 0 < operator.index(num_buckets) <= 0x7FFFFFFF:
        raise InvalidBucketError(f"number of buckets must be 1..2147483647, got {num_buckets!r}")


def misfit_error(value: object, t: HiveType, why: str = "") -> InvalidBucketError:
    """The error for a value that does not fit its bucketing column's Hive type."""
    detail = f" ({why})" if why else ""
    return InvalidBucketError(f"value {value!r} does not fit Hive type {t.text}{detail}")


# --------------------------------------------------------------------------- one value
def field_hash(value: object, t: HiveType, version: int) -> int:
    """The unsigned 32-bit field hash of one value (NULL -> 0)."""
    if value is None:
        return 0
    name = t.name
    if name == "boolean":
        if not isinstance(value, bool | np.bool_):
            raise misfit_error(value, t)
        return 1 if value else 0
    if name in INT_WIDTHS:
        v = _as_int(value, t)
        if version == 1 or name == "tinyint":
            return (v ^ (v >> 32)) & MASK32 if name == "bigint" else v & MASK32
        return _murmur(v.to_bytes(INT_WIDTHS[name], "big", signed=True))
    if name == "float":
        bits = _float_bits(_as_float(value, t), t)
        if version == 1:
            return bits
        # Hive writes putFloat(floatToIntBits(f)): the int bits are *converted* to a float.
        return _murmur(struct.pack(">f", float(to_signed32(bits))))
    if name == "double":
        bits64 = _double_bits(_as_float(value, t))
        if version == 1:
            return (bits64 ^ (bits64 >> 32)) & MASK32
        # Likewise putDouble(doubleToLongBits(d)) converts the long bits to a double.
        return _murmur(struct.pack(">d", float(bits64 - (bits64 >> 63 << 64))))
    if name in ("string", "varchar", "char", "binary"):
        data = _text_bytes(value, t)
        if version == 2:
            if name == "binary":
                raise UnsupportedTypeError(BINARY_V2_UNSUPPORTED)
            return _murmur(data)
        # String starts from 0; Text/BytesWritable.hashCode (varchar, char, binary) from 1.
        return java_bytes_hash(data, 0 if name == "string" else 1)
    if name == "date":
        if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
            raise misfit_error(value, t)
        days = value.toordinal() - _EPOCH_ORDINAL
        return days & MASK32 if version == 1 else _murmur(days.to_bytes(4, "big", signed=True))
    if name == "timestamp":
        seconds, nanos = _timestamp_parts(value, t)
        if version == 1:
            s = ((seconds << 30) | nanos) & 0xFFFFFFFFFFFFFFFF
            return (s ^ (s >> 32)) & MASK32
        return _murmur(_timestamp_bytes(seconds, nanos))
    unscaled, scale = _decimal_parts(value, t)
    if version == 1:
        return _big_decimal_hash(unscaled, scale)
    bit_length = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return _murmur(unscaled.to_bytes(bit_length // 8 + 1, "big", signed=True))


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_EPOCH = dt.datetime(1970, 1, 1)
BINARY_V2_UNSUPPORTED = (
    "bucketing_version 2 cannot hash binary columns reproducibly: Hive hashes the whole "
    "BytesWritable buffer, padding included"
)


def _as_int(value: object, t: HiveType) -> int:
    if isinstance(value, bool | np.bool_):
        raise misfit_error(value, t)
    try:
        v = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise misfit_error(value, t) from None
    bound = 1 << (8 * INT_WIDTHS[t.name] - 1)
    if not -bound <= v < bound:
        raise misfit_error(value, t, "out of range")
    return v


def _as_float(value: object, t: HiveType) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, float | int | np.number):
        raise misfit_error(value, t)
    return float(value)


def _float_bits(f: float, t: HiveType) -> int:
    if math.isnan(f):
        return 0x7FC00000  # Float.floatToIntBits canonical NaN
    try:
        return int.from_bytes(struct.pack(">f", f), "big")
    except OverflowError:
        raise misfit_error(f, t, "out of float range") from None


def _double_bits(f: float) -> int:
    if math.isnan(f):
        return 0x7FF8000000000000  # Double.doubleToLongBits canonical NaN
    return int.from_bytes(struct.pack(">d", f), "big")


def _text_bytes(value: object, t: HiveType) -> bytes:
    if t.name == "binary":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise misfit_error(value, t)
        return bytes(value)
    if not isinstance(value, str):
        raise misfit_error(value, t)
    if t.name == "char":
        value = value.rstrip(" ")  # Hive hashes CHAR without its padding
    if t.length and len(value) > t.length:
        raise misfit_error(value, t, f"longer than {t.length} characters")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise misfit_error(value, t, str(e)) from None


def _timestamp_parts(value: object, t: HiveType) -> tuple[int, int]:
    if not isinstance(value, dt.datetime) or value.tzinfo is not None:
        raise misfit_error(
            value, t, "Hive timestamps are naive datetime.datetime wall-clock values"
        )
    delta = value - _EPOCH
    nanos = delta.microseconds * 1000 + int(getattr(value, "nanosecond", 0))
    return delta.days * 86400 + delta.seconds, nanos


def _decimal_parts(value: object, t: HiveType) -> tuple[int, int]:
    """``(unscaled, scale)`` with trailing zeros trimmed, as HiveDecimal keeps it."""
    if isinstance(value, int) and not isinstance(value, bool):
        unscaled, scale = value, 0
    elif isinstance(value, decimal.Decimal) and value.is_finite():
        numerator, denominator = value.as_integer_ratio()  # lowest terms: trailing zeros gone
        twos = (denominator & -denominator).bit_length() - 1
        scale = max(twos, _POWERS_OF_FIVE.get(denominator >> twos, 99))
        unscaled = numerator * 10**scale // denominator
    else:
        raise misfit_error(value, t)
    if scale > t.scale or abs(unscaled) >= 10 ** (t.precision - t.scale + scale):
        raise misfit_error(value, t)
    return unscaled, scale


_POWERS_OF_FIVE = {5**k: k for k in range(39)}


def _big_decimal_hash(unscaled: int, scale: int) -> int:
    """``java.math.BigDecimal.hashCode``: 31 * BigInteger.hashCode() + scale."""
    magnitude, h = abs(unscaled), 0
    for shift in range((magnitude.bit_length() + 31) // 32 * 32 - 32, -1, -32):
        h = (31 * h + ((magnitude >> shift) & MASK32)) & MASK32
    if unscaled < 0:
        h = -h & MASK32
    return (31 * h + scale) & MASK32


def java_bytes_hash(data: bytes, initial: int) -> int:
    """``r = 31 * r + b`` over signed bytes, as Java ``String``/``Text`` hash UTF-8 bytes."""
    h = initial
    for b in data:
        h = (31 * h + b - ((b & 0x80) << 1)) & MASK32
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
#: Murmur3_32's multipliers and its per-block additive constant.
MURMUR3_C1, MURMUR3_C2, MURMUR3_N = 0xCC9E2D51, 0x1B873593, 0xE6546B64


def _murmur(data: bytes) -> int:
    return murmur3_from(data, MURMUR3_SEED, 0)


def murmur3_from(data: bytes, h: int, first_block: int) -> int:
    """Finish ``Murmur3.hash32`` from block ``first_block`` with running hash ``h`` (unsigned)."""
    n = len(data)
    end = n & ~3
    for (k,) in struct.iter_unpack("<I", data[first_block * 4 : end]):
        k = _rotl((k * MURMUR3_C1) & MASK32, 15) * MURMUR3_C2 & MASK32
        h = (_rotl(h ^ k, 13) * 5 + MURMUR3_N) & MASK32
    k1 = 0
    for i in range(n - end - 1, -1, -1):  # sign-extended tail: Hive's quirk
        b = data[end + i]
        k1 ^= ((b - ((b & 0x80) << 1)) << (8 * i)) & MASK32
    if n > end:
        h ^= _rotl((k1 * MURMUR3_C1) & MASK32, 15) * MURMUR3_C2 & MASK32
    return _fmix(h ^ n)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & MASK32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK32
    return h ^ (h >> 16)


def to_signed32(u: int) -> int:
    """An unsigned 32-bit value as a Java int."""
    return u - ((u & 0x80000000) << 1)
