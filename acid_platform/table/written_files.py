"""What a write statement wrote, as the metastore records it at commit (issue 13, item 6).

:func:`written_entries` turns a statement's :class:`~.writes.WriteMetrics` (directories and
files with sizes and row counts, whichever engine wrote them) into
:class:`~acid_platform.metastore.file_records.WrittenEntry` rows relative to the table's
partition directories; :func:`record_written` stores them with the writing transaction, before
its commit. Readers get the record with their snapshot (``Snapshot.files``) and check their
listing against it (:mod:`acid_platform.format.file_record`).
"""

from __future__ import annotations

from collections.abc import Iterable

from acid_platform.errors import AcidFormatError
from acid_platform.format.fs import basename, parent
from acid_platform.metastore import Metastore, TableSpec
from acid_platform.metastore.file_records import WrittenEntry
from acid_platform.table.writes import WriteMetrics


def written_entries(table_root: str, metrics: WriteMetrics) -> list[WrittenEntry]:
    """The directories and bucket files of ``metrics``, by partition, relative to
    ``table_root`` (the table location's path)."""
    out = [
        WrittenEntry(_partition_of(table_root, d), basename(d))
        for d in dict.fromkeys([*metrics.dirs, *(parent(f.path) for f in metrics.infos)])
    ]
    for f in metrics.infos:
        directory = parent(f.path)
        out.append(
            WrittenEntry(
                _partition_of(table_root, directory),
                basename(directory),
                basename(f.path),
                f.bytes,
                f.rows,
            )
        )
    return out


def record_written(
    metastore: Metastore,
    txn_id: int,
    spec: TableSpec,
    write_id: int,
    table_root: str,
    metrics: Iterable[WriteMetrics],
) -> None:
    """Record what ``metrics`` wrote into ``spec`` as written by ``txn_id`` / ``write_id``."""
    entries = [e for m in metrics for e in written_entries(table_root, m)]
    metastore.record_written_files(txn_id, spec.db, spec.name, write_id, entries)


def _partition_of(table_root: str, directory: str) -> str:
    root = table_root.rstrip("/") + "/"
    holder = parent(directory)
    if holder.rstrip("/") == table_root.rstrip("/"):
        return ""
    if not holder.startswith(root):
        raise AcidFormatError(f"{directory} is not inside the table directory {table_root}")
    return holder[len(root) :]


__all__ = ["record_written", "written_entries"]
