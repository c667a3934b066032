"""One bucket file of a streaming delta (``delta_<min>_<max>/bucket_N``), written transaction by
transaction, as Hive's streaming ``OrcRecordUpdater`` writes it.

The file's ``bucket_N_flush_length`` side file is created first, holding one 0 (nothing
committed: Hive's writer does the same before the file's first byte). Events of the open
transaction are buffered as Arrow; :meth:`StreamingEventFile.flush` (under memory pressure)
encodes them and appends their stripes; :meth:`~StreamingEventFile.commit` appends what is
left and a tail that makes the file, cut there, a complete ORC file of every committed
transaction (:mod:`.orc_append`), then appends that length to the side file. Readers read the
file only up to the side file's last length, and each row only if its write id is valid in their
snapshot. :meth:`~StreamingEventFile.abort` drops the transaction's rows (stripes already
appended stay as bytes no tail points at); :meth:`~StreamingEventFile.close` ends the file with
a tail and deletes the side file (a file with nothing committed keeps its side file, saying 0).

Each tail carries Hive's footer metadata for the committed rows: ``hive.acid.key.index`` (the
last key of every committed stripe), ``hive.acid.stats`` and ``hive.acid.version``.

Without a side file (``side_file=False``: a batch of one transaction, or an unmanaged write)
the file is readable only once closed, which must happen before its transaction commits.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acid_platform.errors import AcidFormatError
from acid_platform.format import types as t
from acid_platform.format.fs import create_new, resolve
from acid_platform.format.names import flush_length_file_name
from acid_platform.format.orc_append import (
    AppendableOrcFile,
    AppendedChunk,
    encode_chunk,
    with_types,
)
from acid_platform.format.orc_footer import char_columns
from acid_platform.format.wide_timestamps import conform_all
from acid_platform.format.writer import (
    ACID_STATS_KEY,
    ACID_VERSION,
    ACID_VERSION_KEY,
    DEFAULT_COMPRESSION,
    DEFAULT_STRIPE_SIZE,
    KEY_INDEX_KEY,
    WrittenFile,
    check_event_order,
    pyarrow_codec,
)


@dataclass
class _Flushed:
    """A chunk of the open transaction already in the file, with its stripes' last keys and
    event counts (insert, update, delete)."""

    appended: AppendedChunk
    keys: list[str]
    counts: tuple[int, int, int]


class StreamingEventFile:
    """One bucket file receiving the events of a transaction batch (see module docs)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        row_schema: pa.Schema,
        *,
        filesystem: pafs.FileSystem | None = None,
        compression: str = DEFAULT_COMPRESSION,
        stripe_size: int = DEFAULT_STRIPE_SIZE,
        side_file: bool = True,
    ) -> None:
        loc = resolve(path, filesystem)
        self.filesystem, self.path = loc.filesystem, loc.path
        self._codec = pyarrow_codec(self.path, compression)
        self.schema = t.event_schema(row_schema)
        self._stripe_size = stripe_size
        self.side_file = flush_length_file_name(self.path) if side_file else None
        self._lengths: pa.NativeFile | None = None
        if self.side_file is not None:
            # before the data file exists: a reader never sees the file without its side file
            self._lengths = create_new(self.filesystem, self.side_file)
            self._lengths.write((0).to_bytes(8, "big"))
            self._lengths.flush()
        # char/varchar columns: pyarrow writes them as string; every chunk names them as Hive
        self._char_types = char_columns(self.schema)
        template = with_types(
            encode_chunk(self.schema.empty_table(), self._codec, stripe_size), self._char_types
        )
        self._file = AppendableOrcFile(self.filesystem, self.path, template)
        self._pending: list[pa.Table] = []
        self.pending_bytes = 0
        self._flushed: list[_Flushed] = []
        self._keys: list[str] = []
        self._counts = [0, 0, 0]
        self._last_key: tuple[int, int, int] | None = None
        self._txn_rows = 0
        self.result: WrittenFile | None = None

    # ------------------------------------------------------------------ public
    @property
    def committed_length(self) -> int:
        """The length at the last commit (what the side file says; 0 before any)."""
        return self._file.committed_length

    @property
    def committed_rows(self) -> int:
        return self._file.rows

    def write(self, events: pa.Table) -> None:
        """Buffer events of the open transaction (event schema, sorted by key)."""
        if self.result is not None:
            raise AcidFormatError(f"{self.path}: write after close")
        if events.num_rows == 0:
            return
        owid = events.column(t.ORIGINAL_TRANSACTION).to_numpy()
        bucket = events.column(t.BUCKET).to_numpy()
        rowid = events.column(t.ROW_ID).to_numpy()
        self._last_key = check_event_order(
            self.path, self._file.rows + self._txn_rows, self._last_key, owid, bucket, rowid
        )
        self._pending.append(events)
        self._txn_rows += events.num_rows
        self.pending_bytes += events.nbytes

    def flush(self) -> None:
        """Encode the buffered events and append their stripes (not yet in any tail)."""
        if not self._pending:
            return
        pending = list(self._pending)
        self._pending.clear()
        self.pending_bytes = 0
        try:
            # timestamps beyond the nanosecond range stay at microseconds (.wide_timestamps)
            events = conform_all(pending, self.schema, self.path).combine_chunks()
            events = t.conform_chars(events, events.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise AcidFormatError(f"{self.path}: events do not fit {self.schema}: {exc}") from exc
        chunk = with_types(encode_chunk(events, self._codec, self._stripe_size), self._char_types)
        ends = np.cumsum([s.rows for s in chunk.stripes]) - 1
        owid, bucket, rowid = (events.column(c).to_numpy() for c in t.ROW_ID_EVENT_FIELDS)
        ops = events.column(t.OPERATION).to_numpy()
        self._flushed.append(
            _Flushed(
                self._file.append(chunk),
                [f"{owid[i]},{bucket[i]},{rowid[i]};" for i in ends],
                (
                    int(np.count_nonzero(ops == t.INSERT_OPERATION)),
                    int(np.count_nonzero(ops == 1)),
                    int(np.count_nonzero(ops == t.DELETE_OPERATION)),
                ),
            )
        )

    def commit(self) -> int:
        """Make the open transaction's events readable: append them and a tail describing every
        committed stripe, then append the new length to the side file. Returns the length."""
        self.flush()
        if self._flushed:
            for f in self._flushed:
                self._keys += f.keys
                self._counts = [a + b for a, b in zip(self._counts, f.counts, strict=True)]
            self._file.commit([f.appended for f in self._flushed], self._metadata())
            self._flushed.clear()
            if self._lengths is not None:
                self._lengths.write(self._file.committed_length.to_bytes(8, "big"))
                self._lengths.flush()
        self._txn_rows = 0
        return self._file.committed_length

    def abort(self) -> None:
        """Drop the open transaction's events (appended stripes stay, in no tail)."""
        self._pending.clear()
        self.pending_bytes = 0
        self._flushed.clear()
        self._txn_rows = 0
        self._last_key = None  # the next transaction has a higher write id: keys still ascend

    def close(self) -> WrittenFile:
        """Drop what is uncommitted, end the file with a tail of the committed stripes and
        delete the side file (after the tail: a reader that still finds the side file reads a
        prefix that is whole, one that does not reads the whole file)."""
        if self.result is not None:
            return self.result
        self.abort()
        if self._lengths is not None and self._file.rows == 0:
            # Nothing was ever committed here (its transactions aborted): the file stays as it
            # is, with its side file saying 0, so every reader skips it and no record is needed
            # for it (see ``file_record``); the cleaner removes it with its delta.
            self.discard()
            self.result = WrittenFile(self.path, 0, 0, 0, 0, 0, "")
            return self.result
        size = self._file.close(self._metadata())
        if self._lengths is not None:
            self._lengths.close()
            with contextlib.suppress(FileNotFoundError):
                self.filesystem.delete_file(self.side_file)  # type: ignore[arg-type]
        self.result = WrittenFile(
            path=self.path,
            rows=self._file.rows,
            inserts=self._counts[0],
            updates=self._counts[1],
            deletes=self._counts[2],
            size=size,
            key_index="".join(self._keys),
        )
        return self.result

    def discard(self) -> None:
        """Stop writing, leaving the files as they are (a crashed writer leaves them so)."""
        self._file.discard()
        if self._lengths is not None and not self._lengths.closed:
            self._lengths.close()

    # ------------------------------------------------------------------ helpers
    def _metadata(self) -> list[tuple[str, bytes]]:
        stats = f"{self._counts[0]},{self._counts[1]},{self._counts[2]}"
        return [
            (KEY_INDEX_KEY, "".join(self._keys).encode()),
            (ACID_STATS_KEY, stats.encode()),
            (ACID_VERSION_KEY, ACID_VERSION.encode()),
        ]
