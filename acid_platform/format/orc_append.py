"""An ORC file that grows by committed chunks, readable as a whole ORC file at each commit.

Hive's streaming writer keeps one ORC file open for a whole transaction batch and, at each
commit, calls ORC Java's ``writeIntermediateFooter()``: the stripes written so far are followed by
a complete tail (metadata, footer, postscript) that describes all of them, and the file cut at
that point is a valid ORC file. The next stripes are written after that tail, and the next
intermediate tail describes every stripe again. Readers find the cut in the ``_flush_length``
side file.

pyarrow (ORC C++) cannot append to a closed file nor write an intermediate footer. This module
gets the same bytes another way: each chunk of rows is encoded by pyarrow as a standalone ORC
file in memory (:func:`encode_chunk`); its stripes, which hold only stripe-relative offsets, are
copied to the end of the growing file (:meth:`AppendableOrcFile.append`), and
:meth:`AppendableOrcFile.commit` writes a tail built here (:class:`OrcTailBuilder`): the
committed stripes with their file offsets, each stripe's statistics copied from its chunk, the
file statistics merged (:mod:`.orc_stats`), the chunk's types, writer and postscript fields, and
the caller's user metadata. A tail lists only committed stripes: chunks appended and then given
up (an aborted transaction's rows) stay in the file as bytes no footer points at.

Field numbers are from ORC's ``orc_proto.proto``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import CorruptAcidFileError
from acid_platform.format.fs import create_new
from acid_platform.format.orc_footer import PROLEPTIC_GREGORIAN, set_type
from acid_platform.format.orc_stats import merge_all
from acid_platform.format.orc_timestamps import encode_table
from acid_platform.format.protobuf import (
    compress_stream,
    decode_message,
    decompress_stream,
    field_bytes,
    field_varint,
)

ORC_MAGIC = b"ORC"
_COMPRESSION_CODES = {"NONE": 0, "ZLIB": 1, "SNAPPY": 2, "LZO": 3, "LZ4": 4, "ZSTD": 5}
_COMPRESSION_NAMES = {v: k for k, v in _COMPRESSION_CODES.items()}


@dataclass(frozen=True)
class StripeEntry:
    """One stripe: where it starts and how its three sections and rows measure."""

    offset: int
    index_length: int
    data_length: int
    footer_length: int
    rows: int

    @property
    def length(self) -> int:
        return self.index_length + self.data_length + self.footer_length

    def encode(self) -> bytes:
        """The ``StripeInformation`` message."""
        return (
            field_varint(1, self.offset)
            + field_varint(2, self.index_length)
            + field_varint(3, self.data_length)
            + field_varint(4, self.footer_length)
            + field_varint(5, self.rows)
        )


@dataclass(frozen=True)
class OrcChunk:
    """A standalone ORC file taken apart for splicing: its stripe bytes and what its tail says.

    ``stripes`` offsets are relative to ``body`` (the bytes from the first stripe to the end of
    the last)."""

    body: bytes
    stripes: tuple[StripeEntry, ...]
    stripe_statistics: tuple[bytes, ...]
    file_statistics: tuple[bytes, ...]
    types: tuple[bytes, ...]
    row_index_stride: int | None
    writer: int | None
    software_version: bytes | None
    compression: str
    block_size: int
    version: bytes
    writer_version: int | None

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.stripes)


def encode_chunk(table: pa.Table, compression: str, stripe_size: int) -> OrcChunk:
    """``table`` encoded as an ORC file in memory, taken apart (``compression`` is pyarrow's
    codec name; timestamps as ORC Java stores them, :mod:`.orc_timestamps`)."""
    return parse_chunk(encode_table(table, compression, stripe_size))


def with_types(chunk: OrcChunk, types: Mapping[int, tuple[int, int]]) -> OrcChunk:
    """``chunk`` whose footer types ``types`` (column id -> (ORC kind, maximum length)) are
    set: the ``char``/``varchar`` columns pyarrow writes as ``string``
    (:func:`~.orc_footer.char_columns`)."""
    if not types:
        return chunk
    new = [set_type(ty, *types[i]) if i in types else ty for i, ty in enumerate(chunk.types)]
    return replace(chunk, types=tuple(new))


def parse_chunk(data: bytes, source: str = "<orc chunk>") -> OrcChunk:
    """Take a whole ORC file (``data``) apart; :class:`CorruptAcidFileError` if it is not one."""
    try:
        return _parse_chunk(data)
    except CorruptAcidFileError:
        raise
    except Exception as exc:  # malformed varints, truncated sections
        raise CorruptAcidFileError(f"{source}: not a readable ORC file ({exc})") from exc


class OrcTailBuilder:
    """The tail (metadata, footer, postscript) of a file made of committed chunks."""

    def __init__(self, template: OrcChunk) -> None:
        self._template = template
        self.stripes: list[StripeEntry] = []
        # the footer's stripe entries and the metadata's stripe statistics, kept encoded and
        # appended to as chunks come: a commit's tail costs O(its chunks) to encode, not O(file)
        self._stripe_fields = bytearray()
        self._stripe_statistics_fields = bytearray()
        self._statistics: list[bytes] = list(template.file_statistics)
        self.rows = 0

    def add(self, chunk: OrcChunk, offset: int) -> list[StripeEntry]:
        """Count ``chunk``, whose body starts at file offset ``offset``; returns its stripes as
        placed in the file."""
        if chunk.types != self._template.types:
            raise CorruptAcidFileError("an appended ORC chunk has another schema than the file")
        placed = [
            StripeEntry(offset + s.offset, s.index_length, s.data_length, s.footer_length, s.rows)
            for s in chunk.stripes
        ]
        self.stripes += placed
        for s in placed:
            self._stripe_fields += field_bytes(3, s.encode())
        for stats in chunk.stripe_statistics:
            self._stripe_statistics_fields += field_bytes(1, stats)
        self._statistics = (
            list(chunk.file_statistics)
            if self.rows == 0
            else merge_all([self._statistics, chunk.file_statistics])
        )
        self.rows += chunk.rows
        return placed

    def tail(self, body_length: int, user_metadata: Sequence[tuple[str, bytes]]) -> bytes:
        """The tail to write at ``body_length`` (the file's length before it)."""
        t = self._template
        metadata = bytes(self._stripe_statistics_fields)
        footer = field_varint(1, len(ORC_MAGIC)) + field_varint(2, body_length)
        footer += self._stripe_fields
        footer += b"".join(field_bytes(4, ty) for ty in t.types)
        footer += b"".join(
            field_bytes(5, field_bytes(1, name.encode()) + field_bytes(2, value))
            for name, value in user_metadata
        )
        footer += field_varint(6, self.rows)
        footer += b"".join(field_bytes(7, s) for s in self._statistics)
        if t.row_index_stride is not None:
            footer += field_varint(8, t.row_index_stride)
        if t.writer is not None:
            footer += field_varint(9, t.writer)
        if t.software_version is not None:
            footer += field_bytes(12, t.software_version)
        footer += field_varint(11, PROLEPTIC_GREGORIAN)  # as the event writer's footers say
        meta_stream = compress_stream(metadata, t.compression, t.block_size)
        footer_stream = compress_stream(footer, t.compression, t.block_size)
        ps = (
            field_varint(1, len(footer_stream))
            + field_varint(2, _COMPRESSION_CODES[t.compression])
            + field_varint(3, t.block_size)
            + field_bytes(4, t.version)
            + field_varint(5, len(meta_stream))
        )
        if t.writer_version is not None:
            ps += field_varint(6, t.writer_version)
        ps += field_bytes(8000, ORC_MAGIC)
        return meta_stream + footer_stream + ps + bytes([len(ps)])


@dataclass
class AppendedChunk:
    """A chunk whose stripes are in the file but in no tail yet."""

    chunk: OrcChunk
    offset: int


@dataclass
class AppendableOrcFile:
    """One ORC file written chunk by chunk; :meth:`commit` makes it whole (see module docs).

    The file starts with the ORC magic; until the first commit no prefix of it is an ORC file
    (an empty one counts as empty: ORC readers treat a file of at most 3 bytes as empty)."""

    filesystem: pafs.FileSystem
    path: str
    template: OrcChunk
    _builder: OrcTailBuilder = field(init=False)
    _stream: pa.NativeFile = field(init=False)
    _position: int = field(init=False, default=0)
    #: The file length at the last commit (0 before any).
    committed_length: int = field(init=False, default=0)
    _last_tail: bytes | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._builder = OrcTailBuilder(self.template)
        self._stream = create_new(self.filesystem, self.path)
        self._write(ORC_MAGIC)

    @property
    def stripes(self) -> list[StripeEntry]:
        """The committed stripes, in file order."""
        return self._builder.stripes

    @property
    def rows(self) -> int:
        """The committed rows."""
        return self._builder.rows

    def append(self, chunk: OrcChunk) -> AppendedChunk:
        """Write ``chunk``'s stripes at the end of the file (in no tail until committed)."""
        appended = AppendedChunk(chunk, self._position)
        self._write(chunk.body)
        return appended

    def commit(
        self, chunks: Sequence[AppendedChunk], user_metadata: Sequence[tuple[str, bytes]]
    ) -> int:
        """Add ``chunks`` to the committed stripes and write a tail describing all of them;
        returns the file's length, at which it is a complete ORC file."""
        for appended in chunks:
            self._builder.add(appended.chunk, appended.offset)
        self._last_tail = self._builder.tail(self._position, user_metadata)
        self._write(self._last_tail)
        self.committed_length = self._position
        return self.committed_length

    def close(self, user_metadata: Sequence[tuple[str, bytes]]) -> int:
        """Make the whole file (not only a prefix) a valid ORC file of the committed stripes,
        and close it; returns its length. Bytes after the last tail (stripes never committed)
        get the tail repeated after them; a file never committed gets an empty tail."""
        if self._stream.closed:
            return self._position
        if self._position != self.committed_length or self._last_tail is None:
            self._write(self._builder.tail(self._position, user_metadata))
        self._stream.close()
        return self._position

    def discard(self) -> None:
        """Close without writing anything more (the file stays as it is)."""
        if not self._stream.closed:
            self._stream.close()

    def _write(self, data: bytes) -> None:
        self._stream.write(data)
        self._position += len(data)


# --------------------------------------------------------------------------- parsing


def _parse_chunk(data: bytes) -> OrcChunk:
    if len(data) < 4 or data[:3] != ORC_MAGIC:
        raise CorruptAcidFileError("no ORC magic at the start")
    ps_len = data[-1]
    ps = decode_message(data[-1 - ps_len : -1])
    if ps.get(8000, [b""])[0] != ORC_MAGIC:
        raise CorruptAcidFileError("postscript magic is not 'ORC'")
    compression = _COMPRESSION_NAMES.get(_int(ps, 2), "UNKNOWN")
    block_size = _int(ps, 3, 256 * 1024)
    footer_end = len(data) - 1 - ps_len
    footer_start = footer_end - _int(ps, 1)
    meta_start = footer_start - _int(ps, 5)
    footer = decode_message(
        decompress_stream(data[footer_start:footer_end], compression, block_size)
    )
    meta = decode_message(decompress_stream(data[meta_start:footer_start], compression, block_size))
    stripes = [decode_message(raw) for raw in footer.get(3, [])]  # type: ignore[arg-type]
    first = _int(stripes[0], 1) if stripes else len(ORC_MAGIC)
    end = max((_int(s, 1) + sum(_int(s, k) for k in (2, 3, 4)) for s in stripes), default=first)
    return OrcChunk(
        body=data[first:end],
        stripes=tuple(
            StripeEntry(_int(s, 1) - first, _int(s, 2), _int(s, 3), _int(s, 4), _int(s, 5))
            for s in stripes
        ),
        stripe_statistics=tuple(bytes(x) for x in meta.get(1, [])),  # type: ignore[arg-type]
        file_statistics=tuple(bytes(x) for x in footer.get(7, [])),  # type: ignore[arg-type]
        types=tuple(bytes(x) for x in footer.get(4, [])),  # type: ignore[arg-type]
        row_index_stride=_optional(footer, 8),
        writer=_optional(footer, 9),
        software_version=bytes(footer[12][0]) if 12 in footer else None,  # type: ignore[arg-type]
        compression=compression,
        block_size=block_size,
        version=bytes(ps[4][0]) if 4 in ps and isinstance(ps[4][0], bytes) else b"\x00\x0c",
        writer_version=_optional(ps, 6),
    )


def _int(message: dict[int, list[int | bytes]], key: int, default: int = 0) -> int:
    return int(message.get(key, [default])[0])  # type: ignore[arg-type]


def _optional(message: dict[int, list[int | bytes]], key: int) -> int | None:
    return int(message[key][0]) if key in message else None  # type: ignore[arg-type]
