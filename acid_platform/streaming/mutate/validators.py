"""The validators that make a coordinator fail fast on a badly prepared change set (Hive's
``GroupingValidator`` and ``SequenceValidator``, and the bucket check of ``MutatorCoordinator``).

The client prepares the change set; the API only checks it:

* **grouping** — records come grouped by (partition, bucket): once a coordinator has left a
  group it never sees it again (:class:`GroupingValidator`, :class:`GroupRevisitedError`);
* **sequence** — within a group, updates and deletes come in strictly increasing ROW__ID order,
  (originalWriteId, bucket property, rowId) — the order of the delete events they become; Hive 2
  compared (originalWriteId, rowId), Hive 3 added the statement id to the bucket property, so
  it takes part here (:class:`SequenceValidator`, :class:`RecordSequenceError`). Inserts carry
  no ROW__ID of their own and are not sequenced;
* **bucket** — an insert's or update's ROW__ID names the bucket its bucketing columns hash to
  (:class:`~.buckets.BucketIdResolver`, :class:`BucketIdError`).

Each check has a per-record form and a vectorised form over a run of records of one group.

>>> v = SequenceValidator()
>>> v.check(RecordIdentifier(1, 536870912, 0)); v.check(RecordIdentifier(1, 536870912, 5))
>>> v.check(RecordIdentifier(1, 536870912, 5))
Traceback (most recent call last):
...
acid_platform.errors.RecordSequenceError: records out of ROW__ID order: {"writeid":1,"bucketid":536870912,"rowid":5} after {"writeid":1,"bucketid":536870912,"rowid":5}; sort each (partition, bucket) group by ROW__ID
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from acid_platform.errors import GroupRevisitedError, RecordSequenceError
from acid_platform.format import ROW_ID_FIELDS, decode_bucket, row_id_text


class RecordIdentifier(NamedTuple):
    """A row's ROW__ID (Hive's ``RecordIdentifier``): the write id that created the row
    version, its bucket property (bucket id and statement id, BucketCodec V1) and its row id."""

    write_id: int
    bucket_property: int
    row_id: int

    @property
    def bucket(self) -> int:
        """The bucket (writer) id packed in the bucket property."""
        return decode_bucket(self.bucket_property)[0]

    @classmethod
    def of(cls, value: Any) -> RecordIdentifier:
        """From a ``RecordIdentifier``, a ``(writeid, bucketid, rowid)`` tuple or the
        ``{"writeid", "bucketid", "rowid"}`` dict a scan ``with_row_id`` returns."""
        if isinstance(value, RecordIdentifier):
            return value
        if isinstance(value, Mapping):
            return cls(*(int(value[f]) for f in ROW_ID_FIELDS))
        if isinstance(value, tuple | list) and len(value) == 3:
            return cls(int(value[0]), int(value[1]), int(value[2]))
        raise ValueError(
            f"{value!r} is not a ROW__ID: give a RecordIdentifier, a (writeid, bucketid, rowid) "
            "tuple or a {'writeid', 'bucketid', 'rowid'} dict"
        )

    def __str__(self) -> str:
        return row_id_text(*self)


class GroupingValidator:
    """Records arrive grouped by (partition, bucket): a group left behind is never revisited."""

    def __init__(self) -> None:
        self._visited: set[tuple[str, int]] = set()
        self.current: tuple[str, int] | None = None

    def enter(self, partition: str, bucket: int) -> bool:
        """Note a record of ``(partition, bucket)``; returns whether it starts a new group.
        Raises :class:`GroupRevisitedError` for a group seen before another one."""
        group = (partition, bucket)
        if group == self.current:
            return False
        if group in self._visited:
            where = f"partition {partition!r}" if partition else "the table"
            raise GroupRevisitedError(
                f"group ({where}, bucket {bucket}) was revisited after group "
                f"{self._describe(self.current)}; group the change set by partition, then bucket"
            )
        self._visited.add(group)
        self.current = group
        return True

    @property
    def groups(self) -> int:
        """How many groups were entered."""
        return len(self._visited)

    @staticmethod
    def _describe(group: tuple[str, int] | None) -> str:
        if group is None:
            return "(none)"
        partition, bucket = group
        return f"({partition!r}, bucket {bucket})" if partition else f"(bucket {bucket})"


class SequenceValidator:
    """Updates and deletes of one group arrive in strictly increasing ROW__ID order."""

    def __init__(self) -> None:
        self.last: RecordIdentifier | None = None

    def reset(self) -> None:
        """Start a new group."""
        self.last = None

    def check(self, row_id: RecordIdentifier) -> None:
        """Accept ``row_id`` or raise :class:`RecordSequenceError`."""
        if self.last is not None and tuple(row_id) <= tuple(self.last):
            raise _out_of_order(row_id, self.last)
        self.last = row_id

    def check_run(self, write_ids: np.ndarray, buckets: np.ndarray, row_ids: np.ndarray) -> None:
        """:meth:`check` for each ROW__ID of a run, in order (vectorised)."""
        if len(write_ids) == 0:
            return
        first = RecordIdentifier(int(write_ids[0]), int(buckets[0]), int(row_ids[0]))
        if self.last is not None and tuple(first) <= tuple(self.last):
            raise _out_of_order(first, self.last)
        if len(write_ids) > 1:
            d_w = np.diff(write_ids.astype(np.int64))
            d_b = np.diff(buckets.astype(np.int64))
            d_r = np.diff(row_ids.astype(np.int64))
            bad = (d_w < 0) | ((d_w == 0) & ((d_b < 0) | ((d_b == 0) & (d_r <= 0))))
            if bad.any():
                i = int(np.flatnonzero(bad)[0]) + 1
                raise _out_of_order(
                    RecordIdentifier(int(write_ids[i]), int(buckets[i]), int(row_ids[i])),
                    RecordIdentifier(
                        int(write_ids[i - 1]), int(buckets[i - 1]), int(row_ids[i - 1])
                    ),
                )
        self.last = RecordIdentifier(int(write_ids[-1]), int(buckets[-1]), int(row_ids[-1]))


def _out_of_order(row_id: RecordIdentifier, last: RecordIdentifier) -> RecordSequenceError:
    return RecordSequenceError(
        f"records out of ROW__ID order: {row_id} after {last}; sort each (partition, bucket) "
        "group by ROW__ID"
    )


__all__ = ["GroupingValidator", "RecordIdentifier", "SequenceValidator"]
