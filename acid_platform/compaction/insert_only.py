"""Compaction of an insert-only (MM) table's partition: its plain data files, no events.

Hive 4 compacts MM tables with queries (``MmMajorQueryCompactor``, ``MmMinorQueryCompactor``):
the visible rows are copied into new plain files of the table's format. Here the inputs are
grouped by the bucket their names give (``000001_0`` → 1; one group for an unbucketed table)
and each group becomes one file ``NNNNNN_0`` of the output directory
(:mod:`.rewrite` names and plans it).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.compaction.hooks import checkpoint
from acid_platform.format import (
    AcidState,
    ReadSplit,
    ValidWriteIdList,
    WrittenFile,
    plan_splits,
    read_split,
)
from acid_platform.table.event_layout import EventLayout


def plain_bucket_splits(
    state: AcidState, read_ids: ValidWriteIdList, file_format: str
) -> list[ReadSplit]:
    """The selected plain files of ``state``, one split per bucket, in bucket order."""
    by_bucket: dict[int, list[ReadSplit]] = defaultdict(list)
    for s in plan_splits(state, read_ids, plain_format=file_format):
        by_bucket[s.bucket_id].append(s)
    return [
        ReadSplit(
            bucket,
            tuple(ref for s in parts for ref in s.data_files),
            (),
            None,
            sum(s.size for s in parts),
        )
        for bucket, parts in sorted(by_bucket.items())
    ]


def write_plain_bucket(
    layout: EventLayout,
    output: str,
    split: ReadSplit,
    fs: pafs.FileSystem,
    read_ids: ValidWriteIdList,
) -> WrittenFile | None:
    """Copy the rows of ``split`` into one plain file at ``output``; ``None`` (no file) when
    there is no row. The bucket's rows are gathered in memory, as the plain ORC writer holds
    its file."""
    schema = layout.row_schema
    batches = list(read_split(split, fs, read_ids, schema=schema))
    rows = pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()
    if rows.num_rows == 0:
        return None
    size = layout.write_plain(output, rows)
    checkpoint("worker.bucket_written")
    n = rows.num_rows
    return WrittenFile(output, n, n, 0, 0, size, "")


__all__ = ["plain_bucket_splits", "write_plain_bucket"]
