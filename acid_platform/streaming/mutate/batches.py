"""Reading a prepared batch: what each record does, its ROW__ID, where its groups begin.

A prepared batch (what :meth:`~.coordinator.MutatorCoordinator.mutate` takes) has a
:data:`MUTATION` column (``insert`` / ``update`` / ``delete``, or ``I`` / ``U`` / ``D``), a
``row__id`` column, the data columns and the partition columns. It holds each (partition,
bucket) group's records together: a group begins where a partition value or the bucket differs
from the record before (NULLs compare equal to each other here, as they name the same
partition).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import InvalidPartitionError, MutationError
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_FIELDS
from acid_platform.metastore.model import TableSpec
from acid_platform.table.partitions import make_partition_name
from acid_platform.table.schema import conform, partition_schema

#: The column of a prepared batch saying what each record does.
MUTATION = "mutation"
_CODES = {"i": 0, "u": 1, "d": 2}


def group_runs(
    spec: TableSpec, batch: pa.Table, buckets: np.ndarray
) -> list[tuple[int, int, str, int]]:
    """``(start, stop, partition name, bucket)`` of each run of records of one group."""
    names = list(spec.partition_column_names)
    parts = None
    if names:
        present = {c.lower() for c in batch.column_names}
        missing = [c for c in names if c not in present]
        if missing:
            raise InvalidPartitionError(
                f"table {spec.full_name}: mutation batch lacks partition column(s) {missing}"
            )
        parts = conform(
            spec.full_name,
            partition_columns(batch, names),
            partition_schema(spec),
            fill_missing=False,
        )
    keys = parts if parts is not None else pa.table({})
    starts = [int(i) for i in np.flatnonzero(group_starts(keys, buckets))]
    runs: list[tuple[int, int, str, int]] = []
    for start, stop in zip(starts, [*starts[1:], len(buckets)], strict=True):
        name = ""
        if parts is not None:
            name = make_partition_name(names, [parts.column(c)[start].as_py() for c in names])
        bucket = int(buckets[start])
        if runs and runs[-1][2:] == (name, bucket):  # NULL and '' share a partition
            runs[-1] = (runs[-1][0], stop, name, bucket)
        else:
            runs.append((start, stop, name, bucket))
    return runs


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


def mutation_codes(table: pa.Table) -> np.ndarray:
    """0 / 1 / 2 (insert / update / delete) per record of a batch."""
    if MUTATION not in table.column_names:
        raise MutationError(f"a mutation batch needs a {MUTATION!r} column (insert/update/delete)")
    column = table.column(MUTATION)
    if pa.types.is_dictionary(column.type):
        column = column.cast(pa.string())
    letters = pc.utf8_lower(pc.utf8_slice_codeunits(column.cast(pa.string()), 0, 1))
    codes = np.full(table.num_rows, -1, np.int8)
    values = letters.to_numpy(zero_copy_only=False)
    for letter, code in _CODES.items():
        codes[values == letter] = code
    bad = np.flatnonzero(codes < 0)
    if len(bad):
        raise MutationError(
            f"mutation batch row {int(bad[0])}: {column[int(bad[0])].as_py()!r} is not "
            "insert / update / delete"
        )
    return codes


def row_id_arrays(table: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ROW__IDs of a batch as arrays: original write ids, bucket properties, row ids."""
    if ROW_ID_COLUMN not in table.column_names:
        raise MutationError(f"a mutation batch needs a {ROW_ID_COLUMN!r} column")
    column = table.column(ROW_ID_COLUMN).combine_chunks()
    if column.null_count:
        raise MutationError(f"mutation batch: a record has a NULL {ROW_ID_COLUMN}")
    arrays = [pc.struct_field(column, f) for f in ROW_ID_FIELDS]
    owid, bprop, rowid = (np.asarray(a.to_numpy(zero_copy_only=False)) for a in arrays)
    return owid.astype(np.int64), bprop.astype(np.int32), rowid.astype(np.int64)


def _differs(column: pa.Array) -> np.ndarray:
    """Whether each value (from the second) differs from the one before it, NULL-aware."""
    if len(column) < 2:
        return np.zeros(0, bool)
    a, b = column.slice(1), column.slice(0, len(column) - 1)
    differ = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
    one_null = pc.xor(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    return np.asarray(differ, bool) | np.asarray(one_null, bool)


__all__ = [
    "MUTATION",
    "group_numbers",
    "group_runs",
    "group_starts",
    "mutation_codes",
    "partition_columns",
    "row_id_arrays",
]
