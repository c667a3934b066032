"""The one writer of ACID event files (``bucket_N`` in a base, delta or delete delta).

Everything that writes table data goes through :class:`EventWriter`: DML, streaming, compaction.
Rows are written by pyarrow's ORC writer (fast, columnar); Hive's footer metadata
(``hive.acid.key.index``, ``hive.acid.stats``, ``hive.acid.version``) is added by rewriting only the
file tail as it leaves the writer (:mod:`.orc_tail`). Memory is one stripe plus the key of every
``batch_size``-th row; the file is written once, straight to its final path (no rename).

>>> import pyarrow as pa, tempfile
>>> rows = pa.table({"id": pa.array([1, 2], pa.int32())})
>>> d = tempfile.mkdtemp()
>>> with EventWriter(f"{d}/bucket_00000", rows.schema) as w:
...     w.write(insert_events(rows, write_id=1, bucket_property=536870912))
>>> w.result.key_index
'1,536870912,1;'
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.orc as po

from acid_platform.errors import AcidFormatError, AcidSchemaError, FileConflictError
from acid_platform.format import types as t
from acid_platform.format.fs import create_new, join, make_dirs, resolve
from acid_platform.format.names import ORC_ACID_VERSION_FILE
from acid_platform.format.orc_footer import char_columns, finish_footer
from acid_platform.format.orc_tail import parse_tail
from acid_platform.format.orc_timestamps import PyorcEncoder, needs_pyorc
from acid_platform.format.wide_timestamps import conform_wide, has_wide_type

KEY_INDEX_KEY = "hive.acid.key.index"
ACID_STATS_KEY = "hive.acid.stats"
ACID_VERSION_KEY = "hive.acid.version"
ACID_VERSION = "2"

#: Hive's ``orc.compress`` values and pyarrow's names for them.
COMPRESSION = {
    "NONE": "uncompressed",
    "ZLIB": "zlib",
    "SNAPPY": "snappy",
    "ZSTD": "zstd",
    "LZ4": "lz4",
}
#: The table property naming a table's codec (one of :data:`COMPRESSION`).
ORC_COMPRESS_PROPERTY = "orc.compress"
#: Hive's default for ``orc.compress`` (the only place it is spelled).
DEFAULT_COMPRESSION = "ZLIB"
DEFAULT_STRIPE_SIZE = 64 * 1024 * 1024  # Hive's orc.stripe.size default
DEFAULT_BATCH_SIZE = 1024


def compression_of(properties: Mapping[str, str]) -> str:
    """A table's codec: its ``orc.compress`` property, upper-cased, or Hive's default ZLIB.

    >>> compression_of({}), compression_of({"orc.compress": "snappy"})
    ('ZLIB', 'SNAPPY')
    """
    return properties.get(ORC_COMPRESS_PROPERTY, DEFAULT_COMPRESSION).upper()


def pyarrow_codec(path: str, compression: str) -> str:
    """pyarrow's name for the ``orc.compress`` codec ``compression`` (any case), or
    :class:`AcidFormatError` naming ``path``."""
    codec = compression.upper()
    if codec not in COMPRESSION:
        raise AcidFormatError(
            f"{path}: orc.compress={compression!r} is not one of {sorted(COMPRESSION)}"
        )
    return COMPRESSION[codec]


@dataclass(frozen=True)
class WrittenFile:
    """What one closed event file holds."""

    path: str
    rows: int
    inserts: int
    updates: int
    deletes: int
    size: int
    key_index: str


class EventWriter:
    """Stream ACID events into one ORC file.

    ``write`` takes Arrow data with the event schema (see :func:`insert_events`,
    :func:`delete_events`); events must arrive sorted by (originalTransaction, bucket, rowId) —
    across calls too — as Hive's readers rely on it. ``close`` returns a :class:`WrittenFile`;
    ``abort`` (or leaving a ``with`` block on an exception) removes the partial file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        row_schema: pa.Schema,
        *,
        filesystem: pafs.FileSystem | None = None,
        compression: str = DEFAULT_COMPRESSION,
        stripe_size: int = DEFAULT_STRIPE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        loc = resolve(path, filesystem)
        self.filesystem, self.path = loc.filesystem, loc.path
        codec = pyarrow_codec(self.path, compression)
        self.schema, self._char_types = _event_layout_of(row_schema)
        self._batch_size = batch_size
        self._stream = create_new(self.filesystem, self.path)
        self._sink = _TailCapturingSink(self._stream)
        self._orc = po.ORCWriter(
            self._sink,
            compression=codec,
            stripe_size=stripe_size,
            batch_size=batch_size,
        )
        self._codec = codec
        self._stripe_size = stripe_size
        # set once a timestamp before 1970 with a fraction, or a NULL struct inside a struct,
        # arrives: the file is then re-encoded through pyorc when it closes (:mod:`.orc_timestamps`)
        self._pyorc: PyorcEncoder | None = None
        self._rows = 0
        self._counts = [0, 0, 0]
        self._last_key: tuple[int, int, int] | None = None
        # keys of the rows where a stripe may end: pyarrow cuts stripes only after a batch of
        # ``batch_size`` rows counted from the start of each write call, or at the call's end.
        self._boundary_keys: dict[int, str] = {}
        self.result: WrittenFile | None = None

    # ------------------------------------------------------------------ public
    def write(self, events: pa.Table | pa.RecordBatch) -> None:
        """Append events (event schema; ``row`` may be NULL for deletes)."""
        if self.result is not None:
            raise AcidFormatError(f"{self.path}: write after close")
        table = events if isinstance(events, pa.Table) else pa.Table.from_batches([events])
        if table.num_rows == 0:
            return
        table = self._conform(table).combine_chunks()
        owid = table.column(t.ORIGINAL_TRANSACTION).to_numpy()
        bucket = table.column(t.BUCKET).to_numpy()
        rowid = table.column(t.ROW_ID).to_numpy()
        self._last_key = check_event_order(
            self.path, self._rows, self._last_key, owid, bucket, rowid
        )
        ops = table.column(t.OPERATION).to_numpy()
        for op in range(3):
            self._counts[op] += int(np.count_nonzero(ops == op))
        n = table.num_rows
        ends = list(range(self._batch_size - 1, n, self._batch_size))
        if not ends or ends[-1] != n - 1:
            ends.append(n - 1)
        for i in ends:
            self._boundary_keys[self._rows + i + 1] = f"{owid[i]},{bucket[i]},{rowid[i]};"
        if self._pyorc is None and needs_pyorc(table):
            self._switch_to_pyorc()
        if self._pyorc is not None:
            self._pyorc.write(table)
        else:
            self._orc.write(table)
        self._rows += n

    def close(self) -> WrittenFile:
        """Finish the file: last stripe, footer with Hive's metadata, postscript."""
        if self.result is not None:
            return self.result
        stats = f"{self._counts[0]},{self._counts[1]},{self._counts[2]}"
        key_index = ""

        def items(stripe_rows: tuple[int, ...]) -> list[tuple[str, bytes]]:
            nonlocal key_index
            key_index = pyorc_keys if pyorc_keys is not None else self._key_index(stripe_rows)
            return [
                (KEY_INDEX_KEY, key_index.encode()),
                (ACID_STATS_KEY, stats.encode()),
                (ACID_VERSION_KEY, ACID_VERSION.encode()),
            ]

        pyorc_keys: str | None = None
        if self._pyorc is not None:
            data, pyorc_keys = self._finish_pyorc()
            self._stream = self.filesystem.open_output_stream(self.path)
        else:
            data = self._close_pyarrow()
        # char/varchar types and the proleptic Gregorian calendar, as Hive 3+ writes them, and
        # Hive's metadata: the footer is decoded and encoded once
        tail = finish_footer(data, self._char_types, items, source=self.path)
        self._stream.write(tail)
        size = self._stream.tell()
        self._stream.close()
        self.result = WrittenFile(
            path=self.path,
            rows=self._rows,
            inserts=self._counts[0],
            updates=self._counts[1],
            deletes=self._counts[2],
            size=size,
            key_index=key_index,
        )
        return self.result

    def abort(self) -> None:
        """Drop the partial file (nothing half-written stays behind)."""
        try:
            self._sink.capture = True
            self._orc.close()
        except Exception:  # noqa: S110 - the file is being discarded anyway
            pass
        if not self._stream.closed:
            self._stream.close()
        with contextlib.suppress(FileNotFoundError):
            self.filesystem.delete_file(self.path)

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # ------------------------------------------------------------------ helpers
    def _conform(self, table: pa.Table) -> pa.Table:
        if table.schema.names != self.schema.names:
            raise AcidSchemaError(
                f"{self.path}: events must have columns {self.schema.names}, got {table.schema.names}"
            )
        try:
            if any(has_wide_type(f.type) for f in table.schema):
                # timestamps beyond the nanosecond range, at microseconds (:mod:`.wide_timestamps`)
                wide = conform_wide(table, self.schema, self.path)
                return t.conform_chars(wide, wide.schema)
            return t.conform_chars(table.cast(self.schema), self.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise AcidSchemaError(
                f"{self.path}: events do not fit {t.schema_to_hive(self.schema)}: {exc}"
            ) from exc

    def _close_pyarrow(self) -> bytes:
        """Close pyarrow's writer; returns what it wrote while closing (last stripe, tail)."""
        if self._rows == 0:  # pyarrow opens the ORC file on the first write: give it one
            self._orc.write(self.schema.empty_table())
        self._sink.capture = True
        self._orc.close()
        return self._sink.captured()

    def _switch_to_pyorc(self) -> None:
        """From now on rows go to pyorc (:mod:`.orc_timestamps`); those pyarrow already took
        (none of which needed pyorc) are read back from its finished file and go first."""
        self._stream.write(self._close_pyarrow())
        self._stream.close()
        with self.filesystem.open_input_file(self.path) as src:
            written = po.ORCFile(pa.BufferReader(src.read()))
        self._pyorc = PyorcEncoder(self.schema, self._codec, self._stripe_size)
        for i in range(written.nstripes):
            self._pyorc.write(written.read_stripe(i))

    def _finish_pyorc(self) -> tuple[bytes, str]:
        """The file pyorc built (to be written over pyarrow's), and its key index. Memory: the
        file's bytes."""
        assert self._pyorc is not None
        data = self._pyorc.finish()
        encoded = po.ORCFile(pa.BufferReader(data))
        keys = encoded.read(columns=list(t.ROW_ID_EVENT_FIELDS))
        owid, bucket, rowid = (keys.column(i).to_numpy() for i in range(3))
        parts, end = [], 0
        for s in parse_tail(data, self.path).stripes:
            end += s.number_of_rows
            if s.number_of_rows:
                parts.append(f"{owid[end - 1]},{bucket[end - 1]},{rowid[end - 1]};")
        return data, "".join(parts)

    def _key_index(self, stripe_rows: Iterable[int]) -> str:
        parts = []
        end = 0
        for n in stripe_rows:
            end += n
            key = self._boundary_keys.get(end)
            if key is None:  # pragma: no cover - would mean pyarrow changed where it cuts stripes
                raise AcidFormatError(
                    f"{self.path}: no key recorded for the stripe ending at row {end}"
                )
            parts.append(key)
        return "".join(parts)


#: (row schema, its event schema, the event schema's char/varchar ORC types) of recent writers:
#: a statement opens a writer per partition and bucket, all with one row schema
_LAYOUTS: list[tuple[pa.Schema, pa.Schema, dict[int, tuple[int, int]]]] = []


def _event_layout_of(row_schema: pa.Schema) -> tuple[pa.Schema, dict[int, tuple[int, int]]]:
    """``t.event_schema(row_schema)`` and its ``char_columns``, derived once per row schema
    (compared with its field metadata, which names char and varchar types)."""
    for known, schema, types in _LAYOUTS:
        if known is row_schema or known.equals(row_schema, check_metadata=True):
            return schema, types
    schema = t.event_schema(row_schema)
    types = char_columns(schema)
    _LAYOUTS[:] = [(row_schema, schema, types), *_LAYOUTS[:7]]
    return schema, types


def check_event_order(
    path: str,
    rows_before: int,
    last_key: tuple[int, int, int] | None,
    owid: np.ndarray,
    bucket: np.ndarray,
    rowid: np.ndarray,
) -> tuple[int, int, int]:
    """Raise :class:`AcidFormatError` unless the events' keys (originalTransaction, bucket,
    rowId) ascend, after ``last_key`` (the previous events' last key, if any); returns the new
    last key. ``rows_before`` positions the events in the file for the message."""
    if last_key is not None:
        first = (int(owid[0]), int(bucket[0]), int(rowid[0]))
        if first < last_key:
            raise AcidFormatError(
                f"{path}: events out of order at row {rows_before}: key {first} after "
                f"{last_key}; sort by (originalTransaction, bucket, rowId)"
            )
    if len(owid) > 1:
        d_owid = np.sign(np.diff(owid))
        d_bucket = np.sign(np.diff(bucket.astype(np.int64)))
        d_rowid = np.sign(np.diff(rowid))
        bad = (d_owid < 0) | ((d_owid == 0) & ((d_bucket < 0) | ((d_bucket == 0) & (d_rowid < 0))))
        if bad.any():
            i = int(np.flatnonzero(bad)[0]) + 1
            raise AcidFormatError(
                f"{path}: events out of order at row {rows_before + i}: key "
                f"{(int(owid[i]), int(bucket[i]), int(rowid[i]))} after "
                f"{(int(owid[i - 1]), int(bucket[i - 1]), int(rowid[i - 1]))}; "
                "sort by (originalTransaction, bucket, rowId)"
            )
    return (int(owid[-1]), int(bucket[-1]), int(rowid[-1]))


def insert_events(
    rows: pa.Table | pa.RecordBatch, write_id: int, bucket_property: int, first_row_id: int = 0
) -> pa.Table:
    """Insert events for ``rows`` (the table's non-partition columns, in order): operation 0,
    originalTransaction = currentTransaction = ``write_id``, rowIds from ``first_row_id``."""
    n = rows.num_rows
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    row_struct = (
        pa.StructArray.from_arrays(
            [table.column(i).combine_chunks() for i in range(table.num_columns)],
            fields=list(table.schema),
        )
        if table.num_columns
        else pa.array([{}] * n, pa.struct([]))
    )
    return pa.table(
        {
            t.OPERATION: pa.array(np.full(n, t.INSERT_OPERATION, np.int32)),
            t.ORIGINAL_TRANSACTION: pa.array(np.full(n, write_id, np.int64)),
            t.BUCKET: pa.array(np.full(n, bucket_property, np.int32)),
            t.ROW_ID: pa.array(np.arange(first_row_id, first_row_id + n, dtype=np.int64)),
            t.CURRENT_TRANSACTION: pa.array(np.full(n, write_id, np.int64)),
            t.ROW: row_struct,
        }
    )


def delete_events(
    original_write_ids: Any,
    bucket_properties: Any,
    row_ids: Any,
    write_id: int,
    row_schema: pa.Schema,
) -> pa.Table:
    """Delete events (operation 2, NULL ``row``) for the given ROW__IDs, sorted as Hive requires."""
    owid = np.asarray(original_write_ids, dtype=np.int64)
    bucket = np.asarray(bucket_properties, dtype=np.int32)
    rowid = np.asarray(row_ids, dtype=np.int64)
    order = np.lexsort((rowid, bucket, owid))
    n = len(owid)
    struct_type = pa.struct(list(row_schema))
    null_rows = pa.nulls(n, struct_type)
    return pa.table(
        {
            t.OPERATION: pa.array(np.full(n, t.DELETE_OPERATION, np.int32)),
            t.ORIGINAL_TRANSACTION: pa.array(owid[order]),
            t.BUCKET: pa.array(bucket[order]),
            t.ROW_ID: pa.array(rowid[order]),
            t.CURRENT_TRANSACTION: pa.array(np.full(n, write_id, np.int64)),
            t.ROW: null_rows,
        }
    )


def write_acid_version_file(
    dir_path: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None
) -> None:
    """Write ``_orc_acid_version`` (one byte, ASCII ``2``) into a base/delta directory, as Hive 3+
    does for every directory it writes."""
    loc = resolve(dir_path, filesystem)
    make_dirs(loc.filesystem, loc.path)
    try:
        out = create_new(loc.filesystem, join(loc.path, ORC_ACID_VERSION_FILE))
    except FileConflictError:
        return  # another writer of the directory (a Spark task, a coordinator) made it
    with out:
        out.write(ACID_VERSION.encode())


def sort_events(events: pa.Table) -> pa.Table:
    """Sort events by (originalTransaction, bucket, rowId) ascending."""
    idx = pc.sort_indices(
        events,
        sort_keys=[(name, "ascending") for name in t.ROW_ID_EVENT_FIELDS],
    )
    return events.take(idx)


class _TailCapturingSink(io.RawIOBase):
    """Pass stripes through to the real stream; keep what is written while the ORC writer closes
    (the last stripe and the file tail) so the footer can be amended before it is stored."""

    def __init__(self, stream: pa.NativeFile) -> None:
        super().__init__()
        self._stream = stream
        self._position = 0
        self.capture = False
        self._held: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        if self.capture:
            self._held.append(chunk)
        else:
            self._stream.write(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        # The real stream is closed by EventWriter after the amended tail is written.
        super().close()

    def captured(self) -> bytes:
        return b"".join(self._held)
