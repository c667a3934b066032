"""Text is UTF-8: the check every write makes before a STRING, VARCHAR or CHAR value is stored.

Arrow's ``string`` type promises UTF-8 without enforcing it: an array built from buffers, a
binary array viewed as text, or text an engine passed through unchecked (DuckDB returns the
bytes of an Arrow string as they came) may hold any bytes, and the ORC writer stores them as
they are — after which Hive, Trino and Python readers fail on the file, and compaction copies
the bytes on. :func:`check_utf8` refuses such a value before anything is written, with
:class:`~acid_platform.errors.InvalidUtf8Error` naming the table, the column (with the path
to a string inside a struct, array or map), the row and the bytes, escaped.

The check is Arrow's own full validation of the column (vectorised; about 10 ms per million
short strings); only when it fails is the first bad value looked for (bisection over slices,
then the nesting), so a valid write pays the validation alone. A NULL's bytes are not checked:
nothing of it is stored. Python values are checked where they become Arrow
(:func:`find_invalid_text_value`: a ``str`` holding lone surrogates, bytes decoded with
``surrogateescape``).

>>> import pyarrow as pa
>>> bad = pa.array([b"ok", b"caf\\xe9"]).view(pa.string())
>>> find_invalid_utf8(bad)
InvalidText(row=1, path='', value=b'caf\\xe9')
>>> find_invalid_utf8(pa.array([["café"], ["日本"]])) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from acid_platform.errors import InvalidUtf8Error

#: How many characters of a bad value an error shows (around its first bad byte).
EXCERPT_CHARS = 40

_BYTES_OF = {
    pa.string(): pa.binary(),
    pa.large_string(): pa.large_binary(),
    pa.string_view(): pa.binary_view(),
}
_TEXT_OF = {b: s for s, b in _BYTES_OF.items()}


@dataclass(frozen=True)
class InvalidText:
    """The first value that is not UTF-8: its ``row`` (0-based, in what was checked), the
    ``path`` below the column to it (``""`` for the value itself, ``.a`` in a struct, ``[2]`` in
    an array, ``[0].key`` in a map) and its bytes."""

    row: int
    path: str
    value: bytes


def carries_text(typ: pa.DataType) -> bool:
    """Whether values of ``typ`` hold strings: a string type, or a struct, list or map with a
    string inside."""
    if typ in _BYTES_OF:
        return True
    if pa.types.is_struct(typ):
        return any(carries_text(f.type) for f in typ)
    if pa.types.is_map(typ):
        return carries_text(typ.key_type) or carries_text(typ.item_type)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return carries_text(typ.value_type)
    return False


def as_text(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """``values`` with every binary value inside (top level, or in a struct, list or map) viewed
    as a string, bytes unchecked and uncopied: converting binary data to a text column, whose
    check (:func:`check_utf8`) then names a value that is not UTF-8."""
    typ = _text_type(values.type)
    if typ == values.type:
        return values
    return pa.chunked_array([c.view(typ) for c in values.chunks], type=typ)


def find_invalid_utf8(values: pa.Array | pa.ChunkedArray) -> InvalidText | None:
    """The first non-NULL string of ``values`` (strings inside structs, lists and maps included)
    that is not valid UTF-8, or ``None`` when every one is."""
    if not carries_text(values.type):
        return None
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    start = 0
    for chunk in chunks:
        if not _valid(chunk):
            found = _first_invalid(chunk)
            if found is not None:
                return InvalidText(start + found.row, found.path, found.value)
        start += len(chunk)
    return None


def check_utf8(
    values: pa.Array | pa.ChunkedArray,
    *,
    table: str,
    column: str,
    what: str = "",
    first_row: int = 0,
) -> None:
    """Raise :class:`~acid_platform.errors.InvalidUtf8Error` when a string of ``values`` (the
    column ``column`` of the rows written to ``table``) is not valid UTF-8. ``first_row`` is the
    position of ``values``' first row in the statement's input; ``what`` prefixes the column
    in the message (``"MERGE source "``)."""
    bad = find_invalid_utf8(values)
    if bad is not None:
        raise utf8_error(
            f"table {table}: {what}", column + bad.path, first_row + bad.row, bad.value, table
        )


def find_invalid_text_value(value: object) -> tuple[str, bytes] | None:
    """The path to and the bytes of the first ``str`` inside a Python value (a ``str``, or
    dicts, lists and tuples of them) that is not UTF-8 text: one holding lone surrogates, as
    bytes decoded with ``errors="surrogateescape"`` do. ``None`` when there is none.

    >>> find_invalid_text_value({"a": ["ok", b"caf\\xe9".decode(errors="surrogateescape")]})
    ('.a[1]', b'caf\\xe9')
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            try:
                return "", value.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError:
                return "", value.encode("utf-8", errors="surrogatepass")
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = find_invalid_text_value(item)
            if found is not None:
                return f".{key}{found[0]}", found[1]
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = find_invalid_text_value(item)
            if found is not None:
                return f"[{i}]{found[0]}", found[1]
    return None


def utf8_error(
    where: str, column: str, row: int, value: bytes, table: str = ""
) -> InvalidUtf8Error:
    """The error for ``value``, of ``column`` in row ``row``; ``where`` begins the message
    (``"table db.t: "``)."""
    shown = excerpt(value)
    return InvalidUtf8Error(
        f"{where}column {column!r}, row {row}: '{shown}' is not UTF-8; STRING, VARCHAR and CHAR "
        "values must be valid UTF-8 (decode bytes as UTF-8, or store them in a BINARY column)",
        table=table,
        column=column,
        row=row,
        excerpt=shown,
    )


def excerpt(value: bytes) -> str:
    """``value`` as text for a message: bytes that are not UTF-8 and control characters
    escaped (``\\xe9``, ``\\n``), cut to :data:`EXCERPT_CHARS` characters around the first bad
    byte (``…`` where cut).

    >>> excerpt(b"caf\\xe9 au lait")
    'caf\\\\xe9 au lait'
    >>> len(excerpt(b"a" * 100 + b"\\xff" + b"b" * 100)) <= EXCERPT_CHARS + 2
    True
    """
    try:
        value.decode("utf-8")
        at = 0
    except UnicodeDecodeError as exc:
        at = exc.start
    lo = max(0, at - EXCERPT_CHARS // 4)
    text = value[lo:].decode("utf-8", errors="backslashreplace").translate(_CONTROL)
    return ("…" if lo else "") + text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "")


_CONTROL = {i: f"\\x{i:02x}" for i in (*range(32), 127)} | {
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


# --------------------------------------------------------------------------- finding it


def _valid(arr: pa.Array) -> bool:
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _first_invalid(arr: pa.Array) -> InvalidText | None:
    typ = arr.type
    if typ in _BYTES_OF:
        return _first_invalid_string(arr)
    if pa.types.is_struct(typ):
        return _first_invalid_field(arr)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_map(typ):
        return _first_invalid_element(arr)
    return None


def _first_invalid_string(arr: pa.Array) -> InvalidText | None:
    if _valid(arr):
        return None
    lo, n = 0, len(arr)  # a bad value lies in arr[lo : lo + n]
    while n > 1:
        half = n // 2
        if _valid(arr.slice(lo, half)):
            lo, n = lo + half, n - half
        else:
            n = half
    value = arr.slice(lo, 1).view(_BYTES_OF[arr.type])[0].as_py()
    return InvalidText(lo, "", value)


def _first_invalid_field(arr: pa.StructArray) -> InvalidText | None:
    # flatten(): each field sliced as the struct is, a NULL struct's fields NULL
    best: InvalidText | None = None
    for field, child in zip(arr.type, arr.flatten(), strict=True):
        if not carries_text(field.type):
            continue
        found = _first_invalid(child)
        if found is not None and (best is None or found.row < best.row):
            best = InvalidText(found.row, f".{field.name}{found.path}", found.value)
    return best


def _first_invalid_element(
    arr: pa.ListArray | pa.LargeListArray | pa.MapArray,
) -> InvalidText | None:
    offsets = arr.offsets.to_numpy(zero_copy_only=False)
    start, end = int(offsets[0]), int(offsets[-1])
    parents = np.repeat(np.arange(len(arr)), np.diff(offsets))
    elements = arr.values.slice(start, end - start)
    if arr.null_count:  # a NULL list's elements (if any) are not stored
        stored = arr.is_valid().to_numpy(zero_copy_only=False)[parents]
        elements = elements.filter(pa.array(stored))
        parents = parents[stored]
    found = _first_invalid(elements)
    if found is None:
        return None
    row = int(parents[found.row])
    position = found.row - int(np.searchsorted(parents, row))
    return InvalidText(row, f"[{position}]{found.path}", found.value)


def _text_type(typ: pa.DataType) -> pa.DataType:
    if typ in _TEXT_OF:
        return _TEXT_OF[typ]
    if pa.types.is_struct(typ):
        return pa.struct([f.with_type(_text_type(f.type)) for f in typ])
    if pa.types.is_map(typ):
        item = typ.item_field.with_type(_text_type(typ.item_type))
        return pa.map_(_text_type(typ.key_type), item)
    if pa.types.is_list(typ):
        return pa.list_(typ.value_field.with_type(_text_type(typ.value_type)))
    if pa.types.is_large_list(typ):
        return pa.large_list(typ.value_field.with_type(_text_type(typ.value_type)))
    return typ
