"""Reading one ORC file of a split: event files (``read_events``) and original files
(``read_original``, with synthetic ROW__IDs), each stripe pruned by statistics and key range,
filtered by the delete set and the snapshot's write ids, and cast to the table schema; and
event files that need no merge read whole (``WholeFileRead``: one decoding call per file, the
same checks and casts planned once per event schema).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow._orc as porc
import pyarrow.fs as pafs

from acid_platform.errors import AcidSchemaError, CorruptAcidFileError
from acid_platform.format import types as t
from acid_platform.format.bucket_codec import encode_bucket
from acid_platform.format.delete_set import DeleteLookup, DeleteSet
from acid_platform.format.fs import open_for_reading
from acid_platform.format.reader import OrcDataFile, check_acid_version
from acid_platform.format.row_filter import filter_rows
from acid_platform.format.wide_timestamps import cast_column
from acid_platform.format.write_id_list import ValidWriteIdList

#: DNF filters as pyarrow.parquet takes them: [(col, op, value), ...] (AND) or a list of such lists (OR).
Filters = Sequence[Any]

#: :attr:`DataFileRef.kind` of a plain ORC file (synthetic ROW__IDs) and of an event file.
ORIGINAL_KIND, ACID_KIND = "original", "acid"
#: :attr:`DataFileRef.kind` of an insert-only table's Parquet and text files (no ROW__IDs).
PARQUET_KIND, TEXT_KIND = "parquet", "textfile"
_POSITIONAL_NAME = re.compile(r"^_col\d+$")


@dataclass(frozen=True)
class DataFileRef:
    """One file holding rows (not delete events) of a split."""

    path: str
    kind: str  # ACID_KIND (event file) or ORIGINAL_KIND (plain rows, synthetic ROW__IDs)
    filter_write_ids: bool = False  # the dir's write-id range is only partly valid
    # streaming files: the side file of the committed length, or (:func:`pin_flush_lengths`) the
    # length read from it once for the whole read (``None``: the side file is gone, read it all)
    flush_length_path: str | None = None
    logical_length: int | None = None
    synthetic_write_id: int = 0  # originals: 0, raw dirs: the dir's write id
    synthetic_statement_id: int = 0
    size: int = 0  # bytes: read tasks are ordered largest first


@dataclass
class ReadStats:
    """Counters a reader fills in (for metrics and tests)."""

    stripes_read: int = 0
    stripes_skipped: int = 0
    rows_read: int = 0
    rows_deleted: int = 0
    rows_invalid: int = 0
    delete_events: int = 0
    delete_set_bytes: int = 0
    #: splits whose delete events were merged in key order (above the cap) instead of held
    delete_sort_merges: int = 0
    #: stripes not probed against the delete set: their key range holds no delete event
    probes_skipped: int = 0
    files: list[str] = field(default_factory=list)

    def add(self, other: ReadStats) -> None:
        """Fold in the counters of another read (splits read in parallel each keep their own)."""
        self.stripes_read += other.stripes_read
        self.stripes_skipped += other.stripes_skipped
        self.rows_read += other.rows_read
        self.rows_deleted += other.rows_deleted
        self.rows_invalid += other.rows_invalid
        self.delete_events += other.delete_events
        self.delete_set_bytes = max(self.delete_set_bytes, other.delete_set_bytes)
        self.delete_sort_merges += other.delete_sort_merges
        self.probes_skipped += other.probes_skipped
        self.files.extend(other.files)


@dataclass(frozen=True)
class FileRead:
    """What reading one file of a split needs besides the file itself.

    ``read_cols``: row columns to decode (the projection plus filter columns); ``row_cols``:
    the projection returned; ``deleted``: the split's delete set; ``filters`` / ``filter_expr``:
    DNF filters and their Arrow expression; ``schema``: the table's row schema (casts, missing
    columns); ``row_ids``: keep only these ROW__IDs; ``stats``: counters to fill in.
    """

    read_cols: list[str]
    row_cols: list[str]
    deleted: DeleteLookup
    with_row_id: bool
    filters: Filters | None
    filter_expr: Any
    schema: pa.Schema | None
    stats: ReadStats
    row_ids: DeleteSet | None = None


def read_events(
    f: OrcDataFile, ref: DataFileRef, write_ids: ValidWriteIdList, r: FileRead
) -> Iterator[pa.RecordBatch]:
    """The visible rows of one event file, a stripe at a time."""
    read_cols, deleted, stats, row_ids = r.read_cols, r.deleted, r.stats, r.row_ids
    with_row_id, filters = r.with_row_id, r.filters
    # Only the ROW__ID columns (and currentTransaction when some write ids are invalid).
    key_cols = list(t.ROW_ID_EVENT_FIELDS)
    if ref.filter_write_ids:
        key_cols.append(t.CURRENT_TRANSACTION)
    present = [c for c in read_cols if c in f.row_schema.names]
    row_paths = [f"{t.ROW}.{c}" for c in present]
    # An empty projection still needs row counts: read one cheap key column then.
    cols = row_paths or [t.OPERATION]
    exceptions = np.asarray(write_ids.exceptions, np.int64)
    # A stripe whose key range (hive.acid.key.index) holds no delete event is not probed.
    probe_by_range = isinstance(deleted, DeleteSet) and len(deleted) > 0
    key_ranges = _stripe_key_ranges(f) if row_ids is not None or probe_by_range else None
    # Stripes decoded in one call anyway (small files) take their keys in the same call.
    one_call = bool(present) and f.reads_in_one_call(key_cols + row_paths)
    for i in range(f.num_stripes):
        if filters and _stripe_excluded(f, i, filters):
            stats.stripes_skipped += 1
            continue
        if row_ids is not None and (
            len(row_ids) == 0 or (key_ranges is not None and not row_ids.intersects(*key_ranges[i]))
        ):
            stats.stripes_skipped += 1
            continue
        probe = len(deleted) > 0
        if probe and probe_by_range and key_ranges is not None:
            probe = isinstance(deleted, DeleteSet) and deleted.intersects(*key_ranges[i])
            stats.probes_skipped += int(not probe)
        if not (with_row_id or probe or ref.filter_write_ids or row_ids is not None):
            batch = f.read_stripe(i, cols)
            stats.stripes_read += 1
            stats.rows_read += batch.num_rows
            yield from _finish(batch.num_rows, _row_arrays(batch, present), None, None, r)
            continue
        # Keys first: the rows they drop are never copied, and each decoding thread drops them
        # from its own column group.
        # A stripe whose statistics show one (originalTransaction, bucket) decodes only rowId.
        const = f.constant_keys(i)
        stripe_keys = key_cols if const is None else key_cols[2:]
        keys = f.read_stripe(i, stripe_keys + row_paths if one_call else stripe_keys)
        stats.stripes_read += 1
        stats.rows_read += keys.num_rows
        ids = _EventIds(keys, const)
        keep = np.ones(keys.num_rows, bool)
        if ref.filter_write_ids:
            valid = valid_write_id_mask(
                keys.column(t.CURRENT_TRANSACTION).to_numpy(), write_ids.high_watermark, exceptions
            )
            stats.rows_invalid += int((~valid).sum())
            keep &= valid
        if probe:
            hit = ids.find(deleted)
            stats.rows_deleted += int((hit & keep).sum())
            keep &= ~hit
        if row_ids is not None:
            keep &= ids.find(row_ids)
        kept = int(np.count_nonzero(keep))
        if kept == 0:
            continue
        mask = None if kept == keys.num_rows else keep
        row_arrays: dict[str, pa.Array] = {}
        if one_call:
            rows = keys.select([t.ROW])
            rows = rows if mask is None else filter_rows(rows, mask)
            row_arrays = _row_arrays(rows, present)
        elif present:
            rows = f.read_stripe(i, row_paths, keep=mask)
            row_arrays = _row_arrays(rows, present)
        row_id = None
        if with_row_id:
            row_id = ids.arrays(mask)
        yield from _finish(kept, row_arrays, None, row_id, r)


def reads_whole(ref: DataFileRef) -> bool:
    """Whether every row of ``ref`` is visible with no merge step: an event file (a base or an
    insert delta) whose whole write-id range the snapshot sees, read to its end (not a streaming
    file cut at a committed length). With no delete events for its bucket, such a file is read
    whole by :class:`WholeFileRead`."""
    return (
        ref.kind == ACID_KIND
        and not ref.filter_write_ids
        and ref.flush_length_path is None
        and ref.logical_length is None
    )


@dataclass(frozen=True)
class _WholePlan:
    """How one event schema's files are read: the ``row.<c>`` paths decoded, and for each
    output column its name, whether the file holds it (else NULLs), its type, whether it is
    cast, and its ``char``/``varchar`` rule."""

    paths: list[str]
    columns: list[tuple[str, bool, pa.DataType, bool, tuple[str, int] | None]]


class WholeFileRead:
    """Reads event files that need no merge (:func:`reads_whole`, no delete events in their
    bucket) whole, in one decoding call each: the rows ``read_events`` returns for such a file
    with no ROW__ID, no filters and no ``row_ids`` — the same checks (ORC, ``hive.acid.version``
    >= 2, the event schema) and the same casts, ``char`` rules and NULL columns, planned once per
    event schema rather than per file. ``columns``: the row columns, in order; ``schema``: the
    table's row schema (every column of ``columns`` is in it). Thread-safe: plans are values.
    """

    def __init__(self, filesystem: pafs.FileSystem, columns: Sequence[str], schema: pa.Schema):
        self.filesystem = filesystem
        self.columns = list(columns)
        self.schema = schema
        self._plans: list[tuple[pa.Schema, _WholePlan]] = []

    def read(self, path: str) -> tuple[int, list[pa.RecordBatch]]:
        """The file's row count and its rows as batches of :attr:`columns` (none when no column
        is asked for: the count says how many rows there are)."""
        try:
            reader = porc.ORCReader()
            reader.open(open_for_reading(self.filesystem, path))
            meta = reader.metadata()
            file_schema = reader.schema()
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise CorruptAcidFileError(f"{path}: cannot read as ORC ({exc})") from exc
        version = meta.get(ACID_VERSION_KEY_BYTES) if meta is not None else None
        check_acid_version(version.decode(errors="replace") if version is not None else None, path)
        plan = self._plan_of(file_schema, path)
        rows = reader.nrows()
        if not plan.columns or rows == 0:
            return rows, []
        try:
            table = reader.read(columns=plan.paths) if plan.paths else None
        except (OSError, pa.ArrowException) as exc:
            raise CorruptAcidFileError(f"{path}: cannot read as ORC ({exc})") from exc
        if table is None:
            return rows, [self._batch(plan, rows, None)]
        if table.num_rows != rows:
            raise CorruptAcidFileError(
                f"{path}: the footer counts {rows} rows, the stripes hold {table.num_rows}"
            )
        return rows, [
            self._batch(plan, len(chunk), chunk) for chunk in table.column(0).chunks if len(chunk)
        ]

    def _plan_of(self, file_schema: pa.Schema, path: str) -> _WholePlan:
        # compared in C++ (hashing a schema walks its fields in Python): a table's files share
        # one or a few event schemas
        for known, plan in self._plans:
            if file_schema.equals(known):
                return plan
        plan = self._plan(file_schema, path)
        self._plans = [*self._plans, (file_schema, plan)]
        return plan

    def _plan(self, file_schema: pa.Schema, path: str) -> _WholePlan:
        t.check_event_schema(file_schema, path)
        row_type = file_schema.field(t.ROW).type
        present = [c for c in self.columns if row_type.get_field_index(c) >= 0]
        columns = []
        for c in self.columns:
            field = self.schema.field(c)
            stored = row_type.field(c).type if c in present else None
            cast = stored is not None and stored != field.type
            columns.append((c, stored is not None, field.type, cast, t.char_type(field)))
        return _WholePlan([f"{t.ROW}.{c}" for c in present], columns)

    def _batch(self, plan: _WholePlan, n: int, row: pa.StructArray | None) -> pa.RecordBatch:
        arrays = []
        for name, stored, target, cast, char in plan.columns:
            if not stored or row is None:
                arr = pa.nulls(n, target)  # column added after this file was written
            else:
                arr = row.field(name)
                if cast:  # exact or a typed error (:mod:`.wide_timestamps`)
                    arr = cast_column(arr, target, f"column {name!r}")
            if char is not None:
                arr = t.apply_char_rules(arr, *char)
            arrays.append(arr)
        return pa.RecordBatch.from_arrays(arrays, names=[c for c, *_ in plan.columns])


#: ``hive.acid.version`` as pyarrow's footer metadata keys it
ACID_VERSION_KEY_BYTES = b"hive.acid.version"


class _EventIds:
    """The ROW__IDs of one stripe's rows: three decoded key columns, or the decoded rowId
    beside the (originalTransaction, bucket) that the stripe's statistics show all rows share."""

    def __init__(self, keys: pa.RecordBatch, const: tuple[int, int] | None) -> None:
        self.const = const
        self.rowid = keys.column(t.ROW_ID).to_numpy()
        if const is None:
            self.owid = keys.column(t.ORIGINAL_TRANSACTION).to_numpy()
            self.bucket = keys.column(t.BUCKET).to_numpy()

    def find(self, events: DeleteLookup) -> np.ndarray:
        """Which rows ``events`` holds."""
        if self.const is not None:
            return events.contains_run(self.const[0], self.const[1], self.rowid)
        return events.contains(self.owid, self.bucket, self.rowid)

    def arrays(self, mask: np.ndarray | None) -> tuple[pa.Array, pa.Array, pa.Array]:
        """(writeid, bucketid, rowid) of the rows ``mask`` keeps (all when ``None``)."""
        rowid = self.rowid if mask is None else self.rowid[mask]
        if self.const is not None:
            owid = np.full(len(rowid), self.const[0], np.int64)
            bucket = np.full(len(rowid), self.const[1], np.int32)
        else:
            owid = self.owid if mask is None else self.owid[mask]
            bucket = self.bucket if mask is None else self.bucket[mask]
        return pa.array(owid), pa.array(bucket), pa.array(rowid)


def read_original(
    f: OrcDataFile, ref: DataFileRef, bucket_id: int, first_row_id: int, r: FileRead
) -> Iterator[pa.RecordBatch]:
    """The visible rows of one original (non-ACID) file, with synthetic ROW__IDs from
    ``first_row_id``."""
    read_cols, deleted, stats, row_ids = r.read_cols, r.deleted, r.stats, r.row_ids
    with_row_id, filters, schema = r.with_row_id, r.filters, r.schema
    bucket_property = encode_bucket(bucket_id, ref.synthetic_statement_id)
    rename = _positional_names(f.row_schema, schema)
    file_names = {rename.get(n, n): n for n in f.row_schema.names}
    present = [c for c in read_cols if c in file_names]
    next_row = first_row_id
    for i in range(f.num_stripes):
        n_stripe_rows = (
            f.stripe_rows()[i]
            if (filters or row_ids is not None or f.num_stripes > 1)
            else f.num_rows
        )
        if filters and _stripe_excluded(f, i, filters, rename_back=file_names):
            stats.stripes_skipped += 1
            next_row += n_stripe_rows
            continue
        if row_ids is not None and not row_ids.intersects(
            (ref.synthetic_write_id, bucket_property, next_row - 1),
            (ref.synthetic_write_id, bucket_property, next_row + n_stripe_rows - 1),
        ):
            stats.stripes_skipped += 1
            next_row += n_stripe_rows
            continue
        batch = f.read_stripe(i, [file_names[c] for c in present] or None)
        stats.stripes_read += 1
        stats.rows_read += batch.num_rows
        n = batch.num_rows
        rowid = np.arange(next_row, next_row + n, dtype=np.int64)
        next_row += n
        owid = np.full(n, ref.synthetic_write_id, np.int64)
        bucket = np.full(n, bucket_property, np.int32)
        keep = None
        if len(deleted):
            hit = deleted.contains(owid, bucket, rowid)
            stats.rows_deleted += int(hit.sum())
            keep = ~hit
        if row_ids is not None:
            wanted = row_ids.contains(owid, bucket, rowid)
            keep = wanted if keep is None else keep & wanted
        row_arrays = {c: batch.column(file_names[c]) for c in present}
        row_id = (pa.array(owid), pa.array(bucket), pa.array(rowid)) if with_row_id else None
        yield from _finish(n, row_arrays, keep, row_id, r)


def read_plain(
    batches: Iterator[pa.RecordBatch], r: FileRead, path: str
) -> Iterator[pa.RecordBatch]:
    """The rows of one Parquet or text file of an insert-only table (batches of its columns as
    stored), cast to the table schema and filtered; such files have no ROW__IDs."""
    if r.with_row_id or r.row_ids is not None:
        raise AcidSchemaError(f"{path}: a file of an insert-only table has no ROW__IDs")
    for batch in batches:
        r.stats.rows_read += batch.num_rows
        arrays = {c: batch.column(c) for c in r.read_cols if c in batch.schema.names}
        yield from _finish(batch.num_rows, arrays, None, None, r)


def _finish(
    n: int,
    row_arrays: dict[str, pa.Array],
    keep: np.ndarray | None,
    row_id: tuple[Any, Any, Any] | None,
    r: FileRead,
) -> Iterator[pa.RecordBatch]:
    """One output batch: ROW__ID first, row columns cast to the table schema (NULL for columns
    the file lacks), rows dropped by ``keep`` and by the filters, filter-only columns removed."""
    row_cols, read_cols, filter_expr, schema = r.row_cols, r.read_cols, r.filter_expr, r.schema
    names, arrays = [], []
    if row_id is not None:
        names.append(t.ROW_ID_COLUMN)
        arrays.append(pa.StructArray.from_arrays(list(row_id), fields=list(t.ROW_ID_TYPE)))
    for c in read_cols:
        target = _target_type(schema, c, row_arrays.get(c))
        arr = row_arrays.get(c)
        if arr is None:
            arr = pa.nulls(n, target)  # column added after this file was written
        elif target is not None and arr.type != target:
            # exact or a typed error: a wide timestamp never narrows (:mod:`.wide_timestamps`)
            arr = cast_column(arr, target, f"column {c!r}")
        index = schema.get_field_index(c) if schema is not None else -1
        char = t.char_type(schema.field(index)) if schema is not None and index >= 0 else None
        if char is not None and arr is not None:
            # Hive's readers return char(n) padded and varchar(n) cut to n, whatever the file
            # holds (files written before these rules, or by other writers)
            arr = t.apply_char_rules(arr, *char)
        names.append(c)
        arrays.append(arr)
    if not names:  # no columns requested (e.g. COUNT(*)): still carry the row count
        kept = n if keep is None else int(keep.sum())
        if kept:
            yield pa.RecordBatch.from_struct_array(pa.array([{}] * kept, pa.struct([])))
        return
    batch = pa.RecordBatch.from_arrays(arrays, names=names)
    if keep is not None and not keep.all():
        batch = filter_rows(batch, keep)
    if filter_expr is not None and batch.num_rows:
        batch = pa.Table.from_batches([batch]).filter(filter_expr).combine_chunks().to_batches()
        batch = batch[0] if batch else None
        if batch is None:
            return
    extra = [c for c in read_cols if c not in row_cols]
    if extra:
        batch = batch.select([x for x in batch.schema.names if x not in extra])
    if batch.num_rows:
        yield batch


def _row_arrays(batch: pa.RecordBatch, present: list[str]) -> dict[str, pa.Array]:
    if not present:
        return {}
    row = batch.column(t.ROW)
    return {name: row.field(name) for name in present}


def valid_write_id_mask(
    write_ids: np.ndarray, high_watermark: int, exceptions: np.ndarray
) -> np.ndarray:
    """Which of ``write_ids`` are valid: at or below the high watermark and not an exception."""
    ok = write_ids <= high_watermark
    if len(exceptions):
        ok &= ~np.isin(write_ids, exceptions)
    return ok


def _target_type(schema: pa.Schema | None, name: str, arr: pa.Array | None) -> pa.DataType:
    if schema is not None and schema.get_field_index(name) >= 0:
        return schema.field(name).type
    return arr.type if arr is not None else pa.null()


def _positional_names(file_schema: pa.Schema, schema: pa.Schema | None) -> dict[str, str]:
    """Files written by old Hive name columns ``_col0, _col1…``: map them to the table's names."""
    if (
        schema is None
        or not file_schema.names
        or not all(_POSITIONAL_NAME.match(n) for n in file_schema.names)
    ):
        return {}
    return {
        fname: schema.names[i] for i, fname in enumerate(file_schema.names) if i < len(schema.names)
    }


def _stripe_key_ranges(
    f: OrcDataFile,
) -> list[tuple[tuple[int, int, int] | None, tuple[int, int, int]]] | None:
    """Per stripe, the (exclusive lower, inclusive upper) event keys it can hold, from Hive's
    ``hive.acid.key.index`` (the last key of each stripe); ``None`` when the file has no usable
    index (then every stripe is read)."""
    try:
        keys = f.key_index
    except ValueError:
        return None
    if len(keys) != f.num_stripes:
        return None
    out: list[tuple[tuple[int, int, int] | None, tuple[int, int, int]]] = []
    previous: tuple[int, int, int] | None = None
    for k in keys:
        last = (k.original_write_id, k.bucket, k.row_id)
        out.append((previous, last))
        previous = last
    return out


def to_dnf(filters: Filters) -> list[list[tuple[str, str, Any]]]:
    """``filters`` as a list of conjunctions (one AND list becomes a one-element OR)."""
    if filters and isinstance(filters[0], tuple):
        return [list(filters)]
    return [list(c) for c in filters]


def _stripe_excluded(
    f: OrcDataFile, stripe: int, filters: Filters, rename_back: dict[str, str] | None = None
) -> bool:
    """True when stripe statistics prove no row of the stripe can pass ``filters``."""
    for conj in to_dnf(filters):
        if not any(_predicate_impossible(f, stripe, c, op, v, rename_back) for c, op, v in conj):
            return False
    return True


def _predicate_impossible(
    f: OrcDataFile, stripe: int, col: str, op: str, value: Any, rename_back: dict[str, str] | None
) -> bool:
    name = rename_back.get(col, col) if rename_back else col
    st = f.column_statistics(stripe, [name])
    if not st or "minimum" not in st or "maximum" not in st:
        return False
    lo, hi = st["minimum"], st["maximum"]
    try:
        if op in ("=", "=="):
            return bool(value < lo or value > hi)
        if op == "<":
            return bool(lo >= value)
        if op == "<=":
            return bool(lo > value)
        if op == ">":
            return bool(hi <= value)
        if op == ">=":
            return bool(hi < value)
        if op == "in":
            return all(v < lo or v > hi for v in value)
    except TypeError:
        return False
    return False
