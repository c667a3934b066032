"""Delete events merged in key order, for splits with more of them than memory should hold
(Hive's SortMergedDeleteEventRegistry, chosen above ``hive.transactional.events.mem``).

A split's delete events are normally held whole as a :class:`~.delete_set.DeleteSet` (about
8 bytes an event). Above the cap, :class:`SortMergeDeletes` reads them instead as the data is
read: every delete-delta file is sorted by (originalWriteId, bucketProperty, rowId), as are the
rows of every data file, so for each data stripe only the events up to the stripe's last key are
taken from each file's cursor, and never again. Memory: one batch of ``batch_rows`` events per
delete file plus the events falling between two slices of ``batch_rows`` data keys, whatever
the table holds.

Keys that go backwards (the next data file starting below the previous one's last key) reopen
the cursors, so the answer never depends on the order files are read in.

>>> DEFAULT_DELETE_EVENTS_CAP
10000000
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import InvalidSettingError
from acid_platform.format import types as t
from acid_platform.format.delete_set import DeleteLookup, DeleteSet
from acid_platform.format.file_reader import ReadStats, valid_write_id_mask
from acid_platform.format.reader import OrcDataFile
from acid_platform.format.write_id_list import ValidWriteIdList

#: Hive's setting for the most delete events a reader holds in memory.
DELETE_EVENTS_CAP_KEY = "hive.transactional.events.mem"
#: Hive's default for it.
DEFAULT_DELETE_EVENTS_CAP = 10_000_000
#: The cap the environment sets for this process (``ACID_TRANSACTIONAL_EVENTS_MEM``), else Hive's.
ENV_DELETE_EVENTS_CAP = "ACID_TRANSACTIONAL_EVENTS_MEM"
#: Delete events read from a file at a time in the sort-merge.
MERGE_BATCH_ROWS = 65_536

Key = tuple[int, int, int]


def delete_events_cap(cap: int | None = None) -> int:
    """``cap``, or the process's (:data:`ENV_DELETE_EVENTS_CAP`), or Hive's default; a cap below
    zero means no cap (every split's events in memory)."""
    if cap is not None:
        return cap
    return int(os.environ.get(ENV_DELETE_EVENTS_CAP, DEFAULT_DELETE_EVENTS_CAP))


def conf_delete_events_cap(conf: Mapping[str, str]) -> int | None:
    """The cap a session set (``SET hive.transactional.events.mem=n``), if it set one.

    >>> conf_delete_events_cap({DELETE_EVENTS_CAP_KEY: "1000"}), conf_delete_events_cap({})
    (1000, None)
    """
    value = conf.get(DELETE_EVENTS_CAP_KEY)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidSettingError(
            f"{DELETE_EVENTS_CAP_KEY}={value!r} is not a number of delete events"
        ) from None


class SortMergeDeletes:
    """A split's delete events, read in key order as the data is probed with ascending keys."""

    def __init__(
        self,
        filesystem: pafs.FileSystem,
        paths: Sequence[str],
        write_ids: ValidWriteIdList,
        total: int,
        *,
        stats: ReadStats | None = None,
        batch_rows: int | None = None,
    ) -> None:
        self._filesystem = filesystem
        self._paths = list(paths)
        self._write_ids = write_ids
        self._total = total
        self._stats = stats
        self._batch_rows = batch_rows if batch_rows is not None else MERGE_BATCH_ROWS
        self._cursors: list[_Cursor] = []
        self._last: Key | None = None
        self.peak_bytes = 0
        self.reopened = 0
        self._open()

    def __len__(self) -> int:
        return self._total

    def contains(
        self, original_write_ids: np.ndarray, buckets: np.ndarray, row_ids: np.ndarray
    ) -> np.ndarray:
        """Which of the keys are deleted; keys should ascend, within a call and across calls.
        Sorted keys are answered ``batch_rows`` at a time, so the events taken at once are
        those between two such slices, however large the data stripe."""
        owid = np.asarray(original_write_ids, np.int64)
        bucket = np.asarray(buckets, np.int32)
        rowid = np.asarray(row_ids, np.int64)
        if not _ascending(owid, bucket, rowid):
            order = np.lexsort((rowid, bucket, owid))
            hit = np.empty(len(rowid), bool)
            hit[order] = self.contains(owid[order], bucket[order], rowid[order])
            return hit
        step = self._batch_rows
        if len(rowid) <= step:
            return self._contains_sorted(owid, bucket, rowid)
        return np.concatenate(
            [
                self._contains_sorted(owid[i : i + step], bucket[i : i + step], rowid[i : i + step])
                for i in range(0, len(rowid), step)
            ]
        )

    def contains_run(self, original_write_id: int, bucket: int, row_ids: np.ndarray) -> np.ndarray:
        """:meth:`contains` for keys that share one (originalWriteId, bucketProperty)."""
        n = len(row_ids)
        return self.contains(
            np.full(n, original_write_id, np.int64), np.full(n, bucket, np.int32), row_ids
        )

    def _contains_sorted(
        self, owid: np.ndarray, bucket: np.ndarray, rowid: np.ndarray
    ) -> np.ndarray:
        if len(rowid) == 0:
            return np.zeros(0, bool)
        lo = (int(owid[0]), int(bucket[0]), int(rowid[0]))
        hi = (int(owid[-1]), int(bucket[-1]), int(rowid[-1]))
        if self._last is not None and lo <= self._last:
            self._reopen()  # the keys went back: read the delete events again from the start
        chunks = [c.take_upto(hi) for c in self._cursors]
        self._last = hi
        window = DeleteSet.from_chunks(chunks)
        held = window.nbytes + sum(c.nbytes for c in self._cursors)
        self.peak_bytes = max(self.peak_bytes, held)
        if self._stats is not None:
            self._stats.delete_events += len(window)
            self._stats.delete_set_bytes = max(self._stats.delete_set_bytes, self.peak_bytes)
        return window.contains(owid, bucket, rowid)

    def _open(self) -> None:
        exceptions = np.asarray(self._write_ids.exceptions, np.int64)
        self._cursors = [
            _Cursor(
                _event_batches(self._filesystem, p, self._batch_rows),
                self._write_ids.high_watermark,
                exceptions,
            )
            for p in self._paths
        ]

    def _reopen(self) -> None:
        self.reopened += 1
        self._last = None
        self._open()


def _event_batches(
    filesystem: pafs.FileSystem, path: str, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """A delete-delta file's key columns, ``batch_rows`` at a time (not a stripe at a time: a
    stripe of delete events can hold tens of millions)."""
    import pyarrow.dataset as ds  # imports pandas: only when a delete delta is read this way

    dataset = ds.dataset(path, format="orc", filesystem=filesystem)
    yield from dataset.to_batches(columns=list(t.ROW_VERSION_FIELDS), batch_size=batch_rows)


class _Cursor:
    """One delete file's events, consumed in key order."""

    def __init__(
        self, batches: Iterator[pa.RecordBatch], high_watermark: int, exceptions: np.ndarray
    ) -> None:
        self._batches = batches
        self._high_watermark = high_watermark
        self._exceptions = exceptions
        self._owid = np.empty(0, np.int64)
        self._bucket = np.empty(0, np.int32)
        self._rowid = np.empty(0, np.int64)
        self._pos = 0
        self._done = False

    @property
    def nbytes(self) -> int:
        return int(self._owid.nbytes + self._bucket.nbytes + self._rowid.nbytes)

    def take_upto(self, key: Key) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The events not taken yet whose key is at most ``key``."""
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        while True:
            n = len(self._rowid)
            if self._pos >= n:
                if not self._load():
                    break
                continue
            if self._key(n - 1) <= key:
                parts.append(self._slice(self._pos, n))
                self._pos = n
                continue
            end = self._upper_bound(key)
            parts.append(self._slice(self._pos, end))
            self._pos = end
            break
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int64)
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )

    def _load(self) -> bool:
        if self._done:
            return False
        batch = next(self._batches, None)
        if batch is None:
            self._done = True
            self._owid = np.empty(0, np.int64)
            self._bucket = np.empty(0, np.int32)
            self._rowid = np.empty(0, np.int64)
            self._pos = 0
            return False
        ok = valid_write_id_mask(batch.column(3).to_numpy(), self._high_watermark, self._exceptions)
        self._owid = batch.column(0).to_numpy()[ok]
        self._bucket = batch.column(1).to_numpy()[ok]
        self._rowid = batch.column(2).to_numpy()[ok]
        self._pos = 0
        return True

    def _key(self, i: int) -> Key:
        return int(self._owid[i]), int(self._bucket[i]), int(self._rowid[i])

    def _slice(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._owid[a:b], self._bucket[a:b], self._rowid[a:b]

    def _upper_bound(self, key: Key) -> int:
        lo, hi = self._pos, len(self._rowid)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._key(mid) <= key:
                lo = mid + 1
            else:
                hi = mid
        return lo


def split_deletes(
    filesystem: pafs.FileSystem,
    paths: Sequence[str],
    write_ids: ValidWriteIdList,
    stats: ReadStats,
    cap: int | None = None,
) -> DeleteLookup:
    """A split's delete events: held in memory (:func:`load_delete_set`) up to ``cap`` events
    (counted from the files' footers as they are opened), merged in key order above it
    (:class:`SortMergeDeletes`). Each file is opened once on the way to the set; past the cap,
    the events read so far (at most ``cap``) are dropped for the merge."""
    limit = delete_events_cap(cap)
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    total = 0
    for i, p in enumerate(paths):
        with OrcDataFile(filesystem, p, expect_acid=True) as f:
            total += f.num_rows
            if 0 <= limit < total:
                stats.delete_sort_merges += 1
                total += sum(_event_count(filesystem, q) for q in paths[i + 1 :])
                return SortMergeDeletes(filesystem, paths, write_ids, total, stats=stats)
            chunks += _valid_keys(f, write_ids)
    deleted = DeleteSet.from_chunks(chunks)
    stats.delete_events += len(deleted)
    stats.delete_set_bytes = max(stats.delete_set_bytes, deleted.nbytes)
    return deleted


def load_delete_set(
    filesystem: pafs.FileSystem,
    paths: Sequence[str],
    write_ids: ValidWriteIdList,
    stats: ReadStats | None = None,
) -> DeleteSet:
    """Delete events of the given files whose deleting write id is valid in the snapshot, all
    held in memory."""
    chunks = []
    for p in paths:
        with OrcDataFile(filesystem, p, expect_acid=True) as f:
            chunks += _valid_keys(f, write_ids)
    ds = DeleteSet.from_chunks(chunks)
    if stats is not None:
        stats.delete_events += len(ds)
    return ds


def _valid_keys(
    f: OrcDataFile, write_ids: ValidWriteIdList
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(originalTransaction, bucket, rowId) of the file's events valid in the snapshot, per
    stripe."""
    chunks = []
    exceptions = np.asarray(write_ids.exceptions, np.int64)
    for _, b in f.iter_stripes(t.ROW_VERSION_FIELDS):
        ok = valid_write_id_mask(b.column(3).to_numpy(), write_ids.high_watermark, exceptions)
        chunks.append(
            (b.column(0).to_numpy()[ok], b.column(1).to_numpy()[ok], b.column(2).to_numpy()[ok])
        )
    return chunks


def _event_count(filesystem: pafs.FileSystem, path: str) -> int:
    with OrcDataFile(filesystem, path, expect_acid=True) as f:
        return f.num_rows


def _ascending(owid: np.ndarray, bucket: np.ndarray, rowid: np.ndarray) -> bool:
    if len(rowid) < 2:
        return True
    d_owid = np.diff(owid)
    d_bucket = np.diff(bucket.astype(np.int64))
    d_rowid = np.diff(rowid)
    back = (d_owid < 0) | ((d_owid == 0) & ((d_bucket < 0) | ((d_bucket == 0) & (d_rowid < 0))))
    return not bool(back.any())
