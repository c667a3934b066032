"""A table's shape on disk, for materialization metadata the UI plots over time: partitions,
the deltas and delete deltas a reader merges, bytes, and rows.

One snapshot (a reader lease) and one listing per partition directory, judged by
:func:`~acid_platform.format.acid_state` exactly as a reader judges it. Row counts come from the
ORC footers of the visible files (no data is read): rows = insert events of the base and deltas
minus delete events of the delete deltas, which holds because every delete event names a row a
committed snapshot saw.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pyarrow.fs as pafs

from acid_platform.format import AcidState, OrcDataFile, acid_state, list_partition_dirs
from acid_platform.format.plain_files import count_plain_rows
from acid_platform.table import Table
from acid_platform.table.statement import ReadLease


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
    also the rows of those partitions."""
    spec = table.refresh()
    location = table.location
    fs = location.filesystem
    with ReadLease(table.warehouse, [spec]) as snapshots:
        snapshot = snapshots[spec.full_name]
        dirs = list_partition_dirs(location.path, spec.partition_column_names, fs)
        states = [
            (
                name,
                acid_state(
                    path,
                    snapshot.write_ids,
                    snapshot.valid_txns,
                    filesystem=fs,
                    insert_only=spec.is_insert_only,
                ),
            )
            for name, path in dirs
        ]
    deltas = sum(len(s.insert_deltas) for _, s in states)
    delete_deltas = sum(len(s.delete_deltas) for _, s in states)
    size = sum(_bytes(s) for _, s in states)
    if not count_rows:
        return TableHealth(len(dirs) if spec.partition_columns else 0, deltas, delete_deltas, size)
    plain = spec.file_format if spec.is_insert_only else None
    counts = {name: _rows(fs, s, plain) for name, s in states}
    rows = sum(c[0] - c[1] for c in counts.values())
    deleted = sum(c[1] for c in counts.values())
    wanted = set(slice_partitions) if slice_partitions is not None else None
    slice_rows = (
        None if wanted is None else sum(c[0] - c[1] for name, c in counts.items() if name in wanted)
    )
    return TableHealth(
        len(dirs) if spec.partition_columns else 0,
        deltas,
        delete_deltas,
        size,
        rows,
        deleted,
        slice_rows,
    )


def _bytes(state: AcidState) -> int:
    files = [f.size for f in state.original_files]
    dirs = ([state.base] if state.base is not None else []) + list(state.deltas)
    return sum(files) + sum(f.size for d in dirs for f in d.files)


def _rows(fs: pafs.FileSystem, state: AcidState, plain: str | None) -> tuple[int, int]:
    """(insert events, delete events) of the visible files of one partition (``plain``: an
    insert-only table's file format: its rows, no delete events)."""
    if plain is not None:
        dirs = ([state.base] if state.base is not None else []) + list(state.insert_deltas)
        paths = [f.path for f in state.original_files] + [f.path for d in dirs for f in d.files]
        return sum(count_plain_rows(fs, p, plain) for p in paths), 0
    inserted = sum(_count(fs, f.path, False) for f in state.original_files)
    dirs = ([state.base] if state.base is not None else []) + list(state.insert_deltas)
    for d in dirs:
        inserted += sum(_count(fs, f.path, not d.is_raw) for f in d.files)
    deleted = sum(_count(fs, f.path, True) for d in state.delete_deltas for f in d.files)
    return inserted, deleted


def _count(fs: pafs.FileSystem, path: str, acid: bool) -> int:
    return OrcDataFile(fs, path, expect_acid=acid).num_rows


__all__ = ["TableHealth", "table_health"]
