"""Load landing files into an ACID table, each exactly once, through transaction batches.

:func:`load_files` streams the files not yet committed into the table through one Ingest V2
:class:`~acid_platform.streaming.StreamingConnection`: ONE transaction per file, the files'
transactions opened together as a transaction batch (``batch_size`` at a time), so the batch
writes one ``delta_<minW>_<maxW>`` per partition — not one delta per file. Each file's
identity is recorded as a source of its own transaction
(:meth:`~acid_platform.streaming.StreamingConnection.record_sources`) before its rows are
written, and becomes durable exactly when they do (the commit publishes it). So:

* a re-run (the same files, unchanged) finds them committed and loads nothing;
* a file that does not parse, or does not fit the table, aborts only its own transaction:
  nothing of it is visible, nothing recorded, and the result names it
  (:attr:`LoadResult.failed`); the other files load;
* of two loads of the same file at once, one commits its rows; the other's commit finds the
  file committed and its transaction is aborted (nothing it wrote is visible): the file is
  reported as committed already (:attr:`LoadResult.skipped`);
* an insert-only table (which Ingest V2 cannot write, as in Hive) takes each file in one
  INSERT statement of its own, with the same guarantees and no batching;
* a loader killed half-way leaves the files it committed loaded and the rest invisible (their
  transactions open until the metastore's time-out aborts them); a re-run loads the rest.

>>> # result = load_files(wh, "sales.returns", ["/landing/2024-01-01.csv"])
>>> # result.rows, result.write_ids, [f.file.uri for f in result.failed]
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from acid_platform.compaction.hooks import checkpoint
from acid_platform.errors import (
    DuplicateSourceError,
    InvalidNameError,
    InvalidPartitionError,
    LandingFileError,
    NotNullViolationError,
    SchemaMismatchError,
    StreamingError,
)
from acid_platform.metastore.model import CommittedSource
from acid_platform.streaming.connection import StreamingConnection
from acid_platform.streaming.landing.landing import LandingFile, stat_landing
from acid_platform.streaming.landing.readers import (
    DEFAULT_MAX_RECORD_BYTES,
    MAX_RECORD_SETTING,
    FileFormat,
    check_columns,
    read_bytes,
    read_landing,
    resolve_format,
    short,
)
from acid_platform.streaming.record_writers import ArrowRecordWriter
from acid_platform.table import Table
from acid_platform.table.schema import conform
from acid_platform.table.statement import StatementMetrics
from acid_platform.table.warehouse import TableWarehouse

#: Transactions per transaction batch of a load (Hive's streaming clients use 10-1000).
DEFAULT_BATCH_SIZE = 100
#: What a landing file's own content raises: its transaction is aborted, the load goes on.
BAD_FILE = (
    LandingFileError,
    SchemaMismatchError,
    NotNullViolationError,
    InvalidNameError,  # a partition value that cannot be a partition's name
    InvalidPartitionError,
)


@dataclass(frozen=True)
class FileLoad:
    """One file loaded: its transaction's metrics (txn id, write id, rows, directories)."""

    file: LandingFile
    metrics: StatementMetrics


@dataclass(frozen=True)
class FailedFile:
    """One file that did not load (its transaction aborted, nothing of it visible)."""

    file: LandingFile
    error: str  # the exception's class name
    message: str

    def __str__(self) -> str:
        return f"{self.file.uri}: {self.error}: {self.message}"


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_files` did: the files it loaded (one transaction each), those it
    skipped because they were committed into the table already, and those that failed."""

    table: str
    loads: tuple[FileLoad, ...]
    skipped: tuple[CommittedSource, ...]
    failed: tuple[FailedFile, ...] = ()

    @property
    def loaded(self) -> tuple[LandingFile, ...]:
        return tuple(f.file for f in self.loads)

    @property
    def rows(self) -> int:
        """Rows inserted (0 when nothing was loaded)."""
        return sum(f.metrics.rows_inserted for f in self.loads)

    @property
    def txn_ids(self) -> tuple[int, ...]:
        """The transactions that loaded the files, in order."""
        return tuple(f.metrics.txn_id for f in self.loads)

    @property
    def write_ids(self) -> tuple[int, ...]:
        """The write ids the files were written with (consecutive within a batch)."""
        return tuple(f.metrics.write_id or 0 for f in self.loads)

    @property
    def dirs_written(self) -> tuple[str, ...]:
        """The delta directories written (one per partition and transaction batch)."""
        return tuple(sorted({d for f in self.loads for d in f.metrics.dirs_written}))

    @property
    def bytes_written(self) -> int:
        """Bytes in the delta files written (a batch's files, as of its last commit)."""
        by_dirs: dict[tuple[str, ...], int] = {}
        for f in self.loads:  # a batch's commits report its files' size so far
            dirs = f.metrics.dirs_written
            by_dirs[dirs] = max(by_dirs.get(dirs, 0), f.metrics.bytes_written)
        return sum(by_dirs.values())

    @property
    def is_noop(self) -> bool:
        """Nothing was loaded and nothing failed: every file was committed already."""
        return not self.loads and not self.failed

    @property
    def ok(self) -> bool:
        """No file failed."""
        return not self.failed

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "table": self.table,
            "skipped": self.is_noop,
            "rows": self.rows,
            "txn_ids": list(self.txn_ids),
            "write_ids": list(self.write_ids),
            "loaded": [f.uri for f in self.loaded],
            "already_committed": [
                {"source": s.key, "txn_id": s.txn_id, "write_id": s.write_id} for s in self.skipped
            ],
            "failed": [
                {"file": f.file.uri, "error": f.error, "message": f.message} for f in self.failed
            ],
            "dirs_written": list(self.dirs_written),
        }


def load_files(
    warehouse: TableWarehouse,
    table: str,
    files: Sequence[str | os.PathLike[str] | LandingFile],
    *,
    fmt: FileFormat | str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> LoadResult:
    """Load ``files`` (URIs or paths, looked at now, or :class:`LandingFile` identities) into
    ``table`` exactly once, one transaction per file, ``batch_size`` transactions per batch
    (see module docs). ``fmt``: the files' format, else each file's suffix says. A file whose
    content fails is in :attr:`LoadResult.failed` (check :attr:`LoadResult.ok`); a missing
    file, an unknown ``fmt`` or a missing table raise before anything is written."""
    if warehouse.in_transaction:
        raise StreamingError(
            "load_files commits one transaction per file; call it outside an explicit transaction"
        )
    if fmt:
        fmt = resolve_format(LandingFile("", 0, 0), fmt)  # an unknown format raises here
    target = warehouse.table(table)
    named = [f if isinstance(f, LandingFile) else stat_landing(f) for f in files]
    pending, skipped = identify(target, named)
    if not pending:
        return LoadResult(target.name, (), tuple(skipped))
    loads: list[FileLoad] = []
    failed: list[FailedFile] = []
    if target.spec.is_insert_only:  # streaming needs full ACID: one INSERT per file
        for file in pending:
            collect(insert_one(target, file, fmt), loads, failed, skipped)
        return LoadResult(target.name, tuple(loads), tuple(skipped), tuple(failed))
    size = max(1, batch_size)
    for start in range(0, len(pending), size):
        chunk = pending[start : start + size]
        with connect(warehouse, target, len(chunk)) as conn:
            for file in chunk:
                collect(load_one(conn, target, file, fmt), loads, failed, skipped)
    return LoadResult(target.name, tuple(loads), tuple(skipped), tuple(failed))


def identify(
    table: Table, files: Sequence[LandingFile]
) -> tuple[list[LandingFile], list[CommittedSource]]:
    """The files to load (each under the identity it loads with: see :mod:`.landing`) and the
    sources of those committed into ``table`` already. A file named twice counts once. A local
    file committed under its size and time whose status change time moved since is hashed: the
    same content is committed already; other content loads as ``…|sha256=<digest>``."""
    unique = list({f.key: f for f in files}.values())
    done = {s.key: s for s in table.committed_sources([f.key for f in unique])}
    pending: list[LandingFile] = []
    skipped: list[CommittedSource] = []
    rewritten: list[LandingFile] = []
    for file in unique:
        found = done.get(file.key)
        if found is None:
            pending.append(file)
        elif not file.ctime_ns or found.info.get("ctime_ns") in (None, file.ctime_ns):
            skipped.append(found)
        else:
            try:
                digest = hashlib.sha256(read_bytes(file)).hexdigest()
            except LandingFileError:  # changing now: its load fails, naming why
                pending.append(file)
                continue
            if digest == found.info.get("sha256"):
                skipped.append(found)  # touched (chmod, a hard link), not rewritten
            else:
                rewritten.append(replace(file, sha256=digest))
    again = {s.key: s for s in table.committed_sources([f.key for f in rewritten])}
    skipped += [again[f.key] for f in rewritten if f.key in again]
    pending += [f for f in rewritten if f.key not in again]
    return pending, skipped


def connect(warehouse: TableWarehouse, table: Table, transactions: int) -> StreamingConnection:
    """A streaming connection to ``table`` whose first transaction batch is ``transactions``
    transactions (partitions: from each row)."""
    spec = table.spec
    return (
        StreamingConnection.builder(warehouse)
        .with_database(spec.db)
        .with_table(spec.name)
        .with_agent_info(f"acid_platform ingest into {spec.full_name}")
        .with_transaction_batch_size(transactions)
        .with_record_writer(ArrowRecordWriter())
        .connect()
    )


def load_one(
    conn: StreamingConnection, table: Table, file: LandingFile, fmt: FileFormat | str | None
) -> FileLoad | FailedFile | CommittedSource:
    """Load ``file`` in the connection's next transaction: loaded, failed (the transaction
    aborted), or found committed by another transaction (this one aborted)."""
    conn.begin_transaction()
    try:
        rows, sha256 = fitted(table, file, fmt)
        conn.record_sources([file.source(sha256)])
        conn.write(rows)
        checkpoint("ingest.file_written")
    except DuplicateSourceError:
        conn.abort_transaction()  # committed meanwhile by a concurrent load
        return committed_source(table, file)
    except BAD_FILE as exc:
        conn.abort_transaction()
        return FailedFile(file, type(exc).__name__, short(str(exc)))
    try:
        return FileLoad(file, conn.commit_transaction())
    except DuplicateSourceError:  # the metastore aborted the transaction: nothing visible
        return committed_source(table, file)


def insert_one(
    table: Table, file: LandingFile, fmt: FileFormat | str | None
) -> FileLoad | FailedFile | CommittedSource:
    """:func:`load_one` for an insert-only table (which streaming cannot write): the file in
    one INSERT statement of its own, its identity recorded with it."""
    try:
        rows, sha256 = fitted(table, file, fmt)
        checkpoint("ingest.file_written")
        return FileLoad(file, table.insert(rows, sources=[file.source(sha256)]))
    except DuplicateSourceError:  # committed already, or meanwhile: nothing of this visible
        return committed_source(table, file)
    except BAD_FILE as exc:
        return FailedFile(file, type(exc).__name__, short(str(exc)))


def collect(
    outcome: FileLoad | FailedFile | CommittedSource,
    loads: list[FileLoad],
    failed: list[FailedFile],
    skipped: list[CommittedSource],
) -> None:
    """Put one file's outcome where it belongs."""
    if isinstance(outcome, FileLoad):
        loads.append(outcome)
    elif isinstance(outcome, FailedFile):
        failed.append(outcome)
    else:
        skipped.append(outcome)


def committed_source(table: Table, file: LandingFile) -> CommittedSource:
    """How ``file`` is committed into ``table`` (a concurrent load committed it)."""
    found = table.committed_sources([file.key])
    if not found:  # pragma: no cover - DuplicateSourceError means it is committed
        raise StreamingError(f"landing file {file.uri} is reported committed but is not")
    return found[0]


def ensure_table(
    warehouse: TableWarehouse,
    table: str,
    columns: Mapping[str, str],
    partition_columns: Mapping[str, str] | None = None,
) -> Table:
    """``table``, created with ``columns`` and ``partition_columns`` (name: Hive type) — and
    its database — if it does not exist (concurrent creators create it once)."""
    if not warehouse.table_exists(table):
        db = table.rpartition(".")[0]
        if db and not warehouse.database_exists(db):
            warehouse.create_database(db, if_not_exists=True)
        warehouse.create_table(
            table,
            list(columns.items()),
            partition_columns=list((partition_columns or {}).items()),
            if_not_exists=True,
        )
    return warehouse.table(table)


def fitted(table: Table, file: LandingFile, fmt: FileFormat | str | None) -> tuple[pa.Table, str]:
    """The rows of ``file`` in ``table``'s schema (see :mod:`.readers`), and the SHA-256 of
    the bytes they came from."""
    schema = table.schema
    limit = table.warehouse.conf.get(MAX_RECORD_SETTING)
    read = read_landing(file, schema, fmt, int(limit) if limit else DEFAULT_MAX_RECORD_BYTES)
    check_columns(file, table.name, read.rows, schema)
    try:
        return conform(table.name, read.rows, schema, fill_missing=False), read.sha256
    except SchemaMismatchError as exc:
        raise type(exc)(
            f"landing file {file.uri} does not fit table {table.name}: {exc}; nothing of it "
            "was written"
        ) from exc


__all__ = [
    "BAD_FILE",
    "DEFAULT_BATCH_SIZE",
    "FailedFile",
    "FileLoad",
    "LoadResult",
    "collect",
    "committed_source",
    "connect",
    "ensure_table",
    "fitted",
    "identify",
    "insert_one",
    "load_files",
    "load_one",
]
