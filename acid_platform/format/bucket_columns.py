"""Vectorised bucketing hashes: the field hashes of :mod:`.hive_hash` over whole Arrow columns,
Murmur3 and Java's byte hash in numpy (same answers as the scalar code, tested against it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import InvalidBucketError, UnsupportedTypeError
from acid_platform.format.hive_hash import (
    BINARY_V2_UNSUPPORTED,
    INT_WIDTHS,
    MASK32,
    MURMUR3_C1,
    MURMUR3_C2,
    MURMUR3_N,
    MURMUR3_SEED,
    HiveType,
    field_hash,
    java_bytes_hash,
    misfit_error,
    murmur3_from,
)

U32 = npt.NDArray[np.uint32]
#: ``int(str(i).zfill(3)[::-1])`` for 0..999: nanosecond digits reversed three at a time.
_REVERSED_3_DIGITS = np.array([int(f"{i:03d}"[::-1]) for i in range(1000)], np.int64)


# --------------------------------------------------------------------------- Arrow columns
def column_hashes(column: pa.Array | pa.ChunkedArray, t: HiveType, version: int) -> U32:
    """Field hashes of a whole column, NULL -> 0."""
    if isinstance(column, pa.ChunkedArray):
        parts = [column_hashes(c, t, version) for c in column.chunks]
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
            (field_hash(v, t, version) for v in column.to_pylist()), np.uint32, len(column)
        )
    else:
        hashes = _FIXED[kind](column, t, version)
    if column.null_count:
        hashes[column.is_null().to_numpy(zero_copy_only=False)] = 0
    return hashes


def _values(column: pa.Array, t: HiveType, accept: Callable[[pa.DataType], bool]) -> np.ndarray:
    if not accept(column.type):
        raise InvalidBucketError(f"Arrow {column.type} column does not fit Hive type {t.text}")
    return column.fill_null(False if pa.types.is_boolean(column.type) else 0).to_numpy(
        zero_copy_only=False
    )


def _boolean_column(column: pa.Array, t: HiveType, version: int) -> U32:
    return _values(column, t, pa.types.is_boolean).astype(np.uint32)


def _integer_column(column: pa.Array, t: HiveType, version: int) -> U32:
    raw = _values(column, t, pa.types.is_integer)
    width = INT_WIDTHS[t.name]
    if column.null_count < len(column):
        lo, hi = pc.min_max(column).values()
        bound = 1 << (8 * width - 1)
        for v in (lo.as_py(), hi.as_py()):
            if not -bound <= v < bound:
                raise misfit_error(v, t, "out of range")
    if width == 8:
        v64 = raw.astype(np.int64)
        if version == 2:
            return _murmur_int64(v64)
        u = v64.view(np.uint64)
        return ((u ^ (u >> np.uint64(32))) & np.uint64(MASK32)).astype(np.uint32)
    v = raw.astype(np.int32)
    if version == 1 or width == 1:
        return v.view(np.uint32)
    return _murmur_int16(v.astype(np.int16)) if width == 2 else _murmur_int32(v)


def _float_column(column: pa.Array, t: HiveType, version: int) -> U32:
    raw = _values(column, t, _is_number).astype(np.float64)
    with np.errstate(over="ignore"):
        f = raw.astype(np.float32)
    overflow = np.isinf(f) & np.isfinite(raw)
    if overflow.any():
        raise misfit_error(float(raw[np.argmax(overflow)]), t, "out of float range")
    bits = np.where(np.isnan(f), np.int32(0x7FC00000), f.view(np.int32))
    if version == 1:
        return bits.view(np.uint32)
    return _murmur_int32(bits.astype(np.float32).view(np.int32))


def _double_column(column: pa.Array, t: HiveType, version: int) -> U32:
    f = _values(column, t, _is_number).astype(np.float64)
    bits = np.where(np.isnan(f), np.int64(0x7FF8000000000000), f.view(np.int64))
    if version == 1:
        u = bits.view(np.uint64)
        return ((u ^ (u >> np.uint64(32))) & np.uint64(MASK32)).astype(np.uint32)
    return _murmur_int64(bits.astype(np.float64).view(np.int64))


def _date_column(column: pa.Array, t: HiveType, version: int) -> U32:
    if pa.types.is_date64(column.type):
        column = column.cast(pa.date32())
    days = _values(column, t, pa.types.is_date32).astype("datetime64[D]").astype(np.int32)
    return days.view(np.uint32) if version == 1 else _murmur_int32(days)


def _timestamp_column(column: pa.Array, t: HiveType, version: int) -> U32:
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
        return ((s ^ (s >> np.uint64(32))) & np.uint64(MASK32)).astype(np.uint32)
    return _murmur_rows(*_timestamp_matrix(seconds, nanos))


def _decimal64_column(column: pa.Array, t: HiveType, version: int) -> U32:
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
        raise misfit_error(column[int(np.argmax(misfit))].as_py(), t)
    magnitude = np.abs(unscaled).view(np.uint64)
    if version == 1:  # BigDecimal.hashCode over the (at most two) 32-bit magnitude words
        high = (magnitude >> np.uint64(32)).astype(np.uint32)
        h = high * np.uint32(31) + (magnitude & np.uint64(MASK32)).astype(np.uint32)
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


_FIXED: dict[str, Callable[[pa.Array, HiveType, int], U32]] = {
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


def _text_column(column: pa.Array, t: HiveType, version: int) -> U32:
    binary = t.name == "binary"
    is_text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    is_bytes = pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)
    if not (is_bytes if binary else is_text or pa.types.is_string_view(column.type)):
        raise InvalidBucketError(f"Arrow {column.type} column does not fit Hive type {t.text}")
    if binary and version == 2:
        raise UnsupportedTypeError(BINARY_V2_UNSUPPORTED)
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    if t.name == "char":
        column = pc.utf8_rtrim(column, characters=" ")
    if t.length:
        too_long = pc.greater(pc.utf8_length(column), t.length)
        if pc.any(too_long).as_py():
            first = column.filter(too_long)[0].as_py()
            raise misfit_error(first, t, f"longer than {t.length} characters")
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
    k = k * np.uint32(MURMUR3_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    h = h ^ (k * np.uint32(MURMUR3_C2))
    return ((h << np.uint32(13)) | (h >> np.uint32(19))) * np.uint32(5) + np.uint32(MURMUR3_N)


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
    low = (u & np.uint64(MASK32)).astype(np.uint32).byteswap()
    return _fmix_vec(_mix_vec(low, _mix_vec(high, _seed(len(v)))), 8)


def _murmur_int16(v: npt.NDArray[np.int16]) -> U32:
    # Two tail bytes, sign-extended: k1 = (low << 8) ^ high.
    high = (v >> 8).astype(np.int32)
    low = (v & 0xFF).astype(np.uint8).view(np.int8).astype(np.int32)
    return _fmix_vec(_seed(len(v)) ^ _tail_mix(((low << 8) ^ high).view(np.uint32)), 2)


def _tail_mix(k1: U32) -> U32:
    k1 = k1 * np.uint32(MURMUR3_C1)
    k1 = (k1 << np.uint32(15)) | (k1 >> np.uint32(17))
    return k1 * np.uint32(MURMUR3_C2)


def _murmur_segments(data: npt.NDArray[np.uint8], lengths: npt.NDArray[np.int64]) -> U32:
    """Murmur3 of back-to-back byte strings (``data`` split by ``lengths``)."""
    words, s, n, order = _segments(data, lengths)
    blocks = n >> 2
    h = _seed(len(n))
    finished: dict[int, int] = {}
    for j, running in _running_rows(blocks):
        if running < _SCALAR_TAIL_ROWS:
            for r in range(running):
                finished[r] = murmur3_from(bytes(data[s[r] : s[r] + n[r]]), int(h[r]), j)
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
                finished[r] = java_bytes_hash(bytes(data[s[r] + 4 * j : s[r] + n[r]]), int(h[r]))
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
