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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acid_platform.errors import CorruptAcidFileError
from acid_platform.format.protobuf import (
    decode_message,
    decompress_stream,
    encode_varint,
    field_bytes,
    original_chunks,
    read_varint,
    zigzag_decode,
)

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
# Metadata (the section before the footer), StripeStatistics, ColumnStatistics fields
_METADATA_STRIPE_STATS = 1
_STRIPE_STATS_COLUMNS = 1
_STATS_NUMBER_OF_VALUES = 1
_STATS_INT = 2
_INT_MINIMUM, _INT_MAXIMUM = 1, 2
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
        field_bytes(
            _FOOTER_METADATA, field_bytes(_ITEM_NAME, n.encode()) + field_bytes(_ITEM_VALUE, v)
        )
        for n, v in items
    )
    if info.compression != "NONE":
        addition = b"".join(original_chunks(addition, info.block_size))
    new_ps = replace_varint_field(postscript, _PS_FOOTER_LENGTH, info.footer_length + len(addition))
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
    ps = decode_message(tail[-1 - ps_len : -1])
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
    footer = decompress_stream(tail[footer_start:footer_end], compression, block_size)
    f = decode_message(footer)
    stripes = []
    for raw in f.get(_FOOTER_STRIPES, []):
        s = decode_message(raw)  # type: ignore[arg-type]
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
        item = decode_message(raw)  # type: ignore[arg-type]
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


def read_stripe_int_bounds(
    orc: Any, file: Any, columns: Sequence[int]
) -> list[dict[int, tuple[int, int | None, int | None]]]:
    """:func:`stripe_int_bounds` of an open ``pyarrow.orc.ORCFile`` (``orc``) reading ``file``
    (seekable): its metadata section read from where the postscript puts it. Statistics are an
    optimisation: a section that does not decode gives ``[]``."""
    length = orc.stripe_statistics_length
    if not length:
        return []
    file.seek(orc.file_length - 1 - orc.file_postscript_length - orc.file_footer_length - length)
    codec = orc.compression
    try:
        return stripe_int_bounds(
            file.read(length),
            "NONE" if codec == "UNCOMPRESSED" else codec,
            orc.compression_size,
            columns,
        )
    except Exception:  # noqa: BLE001 - odd statistics give none, never a wrong answer
        return []


def stripe_int_bounds(
    metadata: bytes, compression: str, block_size: int, columns: Sequence[int]
) -> list[dict[int, tuple[int, int | None, int | None]]]:
    """Per stripe, ``{column id: (number of values, minimum, maximum)}`` of ``columns`` from the
    file's metadata section (``metadata``, as stored): minimum and maximum of an integer column,
    ``None`` for other columns or when the writer left them out. A column without statistics is
    left out of its stripe's dict; a file without stripe statistics gives ``[]``."""
    data = decompress_stream(metadata, compression, block_size)
    out: list[dict[int, tuple[int, int | None, int | None]]] = []
    for raw in decode_message(data).get(_METADATA_STRIPE_STATS, []):
        col_stats = decode_message(raw).get(_STRIPE_STATS_COLUMNS, [])  # type: ignore[arg-type]
        found: dict[int, tuple[int, int | None, int | None]] = {}
        for col in columns:
            if col >= len(col_stats):
                continue
            stats = decode_message(col_stats[col])  # type: ignore[arg-type]
            if _STATS_NUMBER_OF_VALUES not in stats:
                continue
            count = int(stats[_STATS_NUMBER_OF_VALUES][0])
            ints = stats.get(_STATS_INT)
            bound = decode_message(ints[0]) if ints else {}  # type: ignore[arg-type]
            lo, hi = bound.get(_INT_MINIMUM), bound.get(_INT_MAXIMUM)
            found[col] = (
                count,
                zigzag_decode(int(lo[0])) if lo else None,
                zigzag_decode(int(hi[0])) if hi else None,
            )
        out.append(found)
    return out


# --------------------------------------------------------------------------- encoding


def replace_varint_field(message: bytes, field: int, value: int) -> bytes:
    """Re-encode ``message`` with varint ``field`` set to ``value``, other fields byte-identical."""
    out = bytearray()
    pos = 0
    while pos < len(message):
        start = pos
        key, pos = read_varint(message, pos)
        f, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(message, pos)
        elif wire == 2:
            length, pos = read_varint(message, pos)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise CorruptAcidFileError(f"unsupported protobuf wire type {wire}")
        if f == field and wire == 0:
            out += encode_varint(key) + encode_varint(value)
        else:
            out += message[start:pos]
    return bytes(out)
