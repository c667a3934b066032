"""Timestamps beyond Arrow's nanosecond range: Hive's whole ``0001-01-01`` to ``9999-12-31``.

A table's ``timestamp`` column is Arrow ``timestamp[ns]`` (64 bits: 1677-09-21 00:12:43.145 to
2262-04-11 23:47:16.854). Hive accepts 0001 to 9999, and ORC stores any of them (seconds and
nanoseconds apart). Outside the nanosecond range a value is carried as **Arrow
``timestamp[us]``** (it spans 290,000 years) — *wide* — at microsecond precision:

* **writing**: data whose timestamp column is ``timestamp[us]`` (or ``s``/``ms``) with a value
  outside the nanosecond range is kept that way (:func:`conform_wide`) and the file is encoded
  through pyorc (:mod:`.orc_timestamps`), which stores ORC Java's (seconds, nanos);
* **reading**: pyarrow's ORC reader refuses such a stripe (``ArrowInvalid: … out of range for
  nanosecond resolution``; it never wraps), and :func:`decode_stripe` decodes that stripe with
  pyorc instead: each timestamp column as ``timestamp[ns]`` when every value fits, else as
  ``timestamp[us]``;
* a **scan** decides its column types before reading, from the files' footer statistics
  (:func:`wide_columns`): a column whose minimum or maximum lies outside the nanosecond range is
  ``timestamp[us]`` in every batch of the scan.

A value is never cut silently: a nanosecond-precision value in a wide column (or a wide value in
a narrow one) raises :class:`TimestampRangeError` naming the column and the value
(:func:`cast_column`).

>>> widened(pa.struct([("a", pa.timestamp("ns"))]), pa.struct([("a", pa.timestamp("us"))]))
StructType(struct<a: timestamp[us]>)
>>> fits_ns(pa.array([-62135596800_000_000], pa.timestamp("us")))
False
"""

from __future__ import annotations

import io
import zoneinfo
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyorc
from pyorc.converters import ORCConverter

from acid_platform.errors import AcidFormatError, TimestampRangeError
from acid_platform.format.orc_tail import parse_tail
from acid_platform.format.protobuf import (
    Message,
    decode_message,
    decompress_stream,
    packed_varints,
    zigzag_decode,
)

NANOS = 1_000_000_000
_FACTOR = {"s": NANOS, "ms": 1_000_000, "us": 1_000, "ns": 1}
#: Hive's range, in microseconds since 1970: 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999.
HIVE_MIN_US = -62_135_596_800 * 1_000_000
HIVE_MAX_US = 253_402_300_800 * 1_000_000 - 1
#: Arrow's nanosecond range, in nanoseconds since 1970.
NS_MIN, NS_MAX = -(2**63), 2**63 - 1
#: The Arrow type a wide timestamp is carried in.
WIDE = pa.timestamp("us")
NARROW = pa.timestamp("ns")


def widened(target: pa.DataType, source: pa.DataType) -> pa.DataType:
    """``target`` with each ``timestamp[ns]`` that ``source`` holds as a coarser timestamp
    replaced by ``timestamp[us]`` (structs by field name, lists and maps by position)."""
    t = pa.types
    if t.is_timestamp(target) and target.unit == "ns":
        coarse = t.is_timestamp(source) and source.unit != "ns"
        return WIDE if coarse else target
    if t.is_struct(target) and t.is_struct(source):
        names = {source.field(i).name: source.field(i).type for i in range(source.num_fields)}
        return pa.struct(
            [f.with_type(widened(f.type, names[f.name])) if f.name in names else f for f in target]
        )
    if t.is_map(target) and t.is_map(source):
        return pa.map_(
            widened(target.key_type, source.key_type), widened(target.item_type, source.item_type)
        )
    if t.is_list(target) and (t.is_list(source) or t.is_large_list(source)):
        return pa.list_(target.value_field.with_type(widened(target.value_type, source.value_type)))
    return target


def widen_schema(schema: pa.Schema, columns: Iterable[str]) -> pa.Schema:
    """``schema`` with the top-level ``timestamp[ns]`` ``columns`` as ``timestamp[us]``."""
    wide = set(columns)
    return pa.schema(
        [f.with_type(WIDE) if f.name in wide and f.type == NARROW else f for f in schema],
        metadata=schema.metadata,
    )


def conform_wide(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """``table`` cast to ``schema`` (same names), except that a column given with coarser
    timestamps holding a value beyond the nanosecond range keeps them, as ``timestamp[us]``
    (:func:`widened`); every such value must lie in Hive's range (:func:`check_hive_range`)."""
    fields, columns = [], []
    for f, col in zip(schema, table.columns, strict=True):
        try:
            columns.append(col.cast(f.type))
            fields.append(f)
        except pa.ArrowInvalid:
            wide = f.with_type(widened(f.type, col.type))
            if wide.type == f.type:
                raise
            cast = col.cast(wide.type)
            for leaf, name in _timestamp_leaves(cast, f.name):
                check_hive_range(leaf, f"{where}: column {name}")
            columns.append(cast)
            fields.append(wide)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=schema.metadata))


def conform_all(tables: Sequence[pa.Table], schema: pa.Schema, where: str) -> pa.Table:
    """``tables`` conformed to ``schema`` (:func:`conform_wide` where they carry coarser
    timestamps) and joined: a column wide in one is wide in all, the others' values cast to it
    exactly (:func:`cast_column`)."""
    parts = [
        conform_wide(t, schema, where)
        if any(has_wide_type(f.type) for f in t.schema)
        else t.cast(schema)
        for t in tables
    ]
    fields = [
        next((p.schema.field(i) for p in parts if p.schema.field(i).type != f.type), f)
        for i, f in enumerate(schema)
    ]
    target = pa.schema(fields, metadata=schema.metadata)
    joined = [
        p
        if p.schema.equals(target)
        else pa.Table.from_arrays(
            [
                cast_column(c, f.type, f"{where}: column {f.name!r}") if c.type != f.type else c
                for c, f in zip(p.columns, target, strict=True)
            ],
            schema=target,
        )
        for p in parts
    ]
    return pa.concat_tables(joined)


def _timestamp_leaves(
    arr: pa.Array | pa.ChunkedArray, name: str
) -> Iterable[tuple[pa.Array | pa.ChunkedArray, str]]:
    t = pa.types
    typ = arr.type
    if t.is_timestamp(typ):
        yield arr, name
        return
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        if t.is_struct(typ):
            for i, child in enumerate(chunk.flatten()):
                yield from _timestamp_leaves(child, f"{name}.{typ.field(i).name}")
        elif t.is_map(typ):
            yield from _timestamp_leaves(chunk.keys, f"{name}.key")
            yield from _timestamp_leaves(chunk.items, f"{name}.value")
        elif t.is_list(typ) or t.is_large_list(typ):
            yield from _timestamp_leaves(chunk.flatten(), f"{name}.item")


def has_wide_type(typ: pa.DataType) -> bool:
    """Whether ``typ`` holds a timestamp coarser than nanoseconds (at any depth)."""
    t = pa.types
    if t.is_timestamp(typ):
        return typ.unit != "ns"
    if t.is_struct(typ):
        return any(has_wide_type(typ.field(i).type) for i in range(typ.num_fields))
    if t.is_map(typ):
        return has_wide_type(typ.key_type) or has_wide_type(typ.item_type)
    if t.is_list(typ) or t.is_large_list(typ):
        return has_wide_type(typ.value_type)
    return False


def fits_ns(arr: pa.Array | pa.ChunkedArray) -> bool:
    """Whether every value of a timestamp array fits Arrow's nanosecond range."""
    factor = _FACTOR[arr.type.unit]
    if factor == 1 or len(arr) == arr.null_count:
        return True
    lo, hi = NS_MIN // factor, NS_MAX // factor
    bounds = pc.min_max(arr.cast(pa.int64())).as_py()
    return bool(bounds["min"] >= lo and bounds["max"] <= hi)


def check_hive_range(arr: pa.Array | pa.ChunkedArray, where: str) -> None:
    """Raise :class:`TimestampRangeError` (naming ``where``) unless every value of a timestamp
    array lies in Hive's 0001-01-01 to 9999-12-31 23:59:59.999999999."""
    if len(arr) == arr.null_count or arr.type.unit == "ns":
        return  # the nanosecond range lies inside Hive's
    per_us = 1_000_000 // (NANOS // _FACTOR[arr.type.unit])
    bounds = pc.min_max(arr.cast(pa.int64())).as_py()
    lo, hi = bounds["min"] * per_us, bounds["max"] * per_us
    bad = lo if lo < HIVE_MIN_US else hi if hi > HIVE_MAX_US else None
    if bad is not None:
        raise TimestampRangeError(
            f"{where}: timestamp {_text(bad)} is outside Hive's range 0001-01-01 00:00:00 to "
            "9999-12-31 23:59:59.999999999"
        )


def cast_column(arr: pa.Array | pa.ChunkedArray, target: pa.DataType, where: str) -> Any:
    """``arr`` cast to ``target`` exactly, or :class:`TimestampRangeError` naming ``where`` and
    the first value that does not fit (a wide value into nanoseconds, nanoseconds into a wide
    column)."""
    try:
        return arr.cast(target, safe=True)
    except pa.ArrowInvalid as exc:
        if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
            raise TimestampRangeError(f"{where}: {_misfit(arr, target)}") from exc
        if "timestamp" in str(exc):  # nested: scans widen top-level columns only
            raise TimestampRangeError(
                f"{where}: a nested timestamp does not fit ({exc}); beyond 1677-09-21 .. "
                "2262-04-11 only top-level timestamp columns are read; see docs/values.md"
            ) from exc
        raise


def _misfit(arr: pa.Array | pa.ChunkedArray, target: pa.DataType) -> str:
    values = [v for v in arr.cast(pa.int64()).to_pylist() if v is not None]
    factor = _FACTOR[arr.type.unit]
    if target.unit == "ns":
        bad = next(v for v in values if not NS_MIN <= v * factor <= NS_MAX)
        return (
            f"timestamp {_text(bad * factor // 1000)} lies outside the nanosecond range "
            "(1677-09-21 to 2262-04-11), and this read carries the column as nanoseconds (the "
            "change feed and Spark's reader do not carry wider values); see docs/values.md"
        )
    step = _FACTOR[target.unit] // factor
    bad = next(v for v in values if v % step)
    return (
        f"timestamp {_text_ns(bad * factor)} has nanoseconds, and this read carries the column "
        "at microseconds (other values of it, or a constant it is compared with, lie outside the "
        "nanosecond range 1677-09-21 to 2262-04-11); see docs/values.md"
    )


def _text(us: int) -> str:
    """Microseconds since 1970 as ``YYYY-MM-DD hh:mm:ss[.ffffff]`` (any year).

    >>> _text(253402300800 * 10**6), _text(-500_000)
    ('10000-01-01 00:00:00', '1969-12-31 23:59:59.5')
    """
    text = str(np.datetime64(us, "us")).replace("T", " ")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _text_ns(ns: int) -> str:
    return str(pa.scalar(ns, NARROW))


# --------------------------------------------------------------------------- reading


def is_out_of_range(exc: BaseException) -> bool:
    """Whether ``exc`` is pyarrow's ORC reader refusing a timestamp outside its range."""
    return "out of range for nanosecond resolution" in str(exc)


class _SecondsNanos(ORCConverter):
    """pyorc's TIMESTAMP converter giving the exact ``(seconds, nanos)`` pair."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> tuple[int, int]:
        return seconds, nanoseconds

    @staticmethod
    def to_orc(obj: Any, timezone: Any) -> tuple[int, int]:  # pragma: no cover - read only
        raise NotImplementedError


def decode_stripe(
    source: Any, index: int, schema: pa.Schema, columns: Sequence[str] | None
) -> pa.RecordBatch:
    """Stripe ``index`` of the ORC file ``source`` (a seekable binary file) decoded by pyorc:
    ``schema`` is the file's (pyarrow's) schema; ``columns`` top-level or dotted (``row.a``)
    names, as pyarrow's ``read_stripe`` takes them. Timestamp columns come back as
    ``timestamp[ns]`` where every value fits, else ``timestamp[us]``
    (:class:`TimestampRangeError` for a value with nanoseconds there)."""
    source.seek(0)
    reader = pyorc.Reader(
        source,
        struct_repr=pyorc.StructRepr.TUPLE,
        converters={pyorc.TypeKind.TIMESTAMP: _SecondsNanos},
        timezone=zoneinfo.ZoneInfo("UTC"),
    )
    rows = list(reader.read_stripe(index))
    arrays = {f.name: _to_arrow([r[i] for r in rows], f.type, f.name) for i, f in enumerate(schema)}
    if columns is None:
        return pa.RecordBatch.from_arrays(list(arrays.values()), names=schema.names)
    wanted: dict[str, list[str] | None] = {}
    for c in columns:
        top, _, child = c.partition(".")
        if not child:
            wanted[top] = None
        elif wanted.get(top, []) is not None:
            wanted.setdefault(top, []).append(child)  # type: ignore[union-attr]
    names, out = [], []
    for f in schema:  # pyarrow keeps the file's column order
        if f.name not in wanted:
            continue
        arr = arrays[f.name]
        children = wanted[f.name]
        if children is not None:
            keep = [i for i in range(f.type.num_fields) if f.type.field(i).name in children]
            arr = pa.StructArray.from_arrays(
                [arr.field(i) for i in keep],
                fields=[arr.type.field(i) for i in keep],
                mask=arr.is_null() if arr.null_count else None,
            )
        names.append(f.name)
        out.append(arr)
    return pa.RecordBatch.from_arrays(out, names=names)


def _to_arrow(values: list[Any], typ: pa.DataType, where: str) -> pa.Array:
    t = pa.types
    if t.is_timestamp(typ):
        return _timestamps(values, where)
    if t.is_struct(typ):
        fields = [typ.field(i) for i in range(typ.num_fields)]
        children = [
            _to_arrow([None if v is None else v[i] for v in values], f.type, f"{where}.{f.name}")
            for i, f in enumerate(fields)
        ]
        if not fields:
            return pa.array([None if v is None else {} for v in values], typ)
        mask = pa.array([v is None for v in values]) if None in values else None
        fields = [f.with_type(c.type) for f, c in zip(fields, children, strict=True)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    if t.is_list(typ) or t.is_large_list(typ) or t.is_map(typ):
        offsets, flat, nulls = [0], [], []
        for v in values:
            items = [] if v is None else (list(v.items()) if isinstance(v, dict) else list(v))
            flat.extend(items)
            offsets.append(len(flat))
            nulls.append(v is None)
        mask = pa.array(nulls) if any(nulls) else None
        if t.is_map(typ):
            keys = _to_arrow([k for k, _ in flat], typ.key_type, f"{where}.key")
            items = _to_arrow([x for _, x in flat], typ.item_type, f"{where}.value")
            wide = pa.map_(keys.type, items.type)
            return pa.MapArray.from_arrays(
                pa.array(offsets, pa.int32()), keys, items, type=wide, mask=mask
            )
        inner = _to_arrow(flat, typ.value_type, f"{where}.item")
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), inner, mask=mask)
    return pa.array(values, typ)


def _timestamps(values: list[Any], where: str) -> pa.Array:
    """``(seconds, nanos)`` pairs as ``timestamp[ns]`` when all fit, else ``timestamp[us]``."""
    ns = [None if v is None else v[0] * NANOS + v[1] for v in values]
    if all(v is None or NS_MIN <= v <= NS_MAX for v in ns):
        return pa.array(ns, pa.int64()).cast(NARROW)
    fine = next((v for v in ns if v is not None and v % 1000), None)
    if fine is not None:
        raise TimestampRangeError(
            f"column {where}: timestamp {_fine_text(fine)} has nanoseconds, and other values of "
            "its stripe lie outside the nanosecond range (1677-09-21 to 2262-04-11), where only "
            "microseconds are kept; see docs/values.md"
        )
    return pa.array([None if v is None else v // 1000 for v in ns], pa.int64()).cast(WIDE)


def _fine_text(ns: int) -> str:
    return f"{_text(ns // 1000 * 1000 // 1000)}{ns % 1000:03d}ns"


def wide_columns(
    filesystem: pafs.FileSystem,
    files: Iterable[tuple[str, int | None]],
    schema: pa.Schema,
    *,
    acid: bool = True,
) -> frozenset[str]:
    """The top-level ``timestamp[ns]`` columns of ``schema`` (a table's row schema) whose
    minimum or maximum, in the footer statistics of any of ``files`` (path and logical length,
    ``None`` for the whole file), lies beyond the nanosecond range. ``acid``: the files are event
    files (columns inside ``row``). A file without timestamp bounds for the column (streaming
    files merged from chunks keep them per stripe only) is looked at stripe by stripe; one
    without any counts as in range (its wide values then raise :class:`TimestampRangeError`)."""
    names = [f.name for f in schema if f.type == NARROW]
    if not names:
        return frozenset()
    found: set[str] = set()
    for path, length in files:
        if len(found) == len(names):
            break
        try:
            found |= _wide_in_file(
                filesystem, path, length, [n for n in names if n not in found], acid
            )
        except (OSError, AcidFormatError, ValueError, IndexError, KeyError):
            continue  # unreadable files are reported by the read itself
    return frozenset(found)


def _wide_in_file(
    filesystem: pafs.FileSystem, path: str, length: int | None, names: list[str], acid: bool
) -> set[str]:
    with filesystem.open_input_file(path) as raw:
        size = raw.size() if length is None else length
        want = min(size, 64 * 1024)
        raw.seek(size - want)
        tail = raw.read(want)
        info = parse_tail(tail, path)
        if info.tail_length > len(tail):
            raw.seek(size - info.tail_length)
            tail = raw.read(info.tail_length)
    footer_end = len(tail) - 1 - info.postscript_length
    footer_start = footer_end - info.footer_length
    footer = decode_message(
        decompress_stream(tail[footer_start:footer_end], info.compression, info.block_size)
    )
    types = [decode_message(x) for x in footer.get(_FOOTER_TYPES, [])]  # type: ignore[arg-type]
    stats = footer.get(_FOOTER_STATISTICS, [])
    stripes: list[Message] | None = None
    out = set()
    for name in names:
        col = _column_id(types, name, acid)
        if col is None or col >= len(stats):
            continue
        bounds = _bounds(decode_message(stats[col]))  # type: ignore[arg-type]
        if bounds is None:  # per stripe, from the metadata section
            if stripes is None:
                meta = tail[footer_start - info.metadata_length : footer_start]
                section = decode_message(decompress_stream(meta, info.compression, info.block_size))
                stripes = [decode_message(x) for x in section.get(1, [])]  # type: ignore[arg-type]
            per_stripe = [
                _bounds(decode_message(s[1][col])) if col < len(s.get(1, [])) else None  # type: ignore[arg-type]
                for s in stripes
            ]
            if any(b is not None and not (_fits(b[0]) and _fits(b[1])) for b in per_stripe):
                out.add(name)
            continue
        if not (_fits(bounds[0]) and _fits(bounds[1])):
            out.add(name)
    return out


# Footer and ColumnStatistics fields (orc_proto.proto)
_FOOTER_TYPES, _FOOTER_STATISTICS = 4, 7
_TYPE_SUBTYPES, _TYPE_FIELD_NAMES = 2, 3
_TIMESTAMP_STATISTICS = 9
_MIN_LOCAL, _MAX_LOCAL, _MIN_UTC, _MAX_UTC = 1, 2, 3, 4


def _bounds(column_stats: Message) -> tuple[int, int] | None:
    """A column's timestamp minimum and maximum, in milliseconds since 1970 (UTC when the
    writer stored them, else the writer's local ones)."""
    raw = column_stats.get(_TIMESTAMP_STATISTICS)
    if not raw:
        return None
    ts = decode_message(raw[0])  # type: ignore[arg-type]
    for lo, hi in ((_MIN_UTC, _MAX_UTC), (_MIN_LOCAL, _MAX_LOCAL)):
        if lo in ts and hi in ts:
            return zigzag_decode(int(ts[lo][0])), zigzag_decode(int(ts[hi][0]))
    return None


def _fits(ms: int) -> bool:
    """Whether a statistics bound (milliseconds: the value lies within a millisecond of it,
    whichever way the writer rounded) may lie within the nanosecond range."""
    return (ms + 1) * 1_000_000 > NS_MIN and (ms - 1) * 1_000_000 <= NS_MAX


def _column_id(types: list[Message], name: str, acid: bool) -> int | None:
    """ORC column id of a top-level row column, from the footer's type tree (column id =
    index into ``types``)."""

    def child(type_id: int, field: str) -> int | None:
        t = types[type_id]
        names = [bytes(n).decode() for n in t.get(_TYPE_FIELD_NAMES, [])]  # type: ignore[arg-type]
        subtypes = _subtypes(t)
        return subtypes[names.index(field)] if field in names else None

    top = 0
    if acid:
        row = child(0, "row")
        if row is None:
            return None
        top = row
    return child(top, name)


def _subtypes(t: Message) -> list[int]:
    out: list[int] = []
    for v in t.get(_TYPE_SUBTYPES, []):
        out.extend(packed_varints(v) if isinstance(v, bytes) else [int(v)])
    return out


class Unclosable(io.RawIOBase):
    """Lend a file to pyorc without letting it close it."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._inner.seek(offset, whence))

    def tell(self) -> int:
        return int(self._inner.tell())

    def read(self, n: int = -1) -> bytes:
        return bytes(self._inner.read(n if n is not None and n >= 0 else -1))

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
