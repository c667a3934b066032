"""A table's shape, for materialization metadata the UI plots over time: partitions, the deltas
and delete deltas a reader merges, bytes, and rows.

Read from the statistics the commits keep per partition
(:mod:`acid_platform.metastore.partition_stats`: Hive's ``numRows`` / ``numFiles`` /
``totalSize`` plus the deltas and delete events a reader merges), one metastore query for the
whole table: a write into one partition of a table of a thousand costs the metadata what it
costs on a table of one. Only partitions whose statistics are unknown (registered before the
statistics existed, compacted from input nobody recorded) are counted as before: the layout
of the table's health report for those partitions alone
(:func:`acid_platform.compaction.health.partition_layouts`: one listing per partition directory
under a reader lease, judged by :func:`~acid_platform.format.acid_state`, rows from the ORC
footers of the visible files: insert events of the base and deltas minus delete events of the
delete deltas, which holds because every delete event names a row a committed snapshot saw).
The partitions are the catalog's (``0`` for an unpartitioned table).
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
    """The health of ``table`` now (see the module docs); with ``slice_partitions``
    (partition names) also the rows of those partitions."""
    spec = table.spec
    partitioned = bool(spec.partition_columns)
    kept = table.warehouse.metastore.partition_stats(spec.db, spec.name, partitioned)
    unknown = [name for name, stats in kept.items() if stats is None]
    shapes = [
        _Shape(name, s.deltas, s.delete_deltas, s.total_size, s.num_rows, s.delete_events)
        for name, s in kept.items()
        if s is not None
    ]
    if unknown:
        shapes += [
            _Shape(
                p.partition or "", p.deltas, p.delete_deltas, p.bytes, p.live_rows, p.delete_events
            )
            for p in partition_layouts(table, count_rows=count_rows, partitions=unknown)
        ]
    partitions = len(kept) if partitioned else 0
    deltas = sum(p.deltas for p in shapes)
    delete_deltas = sum(p.delete_deltas for p in shapes)
    size = sum(p.bytes for p in shapes)
    if not count_rows:
        return TableHealth(partitions, deltas, delete_deltas, size)
    rows = sum(p.rows or 0 for p in shapes)
    deleted = sum(p.delete_events or 0 for p in shapes)
    wanted = set(slice_partitions) if slice_partitions is not None else None
    slice_rows = (
        None if wanted is None else sum(p.rows or 0 for p in shapes if p.partition in wanted)
    )
    return TableHealth(partitions, deltas, delete_deltas, size, rows, deleted, slice_rows)


@dataclass(frozen=True)
class _Shape:
    """One partition's numbers, kept or counted."""

    partition: str
    deltas: int
    delete_deltas: int
    bytes: int
    rows: int | None
    delete_events: int | None


__all__ = ["TableHealth", "table_health"]
