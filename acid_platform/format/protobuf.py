"""The little of protobuf and ORC's compression streams the ORC tail needs, by hand.

ORC's footer, metadata and postscript are protobuf messages (``orc_proto.proto``); the footer and
metadata are stored as a *compression stream*: chunks with a 3-byte little-endian header
``(length << 1) | original`` (none at all for ``NONE``). Decoding turns a message into
``{field number: [values]}``; encoding writes fields one by one (protobuf messages merge by
concatenation, which is what makes appending to them cheap).

>>> msg = field_varint(1, 150) + field_bytes(2, b"hi")
>>> decode_message(msg)
{1: [150], 2: [b'hi']}
>>> zigzag_decode(zigzag_encode(-3))
-3
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import pyarrow as pa

from acid_platform.errors import CorruptAcidFileError

#: Decoded message: field number -> values in order (ints for varint / fixed fields, bytes for
#: length-delimited ones).
Message = dict[int, list[int | bytes]]


def decode_message(buf: bytes | memoryview) -> Message:
    """Decode one protobuf message into {field number: [values]}."""
    out: Message = {}
    data = bytes(buf)
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 2:
            length, pos = read_varint(data, pos)
            value = data[pos : pos + length]
            if len(value) != length:
                raise CorruptAcidFileError("truncated protobuf field")
            pos += length
        elif wire == 1:
            value = int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            value = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise CorruptAcidFileError(f"unsupported protobuf wire type {wire}")
        out.setdefault(field, []).append(value)
    return out


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise CorruptAcidFileError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def encode_varint(value: int) -> bytes:
    """``value`` (>= 0; negative int64 as two's complement) as a varint."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(field: int, payload: bytes) -> bytes:
    """A length-delimited field (bytes, string, embedded message, packed list)."""
    return encode_varint(field << 3 | 2) + encode_varint(len(payload)) + payload


def field_varint(field: int, value: int) -> bytes:
    """A varint field (uint, int, bool, enum)."""
    return encode_varint(field << 3) + encode_varint(value)


def field_sint(field: int, value: int) -> bytes:
    """A ``sint32`` / ``sint64`` field (zigzag)."""
    return field_varint(field, zigzag_encode(value))


def field_double(field: int, value: float) -> bytes:
    """A ``double`` field (fixed64)."""
    return encode_varint(field << 3 | 1) + struct.pack("<d", value)


def zigzag_encode(value: int) -> int:
    """Protobuf's zigzag encoding of a signed 64-bit value."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def as_double(raw: int) -> float:
    """A decoded fixed64 field read as a ``double``."""
    return float(struct.unpack("<d", raw.to_bytes(8, "little"))[0])


def packed_varints(raw: bytes) -> list[int]:
    """The values of a packed repeated varint field."""
    out = []
    pos = 0
    while pos < len(raw):
        value, pos = read_varint(raw, pos)
        out.append(value)
    return out


# --------------------------------------------------------------------------- compression streams


def decompress_stream(data: bytes, compression: str, block_size: int) -> bytes:
    """The bytes of an ORC compression stream (``compression`` is the postscript's codec name)."""
    if compression == "NONE":
        return data
    out = []
    pos = 0
    while pos < len(data):
        if pos + 3 > len(data):
            raise CorruptAcidFileError("truncated compression chunk header")
        header = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16)
        pos += 3
        length, original = header >> 1, header & 1
        chunk = data[pos : pos + length]
        if len(chunk) != length:
            raise CorruptAcidFileError("truncated compression chunk")
        pos += length
        out.append(chunk if original else _decompress_chunk(chunk, compression, block_size))
    return b"".join(out)


def compress_stream(data: bytes, compression: str, block_size: int) -> bytes:
    """``data`` as an ORC compression stream: chunks of at most ``block_size`` bytes, each
    compressed with the codec, or stored original when that is not smaller (ORC's rule)."""
    if compression == "NONE":
        return data
    out = []
    for start in range(0, len(data), block_size):
        piece = data[start : start + block_size]
        packed = _compress_chunk(piece, compression)
        if packed is not None and len(packed) < len(piece):
            out.append((len(packed) << 1).to_bytes(3, "little") + packed)
        else:
            out.append(((len(piece) << 1) | 1).to_bytes(3, "little") + piece)
    return b"".join(out)


def original_chunks(data: bytes, block_size: int) -> Iterator[bytes]:
    """``data`` as uncompressed ("original") chunks of a compression stream."""
    for start in range(0, len(data), block_size):
        piece = data[start : start + block_size]
        header = (len(piece) << 1) | 1
        yield header.to_bytes(3, "little") + piece


def _compress_chunk(piece: bytes, compression: str) -> bytes | None:
    if compression == "ZLIB":
        packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        return packer.compress(piece) + packer.flush()
    codec = {"SNAPPY": "snappy", "LZ4": "lz4_raw", "ZSTD": "zstd"}.get(compression)
    if codec is None:
        return None  # e.g. LZO: stored original, which every reader accepts
    return bytes(pa.Codec(codec).compress(piece, asbytes=True))


def _decompress_chunk(chunk: bytes, compression: str, block_size: int) -> bytes:
    if compression == "ZLIB":
        return zlib.decompress(chunk, -15)
    if compression == "ZSTD":
        return bytes(
            pa.Codec("zstd").decompress(
                chunk, decompressed_size=_zstd_frame_size(chunk, block_size)
            )
        )
    if compression == "SNAPPY":
        size, _ = read_varint(chunk, 0)  # raw snappy starts with the uncompressed length
        return bytes(pa.Codec("snappy").decompress(chunk, decompressed_size=size))
    if compression == "LZ4":
        return _lz4_block_decompress(chunk)
    raise CorruptAcidFileError(f"unsupported ORC compression {compression}")


def _zstd_frame_size(chunk: bytes, default: int) -> int:
    """The frame content size from a zstd frame header, or ``default`` when it is absent."""
    if len(chunk) < 6 or chunk[:4] != b"\x28\xb5\x2f\xfd":
        return default
    fhd = chunk[4]
    fcs_flag, single, did_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[did_flag]
    size_bytes = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size_bytes == 0:
        return default
    value = int.from_bytes(chunk[pos : pos + size_bytes], "little")
    return value + 256 if size_bytes == 2 else value


def _lz4_block_decompress(src: bytes) -> bytes:
    """Decode one raw LZ4 block (footers are small; this keeps us free of a size guess)."""
    out = bytearray()
    i = 0
    n = len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        out += src[i : i + lit]
        i += lit
        if i >= n:
            break
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        mlen = token & 15
        if mlen == 15:
            while True:
                b = src[i]
                i += 1
                mlen += b
                if b != 255:
                    break
        mlen += 4
        start = len(out) - offset
        for k in range(mlen):
            out.append(out[start + k])
    return bytes(out)
