"""A table's shape on disk, for materialization metadata the UI plots over time: partitions,
the deltas and delete deltas a reader merges, bytes, and rows.

The sums of the per-partition layout of the table's health report
(:func:`acid_platform.compaction.health.partition_layouts`: one snapshot under a reader lease
and one listing per partition directory, judged by :func:`~acid_platform.format.acid_state`
exactly as a reader judges it). Row counts come from the
ORC footers of the visible files (no data is read): rows = insert events of the base and deltas
minus delete events of the delete deltas, which holds because every delete event names a row a
committed snapshot saw.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from acid_platform.compaction.health import partition_layouts
from acid_platform.table import Table


@dataclass(frozen=True)
class TableHealth:
    """What a snapshot of a table reads (see module docs). Row counts are ``None`` when they
    were not counted."""

    partitions: int
    deltas: int
    delete_deltas: int
    bytes: int
    rows: int | None = None
    deleted_rows: int | None = None
    #: Rows of the partitions asked for (``slice_partitions`` of :func:`table_health`).
    slice_rows: int | None = None

    @property
    def delete_ratio(self) -> float | None:
        """Delete events per insert event still merged on read (0 right after a major
        compaction; what compaction would reclaim)."""
        if self.rows is None or self.deleted_rows is None:
            return None
        inserted = self.rows + self.deleted_rows
        return self.deleted_rows / inserted if inserted else 0.0


def table_health(
    table: Table, slice_partitions: Collection[str] | None = None, count_rows: bool = True
) -> TableHealth:
    """The health of ``table`` in a fresh snapshot; with ``slice_partitions`` (partition names)
    also the rows of those partitions. The sums of
    :func:`~acid_platform.compaction.health.partition_layouts`, the per-partition layout of the
    table's health report."""
    layouts = partition_layouts(table, count_rows=count_rows)
    partitions = len(layouts) if table.spec.partition_columns else 0
    deltas = sum(p.deltas for p in layouts)
    delete_deltas = sum(p.delete_deltas for p in layouts)
    size = sum(p.bytes for p in layouts)
    if not count_rows:
        return TableHealth(partitions, deltas, delete_deltas, size)
    rows = sum(p.live_rows or 0 for p in layouts)
    deleted = sum(p.delete_events or 0 for p in layouts)
    wanted = set(slice_partitions) if slice_partitions is not None else None
    slice_rows = (
        None
        if wanted is None
        else sum(p.live_rows or 0 for p in layouts if (p.partition or "") in wanted)
    )
    return TableHealth(partitions, deltas, delete_deltas, size, rows, deleted, slice_rows)


__all__ = ["TableHealth", "table_health"]
