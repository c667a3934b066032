"""Hive 4's ``'rebalance'`` compaction: a partition of an unbucketed full-ACID table rewritten
into one base whose rows are spread evenly over its (implicit) bucket files.

As Hive's ``CompactionQueryBuilderForRebalance`` does it: the surviving rows (deletes applied,
as a major compaction reads them) are numbered ``0 … n-1`` in ROW__ID order, or in the
``ORDER BY`` order when one is given; row ``i`` gets ``rowId = i`` and goes to bucket
``i DIV ceil(n / buckets)``, where ``buckets`` is ``CLUSTERED INTO n BUCKETS`` or, without it,
the number of bucket ids the partition has now. Without ``ORDER BY`` each row keeps its write id;
with it every row gets the highest one (Hive: "in case of reordering the data the writeids
cannot be kept"). ``ORDER BY`` sorts NULLs first ascending and last descending, as Hive does.

New ROW__IDs are safe only if no writer holds old ones: the worker takes an ``EXCL_WRITE`` lock
on the table or partition in the compactor's txn before its snapshot (Hive's rebalance takes
an exclusive write lock too), and the output is a ``base_N_v<T>`` like a major compaction's.
The rows of the partition are sorted in this process's memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.compaction.rewrite import (
    RewritePlan,
    RewriteResult,
    create_output_dirs,
    finish,
    reader_write_ids,
)
from acid_platform.format import WrittenFile, encode_bucket, read_split
from acid_platform.format import types as t


def rebalance(
    plan: RewritePlan, order_by: Sequence[tuple[str, bool]], number_of_buckets: int | None
) -> RewriteResult:
    """Write the rebalanced base of ``plan`` (a major plan of the partition)."""
    request = plan.request
    fs = plan.filesystem
    read_ids = reader_write_ids(request.write_ids)
    schema = request.row_schema
    batches: list[pa.RecordBatch] = []
    for task in plan.tasks:
        batches.extend(read_split(task.split, fs, read_ids, with_row_id=True, schema=schema))
    buckets = number_of_buckets or max(len({task.split.bucket_id for task in plan.tasks}), 1)
    create_output_dirs(plan)
    (out_dir,) = plan.output_dirs
    rows = pa.Table.from_batches(batches) if batches else None
    if rows is None or rows.num_rows == 0:
        return finish(plan, [])
    row_id = rows.column(t.ROW_ID_COLUMN).combine_chunks()
    write_ids = row_id.field(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if order_by:
        order = _ordered(rows, order_by)
        owid = np.full(rows.num_rows, int(write_ids.max()), np.int64)
    else:
        keys = pa.table({"w": row_id.field(0), "b": row_id.field(1), "r": row_id.field(2)})
        order = pc.sort_indices(keys, [("w", "ascending"), ("b", "ascending"), ("r", "ascending")])
        owid = write_ids[order.to_numpy()]
    data = rows.drop_columns([t.ROW_ID_COLUMN]).take(order)
    n = rows.num_rows
    per = math.ceil(n / buckets)
    files: list[WrittenFile] = []
    layout = plan.layout
    for bucket in range(buckets):
        lo, hi = bucket * per, min(n, (bucket + 1) * per)
        if lo >= hi:
            break
        part = data.slice(lo, hi - lo)
        events = _events(part, schema, owid[lo:hi], encode_bucket(bucket), np.arange(lo, hi))
        with layout.open_file(layout.bucket_path(out_dir, bucket)) as writer:
            writer.write(events)
        if writer.result is not None:
            files.append(writer.result)
    return finish(plan, files)


def parse_order_by(text: str | None) -> list[tuple[str, bool]]:
    """The ``(column, descending)`` pairs of an entry's stored ``ORDER BY`` (``k DESC,v ASC``).

    >>> parse_order_by("k DESC,v ASC")
    [('k', True), ('v', False)]
    """
    if not text:
        return []
    pairs = [item.split() for item in text.split(",")]
    return [(p[0], len(p) > 1 and p[1].upper() == "DESC") for p in pairs]


def _ordered(rows: pa.Table, order_by: Sequence[tuple[str, bool]]) -> pa.Array:
    """Row positions in ``ORDER BY`` order: NULLs first ascending, last descending (Hive)."""
    names = {name.lower(): name for name in rows.column_names}
    keys: dict[str, pa.Array] = {}
    sort: list[tuple[str, str]] = []
    for i, (column, descending) in enumerate(order_by):
        values = rows.column(names[column.lower()]).combine_chunks()
        keys[f"n{i}"] = pc.is_null(values)
        keys[f"v{i}"] = values
        sort.append((f"n{i}", "ascending" if descending else "descending"))
        sort.append((f"v{i}", "descending" if descending else "ascending"))
    keys["pos"] = pa.array(np.arange(rows.num_rows))
    sort.append(("pos", "ascending"))  # stable: ties keep the ROW__ID order they came in
    return pc.sort_indices(pa.table(keys), sort)


def _events(
    data: pa.Table,
    schema: pa.Schema,
    write_ids: np.ndarray,
    bucket_property: int,
    row_ids: np.ndarray,
) -> pa.Table:
    n = data.num_rows
    columns = [data.column(f.name).combine_chunks() for f in schema]
    row = (
        pa.StructArray.from_arrays(columns, fields=list(schema))
        if columns
        else pa.array([{}] * n, pa.struct([]))
    )
    owid = pa.array(write_ids, pa.int64())
    return pa.Table.from_arrays(
        [
            pa.array(np.full(n, t.INSERT_OPERATION, np.int32)),
            owid,
            pa.array(np.full(n, bucket_property, np.int32)),
            pa.array(row_ids.astype(np.int64)),
            owid,
            row,
        ],
        names=[*t.EVENT_KEY_COLUMNS, t.ROW],
    )


__all__ = ["parse_order_by", "rebalance"]
