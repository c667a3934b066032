"""Reading a landing file into a table's rows: Parquet, CSV (with a header line) and JSON
lines, chosen by the file's suffix or given; ``.gz``, ``.bz2``, ``.zst`` and ``.lz4`` text
files are decompressed on the fly.

Every file is read whole — its bytes once, hashed (SHA-256, recorded with its load), and only
if it is still the version listed — and fitted to the table before any of its rows is written: a file that does
not parse raises :class:`~acid_platform.errors.LandingFileError`, one whose columns or values
do not fit the table :class:`~acid_platform.errors.SchemaMismatchError` — both naming the file.
Columns match the table's by name (case-insensitive, as Hive); every table column must be in
the file, and no other. CSV values are parsed straight into the table's types (``'007'`` stays
text in a ``string`` column); JSON and Parquet values convert under the table layer's rules
(:func:`~acid_platform.table.schema.conform`).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from acid_platform.errors import LandingFileError, SchemaMismatchError
from acid_platform.streaming.landing.landing import LandingFile, stat_landing
from acid_platform.streaming.record_writers import csv_types

#: Suffixes of compressed text files (``pyarrow.fs`` decompresses them when opened).
COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")
#: What a landing file failing to parse raises inside pyarrow.
PARSE_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError)
#: The setting (``SET acid.ingest.max.record.bytes=…``) bounding a JSON-lines record's size, and
#: its default: a longer line is refused naming the file, the line and the setting.
MAX_RECORD_SETTING = "acid.ingest.max.record.bytes"
DEFAULT_MAX_RECORD_BYTES = 64 << 20
#: The characters of a line an error message shows at most (escaped).
EXCERPT_CHARS = 40


class FileFormat(enum.StrEnum):
    """Formats a landing file can have."""

    PARQUET = "parquet"
    CSV = "csv"
    JSON = "json"


_SUFFIXES = {
    ".parquet": FileFormat.PARQUET,
    ".pq": FileFormat.PARQUET,
    ".csv": FileFormat.CSV,
    ".jsonl": FileFormat.JSON,
    ".ndjson": FileFormat.JSON,
    ".json": FileFormat.JSON,
}


def format_of(name: str) -> FileFormat | None:
    """The format a file name says (``None`` when it says none).

    >>> format_of("2024-01-01.csv.gz"), format_of("a.parquet"), format_of("notes.txt")
    (<FileFormat.CSV: 'csv'>, <FileFormat.PARQUET: 'parquet'>, None)
    """
    lower = name.lower().partition("?")[0]
    for suffix in COMPRESSED:
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
            break
    for suffix, fmt in _SUFFIXES.items():
        if lower.endswith(suffix):
            return fmt
    return None


def resolve_format(file: LandingFile, fmt: FileFormat | str | None) -> FileFormat:
    """``fmt`` if given, else the one the file's name says (:class:`LandingFileError` when it
    says none)."""
    if fmt:
        try:
            return FileFormat(str(fmt).lower())
        except ValueError:
            known = ", ".join(f.value for f in FileFormat)
            raise LandingFileError(f"unknown landing file format {fmt!r}; use {known}") from None
    found = format_of(file.name)
    if found is None:
        raise LandingFileError(
            f"landing file {file.uri}: its name does not say its format (.parquet, .csv, "
            ".jsonl, optionally .gz); give the format"
        )
    return found


@dataclass(frozen=True)
class LandingRead:
    """A landing file read: its rows (its own column names) and the SHA-256 of its bytes."""

    rows: pa.Table
    sha256: str


def read_landing(
    file: LandingFile,
    schema: pa.Schema,
    fmt: FileFormat | str | None = None,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> LandingRead:
    """The rows of ``file``, CSV columns typed as ``schema`` (the table's) says, and the
    digest of the bytes they came from; :class:`LandingFileError` if it does not parse, or if
    it is not the file that was listed (another size or time, or for an identity naming its
    content another digest: it changed, and is loaded once it is stable)."""
    kind = resolve_format(file, fmt)
    raw = read_bytes(file)
    sha256 = hashlib.sha256(raw).hexdigest()
    if file.sha256 and sha256 != file.sha256:
        raise LandingFileError(f"landing file {file.uri} changed since it was listed (content)")
    try:
        if kind is FileFormat.PARQUET:
            return LandingRead(pq.read_table(pa.BufferReader(raw)), sha256)
        data = decompressed(file, raw)
        if kind is FileFormat.JSON:
            longest = check_json_lines(file, data, max_record_bytes)
            block = max(1 << 20, longest + 2)  # pyarrow needs a whole record in one block
            rows = pjson.read_json(
                pa.BufferReader(data), read_options=pjson.ReadOptions(block_size=block)
            )
            return LandingRead(rows, sha256)
        check_utf8_text(file, data)
        header = pcsv.open_csv(pa.BufferReader(data)).schema.names
        types = csv_types(header, schema)
        options = pcsv.ConvertOptions(column_types=types)
        return LandingRead(pcsv.read_csv(pa.BufferReader(data), convert_options=options), sha256)
    except PARSE_ERRORS as exc:
        raise LandingFileError(
            f"landing file {file.uri} does not parse as {kind.value}: {short(str(exc))}"
        ) from exc


def read_bytes(file: LandingFile) -> bytes:
    """The bytes of ``file`` as stored, read once; :class:`LandingFileError` unless the file
    is, before and after the read, the one listed (same size, times): a file still being
    written or rewritten is not read half-way."""
    loc = file.location()
    try:
        with loc.filesystem.open_input_stream(loc.path, compression=None) as stream:
            raw = stream.read()
        now = stat_landing(file.uri)
    except (OSError, LandingFileError) as exc:
        raise LandingFileError(
            f"landing file {file.uri} cannot be read: {short(str(exc))}"
        ) from exc
    if len(raw) != file.size or not file.same_version(now):
        raise LandingFileError(
            f"landing file {file.uri} changed since it was listed (size:times {file.stamp}, "
            f"now {now.stamp}, {len(raw)} bytes read); it is loaded once it stays unchanged"
        )
    return bytes(raw)


def decompressed(file: LandingFile, raw: bytes) -> bytes:
    """``raw`` decompressed if the file's name ends in a compression suffix."""
    name = file.name.lower()
    if not name.endswith(COMPRESSED):
        return raw
    codec = pa.Codec.detect(name).name
    with pa.CompressedInputStream(pa.BufferReader(raw), codec) as stream:
        return bytes(stream.read())


def check_utf8_text(file: LandingFile, data: bytes) -> None:
    """``data`` (a text file's) is UTF-8, else :class:`LandingFileError` naming the file, the
    line and the byte, with a short escaped excerpt of the line."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        line = data[start : end if end >= 0 else len(data)]
        number = data.count(b"\n", 0, exc.start) + 1
        raise LandingFileError(
            f"landing file {file.uri}, line {number}: not UTF-8 (byte {exc.start - start + 1} "
            f"of the line): {excerpt(line)}"
        ) from None


def check_json_lines(file: LandingFile, data: bytes, max_record_bytes: int) -> int:
    """Every non-blank line of ``data`` is one JSON object in UTF-8 of at most
    ``max_record_bytes``, else :class:`LandingFileError` naming the file and the line (with a
    short, escaped excerpt). Checked before pyarrow parses the bytes: it crashes the process on
    some input (a ``null`` line) and takes others for rows they do not describe. The longest
    line's length."""
    longest = 0
    for number, line in enumerate(data.splitlines(), start=1):
        text = line.strip()
        if not text:
            continue
        longest = max(longest, len(line))
        where = f"landing file {file.uri}, line {number}"
        if len(line) > max_record_bytes:
            raise LandingFileError(
                f"{where}: a record of {len(line)} bytes, over the largest allowed "
                f"({max_record_bytes}; SET {MAX_RECORD_SETTING}=<bytes> to raise it)"
            )
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LandingFileError(
                f"{where}: not UTF-8 (byte {exc.start + 1} of the line): {excerpt(text)}"
            ) from None
        if not text.startswith(b"{"):
            raise LandingFileError(f"{where}: not a JSON object: {excerpt(text)}")
    return longest


def excerpt(line: bytes) -> str:
    """The start of a line, escaped (non-printable and non-ASCII bytes as escapes)."""
    cut = line[:EXCERPT_CHARS]
    return repr(cut)[1:] + ("…" if len(line) > EXCERPT_CHARS else "")


def short(message: str, limit: int = 200) -> str:
    """A message as an error may quote it (it may quote a file's content): on one line, control
    and non-ASCII characters escaped, at most ``limit`` characters.

    >>> short("bad\\x1b[31m\\nrow") + "|" + short("y" * 300)[-3:]
    'bad\\\\x1b[31m\\\\nrow|yy…'
    """
    escaped = "".join(c if " " <= c <= "~" else repr(c)[1:-1] for c in message)
    return escaped if len(escaped) <= limit else escaped[:limit] + "…"


def check_columns(file: LandingFile, table: str, data: pa.Table, schema: pa.Schema) -> None:
    """Every column of ``schema`` in ``data`` and no other (names case-insensitive), else
    :class:`SchemaMismatchError` naming the file."""
    have = [n.lower() for n in data.column_names]
    missing = [n for n in schema.names if n not in have]
    extra = [n for n, low in zip(data.column_names, have, strict=True) if low not in schema.names]
    if missing or extra:
        parts = ([f"lacks column(s) {missing}"] if missing else []) + (
            [f"has column(s) {extra} the table does not"] if extra else []
        )
        raise SchemaMismatchError(
            f"landing file {file.uri} does not fit table {table}: it {' and '.join(parts)} "
            f"(the table's columns are {schema.names}); nothing of it was written"
        )


__all__ = [
    "COMPRESSED",
    "DEFAULT_MAX_RECORD_BYTES",
    "MAX_RECORD_SETTING",
    "FileFormat",
    "LandingRead",
    "check_columns",
    "check_json_lines",
    "check_utf8_text",
    "excerpt",
    "short",
    "format_of",
    "decompressed",
    "read_bytes",
    "read_landing",
    "resolve_format",
]
