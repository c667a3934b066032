"""The ORC file tail: read stripe facts from it and add footer user metadata to it.

pyarrow writes ORC fast but drops user metadata, and Hive needs three footer entries
(``hive.acid.key.index``, ``hive.acid.stats``, ``hive.acid.version``). The tail of an ORC file is
``[metadata][footer][postscript][1-byte postscript length]``; the footer is a protobuf message,
stored as a stream of compression chunks. Protobuf messages merge by concatenation, so adding
repeated ``metadata`` items (Footer field 5) is appending bytes: the existing compressed footer
chunks are kept as they are and one more chunk, stored "original" (uncompressed, 3-byte header
``(length << 1) | 1``), carries the new items. Only the postscript's footer length changes.

Field numbers are from ORC's ``orc_proto.proto``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from acid_platform.errors import CorruptAcidFileError

# PostScript fields
_PS_FOOTER_LENGTH = 1
_PS_COMPRESSION = 2
_PS_BLOCK_SIZE = 3
_PS_METADATA_LENGTH = 5
_PS_MAGIC = 8000
# Footer fields
_FOOTER_STRIPES = 3
_FOOTER_METADATA = 5
_FOOTER_NUMBER_OF_ROWS = 6
# StripeInformation fields
_STRIPE_OFFSET = 1
_STRIPE_INDEX_LENGTH = 2
_STRIPE_DATA_LENGTH = 3
_STRIPE_FOOTER_LENGTH = 4
_STRIPE_NUMBER_OF_ROWS = 5
# UserMetadataItem fields
_ITEM_NAME = 1
_ITEM_VALUE = 2

COMPRESSION_NAMES = {0: "NONE", 1: "ZLIB", 2: "SNAPPY", 3: "LZO", 4: "LZ4", 5: "ZSTD"}
MAX_POSTSCRIPT = 255


@dataclass(frozen=True)
class StripeInfo:
    """Where a stripe lies in the file and how many rows it holds."""

    offset: int
    length: int
    number_of_rows: int


@dataclass(frozen=True)
class OrcTail:
    """What the footer says, decoded from the tail bytes of an ORC file."""

    compression: str
    block_size: int
    stripes: tuple[StripeInfo, ...]
    number_of_rows: int
    user_metadata: dict[str, bytes]
    footer_length: int
    metadata_length: int
    postscript_length: int

    @property
    def tail_length(self) -> int:
        """Bytes from the start of the metadata section to the end of the file."""
        return self.metadata_length + self.footer_length + self.postscript_length + 1


def parse_tail(tail: bytes, source: str = "<orc>") -> OrcTail:
    """Decode the footer of an ORC file from its last bytes (at least the whole tail).

    Raises :class:`CorruptAcidFileError` naming ``source`` when the bytes are not an ORC tail.
    """
    try:
        return _parse_tail(tail)
    except CorruptAcidFileError:
        raise
    except Exception as exc:  # malformed varints, bad codecs, truncated buffers
        raise CorruptAcidFileError(f"{source}: not a readable ORC file tail ({exc})") from exc


def append_user_metadata(
    tail: bytes, items: Sequence[tuple[str, bytes]], source: str = "<orc>"
) -> bytes:
    """Return ``tail`` (the file from its metadata section on, or more) with ``items`` added to
    the footer's user metadata. Bytes before the footer are returned unchanged."""
    info = parse_tail(tail, source)
    ps_len = info.postscript_length
    ps_start = len(tail) - 1 - ps_len
    postscript = tail[ps_start : ps_start + ps_len]
    addition = b"".join(
        _field_bytes(
            _FOOTER_METADATA, _field_bytes(_ITEM_NAME, n.encode()) + _field_bytes(_ITEM_VALUE, v)
        )
        for n, v in items
    )
    if info.compression != "NONE":
        addition = b"".join(_original_chunks(addition, info.block_size))
    new_ps = _replace_varint_field(
        postscript, _PS_FOOTER_LENGTH, info.footer_length + len(addition)
    )
    if len(new_ps) > MAX_POSTSCRIPT:
        raise CorruptAcidFileError(f"{source}: ORC postscript would exceed 255 bytes")
    # the new chunk follows the old footer bytes directly: the footer stream just grows
    return tail[:ps_start] + addition + new_ps + bytes([len(new_ps)])


# --------------------------------------------------------------------------- decoding


def _parse_tail(tail: bytes) -> OrcTail:
    if len(tail) < 4:
        raise CorruptAcidFileError("file is too short to be ORC")
    ps_len = tail[-1]
    if ps_len == 0 or ps_len + 1 > len(tail):
        raise CorruptAcidFileError(f"bad postscript length {ps_len}")
    ps = _fields(tail[-1 - ps_len : -1])
    magic = ps.get(_PS_MAGIC, [b""])[0]
    if magic != b"ORC":
        raise CorruptAcidFileError("postscript magic is not 'ORC'")
    footer_len = int(ps[_PS_FOOTER_LENGTH][0])
    compression = COMPRESSION_NAMES.get(int(ps.get(_PS_COMPRESSION, [0])[0]), "UNKNOWN")
    block_size = int(ps.get(_PS_BLOCK_SIZE, [256 * 1024])[0])
    metadata_len = int(ps.get(_PS_METADATA_LENGTH, [0])[0])
    footer_end = len(tail) - 1 - ps_len
    footer_start = footer_end - footer_len
    if footer_start < 0:
        raise CorruptAcidFileError("footer extends before the start of the read tail")
    footer = _decompress(tail[footer_start:footer_end], compression, block_size)
    f = _fields(footer)
    stripes = []
    for raw in f.get(_FOOTER_STRIPES, []):
        s = _fields(raw)  # type: ignore[arg-type]
        length = sum(
            int(s.get(k, [0])[0])
            for k in (_STRIPE_INDEX_LENGTH, _STRIPE_DATA_LENGTH, _STRIPE_FOOTER_LENGTH)
        )
        stripes.append(
            StripeInfo(
                int(s.get(_STRIPE_OFFSET, [0])[0]),
                length,
                int(s.get(_STRIPE_NUMBER_OF_ROWS, [0])[0]),
            )
        )
    meta: dict[str, bytes] = {}
    for raw in f.get(_FOOTER_METADATA, []):
        item = _fields(raw)  # type: ignore[arg-type]
        name = bytes(item.get(_ITEM_NAME, [b""])[0]).decode()  # type: ignore[arg-type]
        meta[name] = bytes(item.get(_ITEM_VALUE, [b""])[0])  # type: ignore[arg-type]
    return OrcTail(
        compression=compression,
        block_size=block_size,
        stripes=tuple(stripes),
        number_of_rows=int(f.get(_FOOTER_NUMBER_OF_ROWS, [0])[0]),
        user_metadata=meta,
        footer_length=footer_len,
        metadata_length=metadata_len,
        postscript_length=ps_len,
    )


def _decompress(data: bytes, compression: str, block_size: int) -> bytes:
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
        size, _ = _varint(chunk, 0)  # raw snappy starts with the uncompressed length
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


def _fields(buf: bytes | memoryview) -> dict[int, list[int | bytes]]:
    """Decode one protobuf message into {field number: [values]} (varints and byte strings)."""
    out: dict[int, list[int | bytes]] = {}
    data = bytes(buf)
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
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


def _varint(data: bytes, pos: int) -> tuple[int, int]:
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


# --------------------------------------------------------------------------- encoding


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(field: int, payload: bytes) -> bytes:
    return _encode_varint(field << 3 | 2) + _encode_varint(len(payload)) + payload


def _original_chunks(data: bytes, block_size: int) -> Iterator[bytes]:
    for start in range(0, len(data), block_size):
        piece = data[start : start + block_size]
        header = (len(piece) << 1) | 1
        yield header.to_bytes(3, "little") + piece


def _replace_varint_field(message: bytes, field: int, value: int) -> bytes:
    """Re-encode ``message`` with varint ``field`` set to ``value``, other fields byte-identical."""
    out = bytearray()
    pos = 0
    while pos < len(message):
        start = pos
        key, pos = _varint(message, pos)
        f, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(message, pos)
        elif wire == 2:
            length, pos = _varint(message, pos)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise CorruptAcidFileError(f"unsupported protobuf wire type {wire}")
        if f == field and wire == 0:
            out += _encode_varint(key) + _encode_varint(value)
        else:
            out += message[start:pos]
    return bytes(out)
