"""Typed errors of acid_platform.

This module is the floor of the house: every layer may import it, it imports nothing of the
project. Every error names what it is about (table, partition, file, position, txn id) in its
message, so a user can act on it without reading a traceback.
"""

from __future__ import annotations


class AcidError(Exception):
    """Base of every error raised by acid_platform."""


# --------------------------------------------------------------------------- format layer
class AcidFormatError(AcidError):
    """Something on disk does not follow the Hive ACID v2 format."""


class InvalidSnapshotError(AcidFormatError, ValueError):
    """A ValidTxnList / ValidWriteIdList string does not parse."""


class InvalidBucketError(AcidFormatError, ValueError):
    """A bucket property or bucket id is outside what BucketCodec V1 can encode."""


class InvalidNameError(AcidFormatError, ValueError):
    """A directory, file, database, table or partition name is not acceptable."""


class NotEnoughHistoryError(AcidFormatError):
    """The reader's snapshot is older than the oldest compacted base (Hive ACID_NOT_ENOUGH_HISTORY)."""


class CorruptAcidFileError(AcidFormatError):
    """An ORC file is corrupt, truncated or unreadable."""


class MissingAcidVersionError(AcidFormatError):
    """An ACID ORC file lacks `hive.acid.version` in its footer (written before Hive 3.0)."""


class AcidSchemaError(AcidFormatError):
    """An ORC file does not carry the ACID event schema (or a row schema that fits the table)."""


class TimestampRangeError(AcidFormatError, ValueError):
    """A timestamp does not fit where it goes: outside Hive's 0001-01-01 .. 9999-12-31, or a
    value with nanoseconds in a column read at microseconds (beyond Arrow's nanosecond range)."""


class MissingDirectoryError(AcidFormatError, FileNotFoundError):
    """A table or partition directory to read does not exist."""


class FileConflictError(AcidFormatError, FileExistsError):
    """A writer found the file or directory it was to create already there (another writer, or
    a second metastore on the same warehouse, got there first): it fails rather than replace."""


class FileRecordError(AcidFormatError):
    """What is on disk differs from what the metastore recorded at commit (see
    ``format.file_record``); ``path`` names the file or directory."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class MissingFileError(FileRecordError, FileNotFoundError):
    """A file or directory a committed write id wrote is not there."""


class UnexpectedFileError(FileRecordError):
    """A file or directory no committed write wrote sits where a snapshot would read it (a stray
    copy such as ``bucket_00001`` or ``bucket_00000_1`` inside a delta)."""


class FileSizeMismatchError(FileRecordError):
    """A committed file's size differs from the one recorded at commit (truncated or replaced)."""


class FlushLengthError(AcidFormatError):
    """A `_flush_length` side file is empty or unreadable."""


class UnsupportedTypeError(AcidFormatError, TypeError):
    """A Hive type is not supported by the operation (e.g. bucketing on a map column)."""


# --------------------------------------------------------------------------- metastore layer
class MetastoreError(AcidError):
    """Base of errors raised by the transaction / catalog store."""


class NoSuchObjectError(MetastoreError, KeyError):
    """A database, table or partition does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "no such object"


class NoSuchWarehouseError(NoSuchObjectError):
    """No warehouse exists at a path (no metastore there) and none was asked to be created."""


class WarehouseOwnershipError(MetastoreError):
    """The warehouse directory belongs to another metastore: one warehouse directory is served
    by one metastore (a second one would overwrite the first one's files)."""


class MetastoreUnavailableError(MetastoreError):
    """The metastore cannot be opened or reached: a server that does not answer, a file that
    is not a metastore database, or one the process may not open. Nothing was changed."""


class MetastoreVersionError(MetastoreError):
    """The metastore's schema was written by a newer acid_platform (a revision this one does
    not know): use that version, or a newer one. Nothing was changed."""


class ReadOnlyMetastoreError(MetastoreError):
    """The metastore is read-only (its file or directory cannot be written): it answers
    queries, but nothing that writes (a transaction, DML, DDL, compaction) can run."""


class InvalidSettingError(AcidError, ValueError):
    """A setting (``SET key=value``, a configuration value) has a value it cannot take: not a
    time, a number or a boolean, or out of range."""


class WarehouseLocationError(AcidError, ValueError):
    """The warehouse's path cannot hold a warehouse: it is a file, it cannot be created, its
    scheme is served by no file system, or a remote one lacks a metastore URL."""


class AlreadyExistsError(MetastoreError):
    """A database, table or partition already exists."""


class NoSuchTxnError(MetastoreError):
    """The transaction id is unknown (never opened, or already cleaned away)."""


class TxnAbortedError(MetastoreError):
    """The transaction was aborted (by the user, the time-out reaper or a write conflict)."""


class TxnOpenError(MetastoreError):
    """The operation is not allowed while the transaction is open (e.g. unlock of a txn lock)."""


class NoSuchLockError(MetastoreError):
    """The lock id is unknown (never granted, released, or expired)."""


class RetryableError(AcidError):
    """Contention, not a fault: the statement or transaction was rolled back whole (nothing it
    wrote is visible) and running it again, against a newer snapshot, may succeed."""


class LockTimeoutError(MetastoreError, RetryableError):
    """A lock could not be acquired within the wait time."""


class WriteConflictError(TxnAbortedError, RetryableError):
    """First committer wins: another txn committed an update/delete on the same partition."""


class TooManyOpenTxnsError(MetastoreError):
    """The number of open transactions reached `hive.max.open.txns`."""


class DuplicateSourceError(MetastoreError):
    """A source (a landing file) is already committed into the table, or already recorded in
    the transaction: loading it again would duplicate its rows. Raised when it is recorded
    (the statement then aborts) or at commit, when a concurrent transaction committed it first
    (this one is then aborted: nothing it wrote becomes visible)."""


class CompactionError(AcidError):
    """A compaction failed; its queue entry records the message."""


# --------------------------------------------------------------------------- sql layer
class CompactionTimeoutError(CompactionError):
    """``ALTER TABLE … COMPACT … AND WAIT`` gave up (``hive.compactor.wait.timeout``); the
    message names each entry's queue state. The entries stay queued."""


class SqlError(AcidError):
    """A HiveQL statement cannot be run as written."""


class SqlSyntaxError(SqlError, ValueError):
    """The text is not valid HiveQL (as far as this project reads it).

    ``line`` and ``col`` are 1-based and point at the first character of the offending text; the
    message repeats them and quotes the line with a caret under the spot.
    """

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


class SemanticError(SqlError, ValueError):
    """The statement parses but does not fit the catalog: wrong arity, bad type, bad clause mix."""


# --------------------------------------------------------------------------- table layer
class SchemaMismatchError(AcidError, ValueError):
    """Data does not fit a table: unknown column, or a value whose type cannot be stored."""


class UnknownColumnError(SchemaMismatchError):
    """A statement names a column the table (or the MERGE source) does not have."""


class InvalidUtf8Error(SchemaMismatchError):
    """A value for a STRING, VARCHAR or CHAR column (or a string inside a struct, array or map
    column) is not valid UTF-8: refused on every write path before anything is stored.

    ``table`` is ``db.table``; ``column`` the column, with the path to a nested string below it
    (``s.a``, ``tags[2]``, ``m[0].key``); ``row`` the value's 0-based position in the
    statement's input (a streaming transaction's records; the rows of a Spark task); ``excerpt``
    its bytes as text, bad bytes escaped (``caf\\xe9``), cut short. Empty (``row`` -1) when
    the error was re-created from its message alone (a Spark task's)."""

    def __init__(
        self, message: str, *, table: str = "", column: str = "", row: int = -1, excerpt: str = ""
    ) -> None:
        super().__init__(message)
        self.table, self.column, self.row, self.excerpt = table, column, row, excerpt


class NotNullViolationError(AcidError, ValueError):
    """A NULL would be stored in a NOT NULL column."""


class CardinalityViolationError(AcidError):
    """MERGE: one target row matched more than one source row (``hive.merge.cardinality.check``)."""


class InvalidPartitionError(AcidError, ValueError):
    """A partition spec or value cannot be stored (unknown key, missing value, unsafe path)."""


class InvalidExpressionError(AcidError, ValueError):
    """A SQL expression given to the table API does not parse or is ambiguous."""


class UnsupportedOperationError(AcidError):
    """The operation is valid SQL but not supported here, as in Hive (e.g. updating a
    partition or bucketing column, DDL inside a multi-statement transaction)."""


class NonTransactionalTableError(UnsupportedOperationError):
    """A write to a table that is not transactional (``'transactional'='false'``, which only the
    Python API creates): UPDATE, DELETE and MERGE are refused with Hive's message
    (``ErrorMsg.ACID_OP_ON_NONACID_TABLE``); INSERT is refused too, because this project writes
    only Hive ACID files, which Hive would misread in a plain table."""


class InsertOnlyTableError(UnsupportedOperationError):
    """UPDATE, DELETE or MERGE on an insert-only (micro-managed) transactional table, whose
    plain files have no ROW__IDs to update or delete by: refused with Hive's message
    (``ErrorMsg.ACID_OP_ON_INSERTONLYTRAN_TABLE``, error 10414)."""


class RenameUnsupportedError(UnsupportedOperationError, InvalidSettingError):
    """``acid.compactor.hive3.compatible`` on a file system without atomic directory rename (an
    object store): Hive 3 names need a staging directory renamed at commit. ``path`` names the
    table, partition or warehouse location."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class SandboxError(UnsupportedOperationError):
    """A statement reaches outside the warehouse's tables: a table function that is not an ACID
    table (a file, network or engine-catalog reader), a function HiveQL does not have, or an
    engine setting, extension or file the embedded engine's sandbox refuses."""


class ScanClosedError(AcidError):
    """A lazy table scan was read after it was read once or closed (its reader lease is gone)."""


class InvalidChangeRangeError(AcidError, ValueError):
    """A change feed's write id range cannot be answered: negative, ``from`` after ``to``, or
    ``to`` past the newest write id whose changes are final (a lower write id is still open, or
    it was never allocated)."""


class ChangeFeedIncarnationError(AcidError, ValueError):
    """A change-feed position (a cursor, a window) was taken on another incarnation of the table
    (it was dropped and created again): its write ids are not this table's. ``table`` is
    ``db.table``; ``expected`` the position's incarnation, ``found`` the table's."""

    def __init__(self, message: str, *, table: str, expected: str, found: str) -> None:
        super().__init__(message)
        self.table, self.expected, self.found = table, expected, found


class ChangeHistoryUnavailableError(NotEnoughHistoryError):
    """A change feed asks for write ids below a base: a major compaction or an INSERT OVERWRITE
    rewrote the partition at ``earliest_write_id`` and kept no history below it.

    ``table`` is ``db.table``, ``partition`` the partition's name (``None`` when unpartitioned)
    and ``earliest_write_id`` the lowest ``from_write_id`` the request's partitions answer."""

    def __init__(
        self, message: str, *, table: str, partition: str | None, earliest_write_id: int
    ) -> None:
        super().__init__(message)
        self.table = table
        self.partition = partition
        self.earliest_write_id = earliest_write_id


class TransactionStateError(AcidError):
    """BEGIN / COMMIT / ROLLBACK in the wrong state (e.g. COMMIT with no open transaction)."""


class EngineError(AcidError):
    """An engine failed while running a plan (e.g. a cast that fails on a value at run time)."""


# --------------------------------------------------------------------------- ingest
class LandingFileError(AcidError, ValueError):
    """A landing file cannot be loaded: it is missing, unreadable, of an unknown format, or
    does not parse; nothing of it was written."""


# --------------------------------------------------------------------------- streaming
class StreamingError(AcidError):
    """A streaming connection cannot do what was asked: it is closed, no transaction is open,
    the table cannot take streaming writes, or its transaction was aborted meanwhile."""


class MalformedRecordError(StreamingError, ValueError):
    """A record given to a streaming connection does not parse, or does not fit the table.

    ``record_index`` is the record's 0-based position among those written in the transaction,
    ``record`` its text (cut short). Nothing of the failing ``write`` call was kept: the
    transaction stays open, to be aborted or written on."""

    def __init__(self, message: str, record_index: int, record: str) -> None:
        super().__init__(message)
        self.record_index = record_index
        self.record = record


class InvalidUtf8RecordError(MalformedRecordError, InvalidUtf8Error):
    """A streaming record holds bytes that are not UTF-8 — a text record, or a string of an
    Arrow or pandas record — for a STRING, VARCHAR or CHAR column: a malformed record
    (``record_index``, ``record``) and an :class:`InvalidUtf8Error` (``column``, when known:
    empty if the record is not UTF-8 outside any field; ``row`` = ``record_index``)."""

    def __init__(
        self,
        message: str,
        record_index: int = -1,
        record: str = "",
        *,
        table: str = "",
        column: str = "",
        excerpt: str = "",
    ) -> None:
        InvalidUtf8Error.__init__(
            self, message, table=table, column=column, row=record_index, excerpt=excerpt
        )
        self.record_index = record_index
        self.record = record


class MutationError(AcidError):
    """A Mutation API coordinator cannot apply a record (Hive's ``WorkerException``). The
    coordinator that raised it has removed every file it wrote; abort the transaction, or give
    the coordinator's whole input to a new one."""


class GroupRevisitedError(MutationError):
    """Records of a (partition, bucket) group came back after the coordinator had moved on to
    another group (Hive's ``GroupRevisitedException``): group the change set by partition, then
    bucket."""


class RecordSequenceError(MutationError):
    """An update or delete arrived out of ROW__ID order within its group (Hive's
    ``RecordSequenceException``): sort each group by (originalWriteId, bucket, rowId)."""


class BucketIdError(MutationError):
    """A record's ROW__ID names another bucket than the one its bucketing columns hash to
    (Hive's ``BucketIdException``): stamp inserts with ``BucketIdResolver``, and never update a
    bucketing column."""


# --------------------------------------------------------------------------- orchestration
class AssetMetadataError(AcidError, ValueError):
    """An asset's metadata cannot be acted on (a partitioned asset without ``partition_expr``,
    an unknown write mode, a merge or delete without key columns); nothing was written."""


# --------------------------------------------------------------------------- installation
class MissingExtraError(AcidError, ImportError):
    """A part of acid_platform needs a package that only one of its extras installs (Spark,
    Dagster, a metastore driver); the message names the extra to install."""
