"""What a mutation transaction left on disk: the event files of its write id in one table.

The client checks them against the coordinators' reports before it commits
(:func:`unreported_files`): every file in a ``delta_w_w_s`` / ``delete_delta_w_w_s`` directory
of the transaction's write id and statements must be one a report names. A coordinator that died
mid-write leaves files no report names — possibly a truncated ORC file — and committing them
would publish them.
"""

from __future__ import annotations

from collections.abc import Container

import pyarrow.fs as pafs

from acid_platform.format import list_partition_dirs, parse_bucket_file_name, resolve
from acid_platform.format.fs import basename
from acid_platform.streaming.mutate.table import AcidTable, Mutation
from acid_platform.table.event_layout import DELETE, INSERT, EventLayout


def statement_dir_names(layout: EventLayout, write_id: int) -> set[str]:
    """The directory names a mutation writes for ``write_id`` (insert and delete deltas of its
    statements)."""
    names = set()
    for mutation in Mutation:
        kinds = [
            k
            for k, skip in ((INSERT, Mutation.DELETE), (DELETE, Mutation.INSERT))
            if mutation is not skip
        ]
        for kind in kinds:
            names.add(basename(layout.statement_dir("/", kind, write_id, mutation.statement)))
    return names


def written_files(table: AcidTable, filesystem: pafs.FileSystem | None = None) -> list[str]:
    """Every bucket file in the transaction's statement directories of ``table``, sorted."""
    assert table.write_id is not None
    location = resolve(table.spec.location, filesystem)
    fs = location.filesystem
    layout = EventLayout.of(table.spec, fs)
    wanted = statement_dir_names(layout, table.write_id)
    found = []
    partitions = list_partition_dirs(location.path, list(table.spec.partition_column_names), fs)
    for _, path in partitions:
        for info in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
            if info.type != pafs.FileType.Directory or basename(info.path) not in wanted:
                continue
            for f in fs.get_file_info(pafs.FileSelector(info.path, allow_not_found=True)):
                if f.type == pafs.FileType.File and parse_bucket_file_name(basename(f.path)):
                    found.append(f.path)
    return sorted(found)


def unreported_files(
    table: AcidTable, reported: Container[str], filesystem: pafs.FileSystem | None = None
) -> list[str]:
    """The files of :func:`written_files` that no report names."""
    return [p for p in written_files(table, filesystem) if p not in reported]


__all__ = ["statement_dir_names", "unreported_files", "written_files"]
