"""Open one ORC data file of an ACID table and read it stripe by stripe.

:class:`OrcDataFile` checks what Hive and Trino check before trusting a file: that it is ORC at
all, that an ACID event file carries ``hive.acid.version`` >= 2, that a streaming file is cut at
its ``_flush_length``. Stripe statistics (for predicate pushdown) come from pyorc; rows come from
pyarrow, one stripe at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acid_platform.errors import (
    AcidSchemaError,
    CorruptAcidFileError,
    MissingAcidVersionError,
    TimestampRangeError,
)
from acid_platform.format import types as t
from acid_platform.format.flush_length import TruncatedFile
from acid_platform.format.fs import open_for_reading
from acid_platform.format.orc_tail import read_stripe_int_bounds
from acid_platform.format.parallel import (
    PARALLEL_MIN_ROWS,
    column_groups,
    read_threads,
    run_parallel,
)
from acid_platform.format.row_filter import bool_mask, filter_arrays
from acid_platform.format.wide_timestamps import (
    Unclosable,
    decode_stripe,
    is_out_of_range,
)
from acid_platform.format.writer import ACID_STATS_KEY, ACID_VERSION_KEY, KEY_INDEX_KEY


@dataclass(frozen=True)
class EventKey:
    """(originalWriteId, bucketProperty, rowId): the identity of a row version."""

    original_write_id: int
    bucket: int
    row_id: int


class OrcDataFile:
    """An ORC file of a table: an ACID event file, or an original (pre-ACID / raw) file."""

    def __init__(
        self,
        filesystem: pafs.FileSystem,
        path: str,
        *,
        logical_length: int | None = None,
        expect_acid: bool | None = True,
    ) -> None:
        """``expect_acid``: True requires the event schema, False requires a plain row schema,
        None accepts either (see :attr:`is_acid`)."""
        self.filesystem = filesystem
        self.path = path
        self.logical_length = logical_length
        try:
            raw = open_for_reading(filesystem, path)
            #: the whole file, when it was fetched in one request (see ``open_for_reading``)
            self._whole: pa.Buffer | None = None
            if isinstance(raw, pa.BufferReader):
                self._whole = raw.read_buffer()
                raw.seek(0)
            self._file: Any = (
                TruncatedFile(raw, logical_length) if logical_length is not None else raw
            )
            self._orc = po.ORCFile(self._file)
            self.schema: pa.Schema = self._orc.schema
            self.num_rows: int = self._orc.nrows
            self.num_stripes: int = self._orc.nstripes
            meta = self._orc.metadata or {}
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise CorruptAcidFileError(f"{path}: cannot read as ORC ({exc})") from exc
        self.user_metadata: dict[str, str] = {
            (k.decode() if isinstance(k, bytes) else k): (
                v.decode(errors="replace") if isinstance(v, bytes) else v
            )
            for k, v in meta.items()
        }
        self.is_acid = t.is_event_schema(self.schema)
        if expect_acid is True:
            # Trino's order: a file in an ACID directory must first say it is Hive 3+ ACID.
            self._check_acid_version()
            t.check_event_schema(self.schema, path)
        elif expect_acid is False and self.is_acid:
            raise AcidSchemaError(
                f"{path}: an original (raw) file must not carry the ACID event schema"
            )
        elif self.is_acid:
            self._check_acid_version()
        self._pyorc: Any = None
        self._key_bounds: list[dict[int, tuple[int, int | None, int | None]]] | None = None
        self._raw_files: list[Any] = []  # extra handles for parallel column groups
        self._extra: list[Any] = []

    # ------------------------------------------------------------------ metadata
    @property
    def acid_version(self) -> int | None:
        value = self.user_metadata.get(ACID_VERSION_KEY)
        return int(value) if value and value.strip().isdigit() else None

    @property
    def acid_stats(self) -> tuple[int, int, int] | None:
        value = self.user_metadata.get(ACID_STATS_KEY)
        if not value:
            return None
        ins, upd, dele = (int(x) for x in value.split(","))
        return ins, upd, dele

    @property
    def key_index(self) -> list[EventKey]:
        """The last key of each stripe, from ``hive.acid.key.index``."""
        value = self.user_metadata.get(KEY_INDEX_KEY, "")
        keys = []
        for part in value.split(";"):
            if part:
                a, b, c = part.split(",")
                keys.append(EventKey(int(a), int(b), int(c)))
        return keys

    @property
    def row_schema(self) -> pa.Schema:
        """The table columns in the file (the ``row`` struct's fields, or the plain schema)."""
        if self.is_acid:
            return pa.schema(list(self.schema.field(t.ROW).type))
        return self.schema

    def stripe_rows(self) -> list[int]:
        return [len(s) for s in self._stripes_pyorc()]

    def column_statistics(self, stripe: int, column_path: Sequence[str]) -> dict[str, Any] | None:
        """ORC statistics (``minimum``, ``maximum``, ``has_null`` …) of one column in one stripe;
        ``column_path`` names a row column (``["a"]``) or a key column of the event struct."""
        col_id = self._column_id(column_path)
        if col_id is None:
            return None
        try:
            return dict(self._stripes_pyorc()[stripe][col_id].statistics)
        except Exception:  # statistics are an optimisation: absent or odd ones prune nothing
            return None

    def constant_keys(self, stripe: int) -> tuple[int, int] | None:
        """(originalTransaction, bucket) of every row of ``stripe`` of an event file, when its
        statistics show each column holds one value (minimum == maximum, counted in every row:
        always so in an insert delta); ``None`` when they vary or are not known."""
        if self._key_bounds is None:
            self._key_bounds = self._read_key_bounds()
        if not self.is_acid or stripe >= len(self._key_bounds):
            return None
        bounds = self._key_bounds[stripe]
        rows, owid, bucket = bounds.get(0), bounds.get(2), bounds.get(3)
        if rows is None or owid is None or bucket is None:
            return None
        if owid[0] != rows[0] or bucket[0] != rows[0] or owid[1] is None or bucket[1] is None:
            return None
        if owid[1] != owid[2] or bucket[1] != bucket[2]:
            return None
        return owid[1], bucket[1]

    # ------------------------------------------------------------------ data
    def read_stripe(
        self,
        index: int,
        columns: Sequence[str] | None = None,
        *,
        keep: np.ndarray | None = None,
    ) -> pa.RecordBatch:
        """Read one stripe; ``columns`` are top-level or dotted (``row.a``) names; ``keep`` (a
        boolean mask over the stripe's rows) drops rows as they are decoded.

        A large stripe is decoded as column groups on several threads (see
        :mod:`.parallel`), each filtering its own group; the batch is the same either way.
        """
        mask = bool_mask(keep) if keep is not None else None
        groups = self._column_groups(columns)
        try:
            if groups is None:
                return _read_filtered(
                    self._orc, index, list(columns) if columns is not None else None, mask
                )
            handles = self._handles(len(groups))
            tasks = [
                functools.partial(_read_filtered, h, index, g, mask)
                for h, g in zip(handles, groups, strict=True)
            ]
            return self._merge_groups(run_parallel(tasks))
        except (OSError, pa.ArrowException) as exc:
            if is_out_of_range(exc):  # timestamps beyond nanoseconds: pyarrow refuses them
                return self._read_wide(index, columns, mask)
            raise CorruptAcidFileError(
                f"{self.path}: stripe {index} is unreadable ({exc})"
            ) from exc

    def reads_in_one_call(self, columns: Sequence[str] | None = None) -> bool:
        """Whether :meth:`read_stripe` decodes ``columns`` in a single call (no column groups on
        several threads): a reader that needs other columns of the stripe too can then take
        them in the same call."""
        return self._column_groups(columns) is None

    def iter_stripes(
        self, columns: Sequence[str] | None = None
    ) -> Iterator[tuple[int, pa.RecordBatch]]:
        for i in range(self.num_stripes):
            yield i, self.read_stripe(i, columns)

    def close(self) -> None:
        self._file.close()
        for raw in self._raw_files:
            raw.close()
        self._raw_files.clear()
        self._extra.clear()

    def __enter__(self) -> OrcDataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers
    def _check_acid_version(self) -> None:
        check_acid_version(self.user_metadata.get(ACID_VERSION_KEY), self.path)

    def _read_wide(
        self, index: int, columns: Sequence[str] | None, mask: pa.Array | None
    ) -> pa.RecordBatch:
        """A stripe pyarrow refuses (a timestamp beyond the nanosecond range), decoded by pyorc
        (:func:`.wide_timestamps.decode_stripe`)."""
        try:
            batch = decode_stripe(
                Unclosable(self._file),
                index,
                self.schema,
                list(columns) if columns is not None else None,
            )
        except TimestampRangeError as exc:
            raise TimestampRangeError(f"{self.path}: stripe {index}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - pyorc's errors have no common base
            raise CorruptAcidFileError(
                f"{self.path}: stripe {index} is unreadable ({exc})"
            ) from exc
        return batch if mask is None else batch.filter(mask)

    def _column_groups(self, columns: Sequence[str] | None) -> list[list[str]] | None:
        """Column groups for a parallel stripe read, or ``None`` to read in one call."""
        threads = read_threads()
        if threads < 2 or self.num_stripes == 0:
            return None
        if self.num_rows < PARALLEL_MIN_ROWS * self.num_stripes:
            return None  # stripes this small decode faster in one call
        names = list(columns) if columns is not None else list(self.schema.names)
        row_type = self.schema.field(t.ROW).type if self.is_acid else None
        leaves: list[tuple[str, pa.DataType]] = []
        light: list[str] = []
        for name in names:
            if row_type is not None and name == t.ROW:
                leaves += [(f"{t.ROW}.{f.name}", f.type) for f in row_type]
            elif row_type is not None and name.startswith(f"{t.ROW}."):
                idx = row_type.get_field_index(name[len(t.ROW) + 1 :])
                if idx < 0:
                    return None  # let pyarrow report the unknown column
                leaves.append((name, row_type.field(idx).type))
            elif row_type is not None:
                light.append(name)  # event key columns: cheap, ride with the first group
            else:
                idx = self.schema.get_field_index(name)
                if idx < 0:
                    return None
                leaves.append((name, self.schema.field(idx).type))
        if len(leaves) < 2:
            return None
        groups = column_groups(leaves, threads)
        if len(groups) < 2:
            return None
        groups[0] = light + groups[0]
        return groups

    def _handles(self, count: int) -> list[Any]:
        """``count`` independent pyarrow readers of this file (the first is the main one)."""
        while len(self._extra) < count - 1:
            raw = (
                pa.BufferReader(self._whole)
                if self._whole is not None
                else open_for_reading(self.filesystem, self.path)
            )
            self._raw_files.append(raw)
            source: Any = (
                TruncatedFile(raw, self.logical_length) if self.logical_length is not None else raw
            )
            self._extra.append(po.ORCFile(source))
        return [self._orc, *self._extra[: count - 1]]

    def _merge_groups(self, parts: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
        """One batch (file column order) from the column groups' batches."""
        top: dict[str, pa.Array] = {}
        children: dict[str, pa.Array] = {}
        row_mask: pa.Array | None = None
        for batch in parts:
            for name, col in zip(batch.schema.names, batch.columns, strict=True):
                if self.is_acid and name == t.ROW:
                    for i, f in enumerate(col.type):
                        children[f.name] = col.field(i)
                    if row_mask is None and col.null_count:
                        row_mask = col.is_null()
                else:
                    top[name] = col
        names: list[str] = []
        arrays: list[pa.Array] = []
        for f in self.schema:
            if self.is_acid and f.name == t.ROW and children:
                fields = [c for c in f.type if c.name in children]
                arrays.append(
                    pa.StructArray.from_arrays(
                        [children[c.name] for c in fields], fields=fields, mask=row_mask
                    )
                )
                names.append(f.name)
            elif f.name in top:
                arrays.append(top[f.name])
                names.append(f.name)
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def _read_key_bounds(self) -> list[dict[int, tuple[int, int | None, int | None]]]:
        """Stripe statistics of the root (row count) and the two leading event key columns."""
        if not self.is_acid or self._orc.nstripe_statistics != self.num_stripes:
            return []
        return read_stripe_int_bounds(self._orc, self._file, (0, 2, 3))

    def _stripes_pyorc(self) -> Any:
        if self._pyorc is None:
            import pyorc  # local: only needed for statistics

            self._file.seek(0)
            reader = pyorc.Reader(Unclosable(self._file))  # type: ignore[arg-type]
            self._pyorc = [reader.read_stripe(i) for i in range(reader.num_of_stripes)]
        return self._pyorc

    def _column_id(self, column_path: Sequence[str]) -> int | None:
        """ORC column id (pre-order over the type tree, root = 0)."""
        fields: Sequence[pa.Field] = list(self.schema)
        path = list(column_path)
        if self.is_acid and path and path[0] not in t.EVENT_KEY_COLUMNS and path[0] != t.ROW:
            path = [t.ROW, *path]
        next_id = 1
        for depth, name in enumerate(path):
            for f in fields:
                if f.name == name:
                    if depth == len(path) - 1:
                        return next_id
                    if not pa.types.is_struct(f.type):
                        return None
                    fields = list(f.type)
                    next_id += 1
                    break
                next_id += _subtree_size(f.type)
            else:
                return None
        return None


def check_acid_version(value: str | None, path: str) -> None:
    """Raise :class:`MissingAcidVersionError` unless ``value`` (an event file's
    ``hive.acid.version`` footer entry, ``None`` when absent) is 2 or more, as Trino checks."""
    text = value.strip() if value else ""
    if not text.isdigit() or int(text) < 2:
        raise MissingAcidVersionError(
            f"Hive transactional tables are supported since Hive 3.0. Expected "
            f"`{ACID_VERSION_KEY}` in ORC metadata in {path} to be >=2 but was "
            f"{'<empty>' if value is None else value}. If you have upgraded from "
            "an older version of Hive, make sure a major compaction has been run at least once "
            "after the upgrade."
        )


def _read_filtered(
    orc: Any, index: int, columns: list[str] | None, mask: pa.Array | None
) -> pa.RecordBatch:
    batch = orc.read_stripe(index, columns=columns)
    if mask is None:
        return batch
    return pa.RecordBatch.from_arrays(filter_arrays(batch.columns, mask), schema=batch.schema)


def _subtree_size(dtype: pa.DataType) -> int:
    if pa.types.is_struct(dtype):
        return 1 + sum(_subtree_size(f.type) for f in dtype)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return 1 + _subtree_size(dtype.value_type)
    if pa.types.is_map(dtype):
        return 1 + _subtree_size(dtype.key_type) + _subtree_size(dtype.item_type)
    return 1
