"""The written-files half of :class:`~acid_platform.metastore.Metastore`: record what a write
wrote, read a table's record, forget what the cleaner deleted (see :mod:`.file_records`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acid_platform.format.file_record import RecordRow, TableRecord
from acid_platform.metastore.compaction_api import MetastorePlumbing
from acid_platform.metastore.file_records import (
    TableWrite,
    WrittenEntry,
    forget,
    identity,
    load_partitions,
    read_identity,
    record_writes,
    summary,
)
from acid_platform.metastore.partition_stats import PartitionStats, table_stats


class FileRecordApi(MetastorePlumbing):
    """What each write id wrote, on :class:`~acid_platform.metastore.Metastore`."""

    def record_written_files(
        self, txn_id: int, db: str, table: str, write_id: int, entries: Iterable[WrittenEntry]
    ) -> None:
        """Record what open txn ``txn_id`` wrote into ``db.table`` (see module docs)."""
        self.record_table_writes(txn_id, [TableWrite(db, table, write_id, tuple(entries))])

    def record_table_writes(self, txn_id: int, writes: Sequence[TableWrite]) -> None:
        """:meth:`record_written_files` of several writes (tables, write ids) of open txn
        ``txn_id``, in one metastore transaction (none when nothing was written)."""
        batch = [w for w in writes if w.entries]
        if batch:
            self._write(lambda c, now: record_writes(c, txn_id, batch))

    def recorded_files(self, db: str, table: str) -> TableRecord:
        """What committed (and open) writes recorded for ``db.table``: its recorded partitions
        and directories now (two queries), each partition's files when first asked for
        (``TableRecord.load`` fetches many in one query)."""
        partitions, directories = self._read(summary, db, table)

        def fetch(names: Sequence[str]) -> list[RecordRow]:
            return self._read(load_partitions, db, table, names)  # type: ignore[no-any-return]

        return TableRecord.lazy(partitions, directories, fetch)

    def partition_stats(
        self, db: str, table: str, partitioned: bool
    ) -> dict[str, PartitionStats | None]:
        """Every partition of ``db.table`` (``''`` alone when not ``partitioned``) and its
        statistics as the commits kept them, ``None`` where unknown: one query (see
        :mod:`.partition_stats`)."""
        return self._read(table_stats, db, table, partitioned)  # type: ignore[no-any-return]

    def forget_recorded(
        self,
        db: str,
        table: str,
        partition: str,
        directories: Iterable[str],
        file: str | None = None,
    ) -> None:
        """Forget recorded directories of a partition (the cleaner deleted them), or one
        ``file`` of one directory (``acid fsck --repair``)."""
        names = list(directories)

        def work(c: Any, now: int) -> None:
            for name in names:
                forget(c, db, table, partition, name, file)

        if names:
            self._write(work)

    def identity(self) -> str:
        """This metastore's identity (a random id made once)."""
        found = self._read(read_identity)
        if found is not None:  # (a read-only metastore answers too)
            return str(found)
        return self._write(identity)  # type: ignore[no-any-return]


__all__ = ["FileRecordApi"]
