"""The bucket files of one partition's streaming delta: rows in, insert events out.

A :class:`DeltaFiles` holds one :class:`~acid_platform.format.streaming_file.StreamingEventFile`
per bucket of ``delta_<min>_<max>`` in one partition directory (created with its
``_orc_acid_version`` on first use, named and encoded by the table's
:class:`~acid_platform.table.event_layout.EventLayout`). Rows go to their bucket by the table's
bucketing (Hive's hash, by ``bucketing_version``; ``bucket_00000`` in an unbucketed table);
row ids count from 0 per bucket and transaction, as Hive's record updater counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from acid_platform.format import encode_bucket, insert_events
from acid_platform.format.file_record import GROWING
from acid_platform.format.fs import basename
from acid_platform.format.streaming_file import StreamingEventFile
from acid_platform.metastore.file_records import WrittenEntry
from acid_platform.metastore.model import TableSpec
from acid_platform.table.event_layout import EventLayout, split_rows


@dataclass
class DeltaFiles:
    """One partition's delta of a transaction batch (see module docs)."""

    spec: TableSpec
    layout: EventLayout
    directory: str
    #: Whether the files keep ``_flush_length`` side files (a batch of several write ids).
    side_files: bool
    statement: int = -1
    files: dict[int, StreamingEventFile] = field(default_factory=dict)
    _next_row_id: dict[int, int] = field(default_factory=dict)
    _created: bool = False
    #: Rows of the open transaction, and written in all (committed) so far.
    txn_rows: int = 0

    def write(self, rows: pa.Table, write_id: int) -> None:
        """Insert events for ``rows`` (the data columns) under ``write_id``, by bucket."""
        for bucket, part in split_rows(self.spec, rows):
            first = self._next_row_id.get(bucket, 0)
            self._file(bucket).write(
                insert_events(part, write_id, encode_bucket(bucket, max(self.statement, 0)), first)
            )
            self._next_row_id[bucket] = first + part.num_rows
        self.txn_rows += rows.num_rows

    @property
    def pending_bytes(self) -> int:
        """Bytes of buffered (unflushed) events."""
        return sum(f.pending_bytes for f in self.files.values())

    def flush(self) -> None:
        """Append the buffered events' stripes (memory pressure; nothing becomes readable)."""
        for f in self.files.values():
            f.flush()

    def commit(self) -> list[str]:
        """Make the transaction's rows readable in every file; returns the files it touched."""
        touched = [f.path for b, f in self.files.items() if b in self._next_row_id]
        for f in self.files.values():
            f.commit()
        self._end_txn()
        return touched

    def abort(self) -> None:
        """Drop the transaction's rows."""
        for f in self.files.values():
            f.abort()
        self._end_txn()

    def close(self) -> list[str]:
        """End every file (whole ORC files of the committed rows, side files deleted)."""
        for f in self.files.values():
            f.close()
        return [f.path for f in self.files.values()]

    def discard(self) -> None:
        """Leave the files as they are (closing handles only)."""
        for f in self.files.values():
            f.discard()

    def written_entries(self, partition: str, touched: list[str]) -> list[WrittenEntry]:
        """What the metastore records for a commit that wrote the ``touched`` files: each with
        its committed length (ended files: their whole size) and committed rows, and the
        directory, whose own row says :data:`~acid_platform.format.file_record.GROWING` when
        its files keep growing (side files: later commits and the final tail add bytes)."""
        name = basename(self.directory)
        out = [WrittenEntry(partition, name, size=GROWING if self.side_files else 0)]
        for f in self.files.values():
            if f.path in touched:
                size = f.result.size if f.result is not None else f.committed_length
                out.append(WrittenEntry(partition, name, basename(f.path), size, f.committed_rows))
        return out

    def bytes_written(self) -> int:
        """Committed bytes across the files."""
        return sum(f.committed_length for f in self.files.values())

    def _file(self, bucket: int) -> StreamingEventFile:
        f = self.files.get(bucket)
        if f is None:
            if not self._created:
                self.layout.create_dir(self.directory)
                self._created = True
            path = self.layout.bucket_path(self.directory, bucket)
            f = self.files[bucket] = self.layout.open_streaming_file(
                path, side_file=self.side_files
            )
        return f

    def _end_txn(self) -> None:
        self._next_row_id.clear()
        self.txn_rows = 0
