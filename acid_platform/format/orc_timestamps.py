"""Timestamps before 1970 with a fraction of a second, stored as ORC Java stores them.

ORC keeps a TIMESTAMP as two streams: DATA, the seconds relative to 2015-01-01 (signed), and
SECONDARY, the nanoseconds with their trailing zeros folded into three bits (unsigned). ORC Java
(Hive, Spark, Trino's own reader follows it) writes ``(S, n)`` for a value whose floor second is
``F`` and whose fraction is ``n`` nanoseconds, ``0 <= n < 10**9``::

    S = F + 1   if F < 0 and n > 999_999     (Java's ``millis / 1000`` rounds toward zero)
    S = F       otherwise

and its reader takes the second back (``millis < 0 && nanos > 999_999``). ORC C++ applies the same
rule (ORC-346/ORC-763), but pyarrow hands it a value split toward zero — the seconds rounded up
and a *negative* remainder — so the SECONDARY stream holds a negative number that ORC Java refuses
(``nanos > 999999999 or < 0``). No value given to pyarrow avoids it: a negative value always
splits into a negative remainder.

So a file whose timestamps include such a value is encoded by ORC C++ through pyorc instead,
whose converter hands the writer the floor second and the non-negative remainder
(:func:`encode_orc`); every other file keeps pyarrow's faster writer. Readers need nothing: ORC
C++ (pyarrow) decodes both encodings, so files written by earlier versions of this project still
read back exactly.

The same pyorc path takes a second case pyarrow's ORC writer gets wrong: a struct holding a
NULL inside another struct (every ``row`` column of an event file is inside the ``row``
struct). pyarrow writes the values after the first NULL as zeros and empty strings
(:func:`has_null_nested_struct`); ORC C++ through pyorc writes them exactly.

One window stays as Apache ORC has it (ORC-763): a value in the last second before 1970 with a
fraction of a millisecond or more (``-1 < t < 0`` s) is stored with seconds 0, which every
Apache reader decodes one second late. Hive and Spark write the same bytes for it.

>>> has_negative_fraction(pa.array([-1_500_000_000, 0], pa.timestamp("ns")))
True
>>> has_negative_fraction(pa.array([-2_000_000_000, 10], pa.timestamp("ns")))
False
"""

from __future__ import annotations

import io
import zoneinfo
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyorc
from pyorc.converters import ORCConverter

from acid_platform.format import types as t
from acid_platform.format.wide_timestamps import has_wide_type

NANOS_PER_SECOND = 1_000_000_000
#: The writer time zone pyarrow records in every stripe footer; kept the same here.
WRITER_TIME_ZONE = "GMT"
_UNIT_FACTOR = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": NANOS_PER_SECOND}
_PYORC_CODECS = {
    "uncompressed": pyorc.CompressionKind.NONE,
    "zlib": pyorc.CompressionKind.ZLIB,
    "snappy": pyorc.CompressionKind.SNAPPY,
    "zstd": pyorc.CompressionKind.ZSTD,
    "lz4": pyorc.CompressionKind.LZ4,
}


def java_timestamp_streams(value_ns: int) -> tuple[int, int]:
    """The (seconds since 1970, nanos) ORC Java stores for a timestamp given in nanoseconds
    since 1970 (DATA holds the seconds minus the 2015-01-01 epoch).

    >>> java_timestamp_streams(-1_500_000_000)   # 1969-12-31 23:59:58.5
    (-1, 500000000)
    >>> java_timestamp_streams(-1_999_999_500)   # a fraction under a millisecond
    (-2, 500)
    """
    floor_second, nanos = divmod(value_ns, NANOS_PER_SECOND)
    if floor_second < 0 and nanos > 999_999:
        return floor_second + 1, nanos
    return floor_second, nanos


def has_negative_fraction(data: pa.Array | pa.ChunkedArray | pa.Table | pa.RecordBatch) -> bool:
    """Whether any timestamp in ``data`` (at any depth) is before 1970 with a fraction of a
    second: the values pyarrow's ORC writer stores so that ORC Java cannot read them."""
    return _any_timestamp(data, lambda v, f: (v < 0) & (v % f != 0) if f > 1 else v < v)


def has_null_nested_struct(data: pa.Table | pa.RecordBatch) -> bool:
    """Whether a struct inside a struct (directly, or inside a list or map inside one) holds a
    NULL: pyarrow's ORC writer loses the values that follow it.

    >>> inner = pa.struct([("a", pa.int32())])
    >>> has_null_nested_struct(pa.table({"row": pa.array([{"s": None}], pa.struct([("s", inner)]))}))
    True
    >>> has_null_nested_struct(pa.table({"s": pa.array([None], inner)}))
    False
    """
    return any(_null_struct_below(c, inside_struct=False) for c in data.columns)


def _null_struct_below(data: pa.Array | pa.ChunkedArray, *, inside_struct: bool) -> bool:
    if isinstance(data, pa.ChunkedArray):
        return any(_null_struct_below(c, inside_struct=inside_struct) for c in data.chunks)
    typ = data.type
    if pa.types.is_struct(typ):
        if inside_struct and data.null_count:
            return True
        return any(
            _null_struct_below(data.field(i), inside_struct=True) for i in range(typ.num_fields)
        )
    if pa.types.is_map(typ):
        return _null_struct_below(data.keys, inside_struct=inside_struct) or _null_struct_below(
            data.items, inside_struct=inside_struct
        )
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _null_struct_below(data.flatten(), inside_struct=inside_struct)
    return False


def needs_pyorc(data: pa.Table | pa.RecordBatch) -> bool:
    """Whether ``data`` must be encoded through pyorc (:func:`encode_orc`): a timestamp before
    1970 with a fraction, a NULL struct inside a struct, or a timestamp column carried at
    microseconds because it holds values beyond the nanosecond range (:mod:`.wide_timestamps`)."""
    return (
        any(has_wide_type(f.type) for f in data.schema)
        or has_negative_fraction(data)
        or has_null_nested_struct(data)
    )


def _any_timestamp(
    data: pa.Array | pa.ChunkedArray | pa.Table | pa.RecordBatch,
    test: Callable[[np.ndarray, int], np.ndarray],
) -> bool:
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return any(_any_timestamp(c, test) for c in data.columns)
    if isinstance(data, pa.ChunkedArray):
        return any(_any_timestamp(c, test) for c in data.chunks)
    typ = data.type
    if pa.types.is_timestamp(typ):
        if len(data) == 0:
            return False
        values = data.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return bool(np.any(test(values, _UNIT_FACTOR[typ.unit])))
    if pa.types.is_struct(typ):
        return any(_any_timestamp(data.field(i), test) for i in range(typ.num_fields))
    if pa.types.is_map(typ):
        return _any_timestamp(data.keys, test) or _any_timestamp(data.items, test)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _any_timestamp(data.flatten(), test)
    return False


class _NanosConverter(ORCConverter):
    """pyorc's TIMESTAMP converter for values given as nanoseconds since 1970 (Python integers,
    any size: years 0001 to 9999 too): the floor second and the non-negative remainder, which
    ORC C++ then stores as ORC Java does."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> int:
        return seconds * NANOS_PER_SECOND + nanoseconds

    @staticmethod
    def to_orc(obj: int, timezone: Any) -> tuple[int, int]:
        return divmod(obj, NANOS_PER_SECOND)


class _Converters:
    timestamp: ClassVar[dict[Any, type[ORCConverter]]] = {pyorc.TypeKind.TIMESTAMP: _NanosConverter}


class PyorcEncoder:
    """An ORC file built in memory by ORC C++ through pyorc: timestamps stored as ORC Java
    stores them, NULL structs at any depth kept (``codec`` is pyarrow's codec name; the ORC
    types are ``schema``'s Hive type text)."""

    def __init__(self, schema: pa.Schema, codec: str, stripe_size: int) -> None:
        self._buffer = io.BytesIO()
        self._writer = pyorc.Writer(
            self._buffer,
            t.schema_to_hive(schema),
            compression=_PYORC_CODECS[codec],
            stripe_size=stripe_size,
            struct_repr=pyorc.StructRepr.TUPLE,
            converters=_Converters.timestamp,
            timezone=zoneinfo.ZoneInfo(WRITER_TIME_ZONE),
        )

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        for part in table.to_batches():
            self._writer.writerows(_rows(part))

    def finish(self) -> bytes:
        """The whole ORC file."""
        self._writer.close()
        return self._buffer.getvalue()


def encode_orc(
    batches: Iterable[pa.RecordBatch | pa.Table], schema: pa.Schema, codec: str, stripe_size: int
) -> bytes:
    """An ORC file in memory holding ``batches`` (``schema``), through :class:`PyorcEncoder`."""
    encoder = PyorcEncoder(schema, codec, stripe_size)
    for batch in batches:
        encoder.write(batch)
    return encoder.finish()


def encode_table(table: pa.Table, codec: str, stripe_size: int) -> bytes:
    """``table`` as an ORC file in memory: pyarrow's writer, or :func:`encode_orc` when
    :func:`needs_pyorc`."""
    if needs_pyorc(table):
        return encode_orc([table], table.schema, codec, stripe_size)
    sink = pa.BufferOutputStream()
    writer = po.ORCWriter(sink, compression=codec, stripe_size=stripe_size)
    writer.write(table)
    writer.close()
    return bytes(sink.getvalue().to_pybytes())


def _rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    columns = [
        _python_values(batch.column(i), batch.schema.field(i).type)
        for i in range(batch.num_columns)
    ]
    return list(zip(*columns, strict=True)) if columns else [()] * batch.num_rows


def _python_values(arr: pa.Array, typ: pa.DataType) -> list[Any]:
    """Values as pyorc takes them: structs as tuples, maps as dicts, timestamps as integer
    nanoseconds (whatever the Arrow unit)."""
    if pa.types.is_timestamp(typ):
        scale = NANOS_PER_SECOND // _UNIT_FACTOR[typ.unit]
        return [None if v is None else v * scale for v in arr.cast(pa.int64()).to_pylist()]
    valid = arr.is_valid().to_pylist()
    if pa.types.is_struct(typ):
        fields = [_python_values(arr.field(i), typ.field(i).type) for i in range(typ.num_fields)]
        packed = list(zip(*fields, strict=True)) if fields else [()] * len(arr)
        return [p if ok else None for p, ok in zip(packed, valid, strict=True)]
    if pa.types.is_map(typ):
        offsets = arr.offsets.to_pylist()
        keys = _python_values(arr.keys, typ.key_type)
        items = _python_values(arr.items, typ.item_type)
        return [
            dict(zip(keys[a:b], items[a:b], strict=True)) if ok else None
            for a, b, ok in zip(offsets[:-1], offsets[1:], valid, strict=True)
        ]
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        offsets = arr.offsets.to_pylist()
        values = _python_values(arr.values, typ.value_type)
        return [
            values[a:b] if ok else None
            for a, b, ok in zip(offsets[:-1], offsets[1:], valid, strict=True)
        ]
    return list(arr.to_pylist())
