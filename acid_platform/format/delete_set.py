"""The delete events of one bucket, held as compact sorted arrays (Hive's
ColumnizedDeleteEventRegistry): a run table of distinct (originalWriteId, bucketProperty) pairs and
one sorted ``int64`` array of row ids. About 8 bytes per event plus 20 bytes per run; lookups are
vectorised binary searches over the (sorted) keys of a data stripe.

The same structure serves as a set of ROW__IDs to *keep*: :func:`~acid_platform.format.read_acid`
with ``row_ids`` reads only those rows, skipping the stripes whose key range (Hive's
``hive.acid.key.index``) :meth:`DeleteSet.intersects` shows hold none of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np


class DeleteLookup(Protocol):
    """What reading a data file asks of a split's delete events: a :class:`DeleteSet` held in
    memory, or :class:`~.delete_merge.SortMergeDeletes` above the cap."""

    def __len__(self) -> int: ...

    def contains(
        self, original_write_ids: np.ndarray, buckets: np.ndarray, row_ids: np.ndarray
    ) -> np.ndarray: ...

    def contains_run(
        self, original_write_id: int, bucket: int, row_ids: np.ndarray
    ) -> np.ndarray: ...


class DeleteSet:
    """Deleted row identities; ``contains`` answers for a whole batch of keys at once.

    >>> ds = DeleteSet.from_arrays([1, 1, 2], [536870912] * 3, [5, 3, 0])
    >>> ds.contains(np.array([1, 1, 2]), np.array([536870912] * 3), np.array([3, 4, 0])).tolist()
    [True, False, True]
    """

    __slots__ = ("_run_owid", "_run_bucket", "_run_start", "_row_ids", "_lookup")

    def __init__(
        self,
        run_owid: np.ndarray,
        run_bucket: np.ndarray,
        run_start: np.ndarray,
        row_ids: np.ndarray,
    ):
        self._run_owid = run_owid
        self._run_bucket = run_bucket
        self._run_start = run_start  # len(runs) + 1 offsets into row_ids
        self._row_ids = row_ids
        self._lookup = {
            (int(o), int(b)): i
            for i, (o, b) in enumerate(zip(run_owid.tolist(), run_bucket.tolist(), strict=True))
        }

    @classmethod
    def empty(cls) -> DeleteSet:
        return cls(
            np.empty(0, np.int64),
            np.empty(0, np.int32),
            np.zeros(1, np.int64),
            np.empty(0, np.int64),
        )

    @classmethod
    def from_arrays(
        cls,
        original_write_ids: Iterable[int] | np.ndarray,
        buckets: Iterable[int] | np.ndarray,
        row_ids: Iterable[int] | np.ndarray,
    ) -> DeleteSet:
        """Build from unsorted, possibly duplicated keys."""
        return cls.from_chunks(
            [
                (
                    np.asarray(original_write_ids, np.int64),
                    np.asarray(buckets, np.int32),
                    np.asarray(row_ids, np.int64),
                )
            ]
        )

    @classmethod
    def from_chunks(cls, chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> DeleteSet:
        """Build from chunks of (owid, bucket, rowid) arrays, e.g. one per delete-delta stripe."""
        parts = [c for c in chunks if len(c[0])]
        if not parts:
            return cls.empty()
        owid = np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False)
        bucket = np.concatenate([p[1] for p in parts]).astype(np.int32, copy=False)
        rowid = np.concatenate([p[2] for p in parts]).astype(np.int64, copy=False)
        owid, bucket, rowid = _sorted_keys(owid, bucket, rowid)
        if len(rowid) > 1:  # the same row deleted twice (e.g. two statements) counts once
            keep = np.ones(len(rowid), bool)
            keep[1:] = (
                (owid[1:] != owid[:-1]) | (bucket[1:] != bucket[:-1]) | (rowid[1:] != rowid[:-1])
            )
            owid, bucket, rowid = owid[keep], bucket[keep], rowid[keep]
        change = np.ones(len(owid), bool)
        change[1:] = (owid[1:] != owid[:-1]) | (bucket[1:] != bucket[:-1])
        starts = np.flatnonzero(change)
        run_start = np.append(starts, len(owid)).astype(np.int64)
        return cls(owid[starts].copy(), bucket[starts].copy(), run_start, rowid.copy())

    def __len__(self) -> int:
        return len(self._row_ids)

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (the figure issue goals are stated in)."""
        return int(
            self._run_owid.nbytes
            + self._run_bucket.nbytes
            + self._run_start.nbytes
            + self._row_ids.nbytes
        )

    def intersects(self, after: tuple[int, int, int] | None, upto: tuple[int, int, int]) -> bool:
        """Whether any key ``k`` of the set has ``after < k <= upto`` (keys ordered as
        (originalWriteId, bucketProperty, rowId); ``after=None`` means no lower bound).

        >>> ds = DeleteSet.from_arrays([1, 1], [536870912] * 2, [5, 9])
        >>> ds.intersects((1, 536870912, 5), (1, 536870912, 8)), ds.intersects(None, (1, 536870912, 5))
        (False, True)
        """
        lo_run = (after[0], after[1]) if after is not None else None
        hi_run = (upto[0], upto[1])
        for i, (o, b) in enumerate(
            zip(self._run_owid.tolist(), self._run_bucket.tolist(), strict=True)
        ):
            run = (o, b)
            if (lo_run is not None and run < lo_run) or run > hi_run:
                continue
            rows = self._row_ids[self._run_start[i] : self._run_start[i + 1]]
            start = 0
            if after is not None and run == lo_run:
                start = int(np.searchsorted(rows, after[2], side="right"))
            end = int(np.searchsorted(rows, upto[2], side="right")) if run == hi_run else len(rows)
            if end > start:
                return True
        return False

    def contains(
        self, original_write_ids: np.ndarray, buckets: np.ndarray, row_ids: np.ndarray
    ) -> np.ndarray:
        """Boolean mask: which of the given keys are deleted. Keys need not be sorted, but runs of
        equal (owid, bucket) — the normal shape of a data file — make this a few searches."""
        n = len(row_ids)
        hit = np.zeros(n, bool)
        if n == 0 or len(self._row_ids) == 0:
            return hit
        owid = np.asarray(original_write_ids, np.int64)
        bucket = np.asarray(buckets, np.int32)
        rowid = np.asarray(row_ids, np.int64)
        change = np.ones(n, bool)
        change[1:] = (owid[1:] != owid[:-1]) | (bucket[1:] != bucket[:-1])
        bounds = np.append(np.flatnonzero(change), n)
        for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            self._run_hits(int(owid[s]), int(bucket[s]), rowid[s:e], hit[s:e])
        return hit

    def contains_run(self, original_write_id: int, bucket: int, row_ids: np.ndarray) -> np.ndarray:
        """:meth:`contains` for keys that all share one (originalWriteId, bucketProperty), e.g. a
        stripe whose statistics show it (only its row ids are then decoded).

        >>> ds = DeleteSet.from_arrays([1, 1, 2], [536870912] * 3, [5, 3, 0])
        >>> ds.contains_run(1, 536870912, np.array([3, 4, 5])).tolist()
        [True, False, True]
        """
        hit = np.zeros(len(row_ids), bool)
        if len(row_ids) and len(self._row_ids):
            self._run_hits(original_write_id, bucket, np.asarray(row_ids, np.int64), hit)
        return hit

    def _run_hits(self, owid: int, bucket: int, probe: np.ndarray, hit: np.ndarray) -> None:
        """Set ``hit`` where the row ids ``probe`` of one (owid, bucket) run are deleted."""
        run = self._lookup.get((owid, bucket))
        if run is None:
            return
        deleted = self._row_ids[self._run_start[run] : self._run_start[run + 1]]
        if len(probe) > 1 and bool(np.all(probe[1:] > probe[:-1])):
            # The normal case (a data file's keys ascend): search the few delete events in
            # the probes' range among the many probes, not every probe among the events.
            lo = np.searchsorted(deleted, probe[0], side="left")
            hi = np.searchsorted(deleted, probe[-1], side="right")
            events = deleted[lo:hi]
            pos = np.searchsorted(probe, events)
            hit[pos[probe[pos] == events]] = True
            return
        pos = np.searchsorted(deleted, probe)
        pos[pos == len(deleted)] = len(deleted) - 1
        hit[:] = deleted[pos] == probe


def _sorted_keys(
    owid: np.ndarray, bucket: np.ndarray, rowid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The keys in (owid, bucket, rowid) order. When the three ranges fit in 63 bits, they are
    packed into one int64 and sorted once by timsort (``kind="stable"``), which merges the
    already sorted runs (each delete delta's events are in key order) in a pass or two: 2.4 ms
    for 215 k events in 10 runs, against 6.1 ms for ``np.lexsort``'s three indirect sorts."""
    if len(rowid) < 2:
        return owid, bucket, rowid
    lows = [int(a.min()) for a in (owid, bucket, rowid)]
    bits = [
        (int(a.max()) - lo).bit_length() for a, lo in zip((owid, bucket, rowid), lows, strict=True)
    ]
    if sum(bits) > 63:
        order = np.lexsort((rowid, bucket, owid))
        return owid[order], bucket[order], rowid[order]
    o_low, b_low, r_low = lows
    _, b_bits, r_bits = bits
    key = (owid - o_low) << (b_bits + r_bits)
    key |= (bucket.astype(np.int64) - b_low) << r_bits
    key |= rowid - r_low
    key.sort(kind="stable")
    return (
        (key >> (b_bits + r_bits)) + o_low,
        (((key >> r_bits) & ((1 << b_bits) - 1)) + b_low).astype(np.int32),
        (key & ((1 << r_bits) - 1)) + r_low,
    )
