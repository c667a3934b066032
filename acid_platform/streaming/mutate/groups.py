"""Where the (partition, bucket) groups of a prepared batch begin.

A prepared batch holds each group's records together; a group begins where a partition value
or the bucket differs from the record before (NULLs compare equal to each other here, as they
name the same partition).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def group_starts(partitions: pa.Table, buckets: np.ndarray) -> np.ndarray:
    """``True`` for each record that begins a run of one (partition values, bucket);
    ``partitions`` holds the partition columns (no columns for an unpartitioned table)."""
    n = len(buckets)
    starts = np.zeros(n, bool)
    if n == 0:
        return starts
    starts[0] = True
    starts[1:] |= buckets[1:] != buckets[:-1]
    for column in partitions.columns:
        starts[1:] |= _differs(column.combine_chunks())
    return starts


def group_numbers(partitions: pa.Table, buckets: np.ndarray) -> np.ndarray:
    """The run number (0, 1, 2, …) of each record (see :func:`group_starts`)."""
    return np.cumsum(group_starts(partitions, buckets)) - 1


def partition_columns(table: pa.Table, names: Sequence[str]) -> pa.Table:
    """The columns ``names`` of ``table`` (any case), in that order, named so."""
    present = {c.lower(): c for c in table.column_names}
    return pa.table({n: table.column(present[n]) for n in names}) if names else pa.table({})


def _differs(column: pa.Array) -> np.ndarray:
    """Whether each value (from the second) differs from the one before it, NULL-aware."""
    if len(column) < 2:
        return np.zeros(0, bool)
    a, b = column.slice(1), column.slice(0, len(column) - 1)
    differ = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
    one_null = pc.xor(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    return np.asarray(differ, bool) | np.asarray(one_null, bool)


__all__ = ["group_numbers", "group_starts", "partition_columns"]
