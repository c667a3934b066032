"""Values the metastore hands out and takes in: lock requests, table specs, queue entries.

All are frozen dataclasses or string enums, spelled in Hive's vocabulary. Names given by users
are validated and lower-cased here (Hive stores identifiers case-insensitively), so a value that
exists is a value that is acceptable to the store.

>>> LockComponent(LockType.SHARED_READ, "Sales", "Orders", "ds=2024-01-01")
LockComponent(lock_type=<LockType.SHARED_READ: 'SHARED_READ'>, db='sales', table='orders', partition='ds=2024-01-01')
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from acid_platform.errors import InvalidBucketError, InvalidNameError
from acid_platform.format.bucket_codec import MAX_BUCKET_ID
from acid_platform.metastore.names import (
    normalize_hive_type,
    normalize_identifier,
    normalize_partition_name,
)


class LockType(enum.StrEnum):
    """Hive 4 lock types (``HIVE_LOCKS.HL_LOCK_TYPE``)."""

    SHARED_READ = "SHARED_READ"
    SHARED_WRITE = "SHARED_WRITE"
    EXCL_WRITE = "EXCL_WRITE"
    EXCLUSIVE = "EXCLUSIVE"

    @property
    def code(self) -> str:
        """The one-letter code Hive stores: ``r``, ``w``, ``x``, ``e``."""
        return _LOCK_CODES[self]

    @classmethod
    def from_code(cls, code: str) -> LockType:
        return _LOCK_BY_CODE[code]


_LOCK_CODES = {
    LockType.SHARED_READ: "r",
    LockType.SHARED_WRITE: "w",
    LockType.EXCL_WRITE: "x",
    LockType.EXCLUSIVE: "e",
}
_LOCK_BY_CODE = {v: k for k, v in _LOCK_CODES.items()}


class LockState(enum.StrEnum):
    """State of a lock request; compares equal to the plain strings ``"acquired"``/``"waiting"``."""

    ACQUIRED = "acquired"
    WAITING = "waiting"


@dataclass(frozen=True)
class LockComponent:
    """One object to lock: a database, a table, or a partition (Hive's escaped ``k=v/k2=v2``).

    >>> LockComponent(LockType.EXCLUSIVE, "db").table is None
    True
    """

    lock_type: LockType
    db: str
    table: str | None = None
    partition: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lock_type", LockType(self.lock_type))
        object.__setattr__(self, "db", normalize_identifier(self.db, "database name"))
        if self.table is not None:
            object.__setattr__(self, "table", normalize_identifier(self.table, "table name"))
        if self.partition is not None:
            if self.table is None:
                raise InvalidNameError(
                    f"lock on partition {self.partition!r} of database {self.db!r} names no table"
                )
            object.__setattr__(self, "partition", normalize_partition_name(self.partition))


@dataclass(frozen=True)
class LockResponse:
    """Answer to ``lock``/``check_lock``: the request's lock id and its state."""

    lock_id: int
    state: LockState

    @property
    def acquired(self) -> bool:
        return self.state == LockState.ACQUIRED


class TxnState(enum.StrEnum):
    """State of a transaction (``TXNS.TXN_STATE``: ``o``, ``c``, ``a``)."""

    OPEN = "open"
    COMMITTED = "committed"
    ABORTED = "aborted"


class TxnType(enum.IntEnum):
    """``TXNS.TXN_TYPE`` values used here (Hive's numbering)."""

    DEFAULT = 0
    READ_ONLY = 2
    COMPACTION = 3


class OperationType(enum.StrEnum):
    """What a transaction did to a table or partition (``TXN_COMPONENTS.TC_OPERATION_TYPE``)."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"

    @property
    def code(self) -> str:
        return self.value[0]

    @classmethod
    def from_code(cls, code: str) -> OperationType:
        return {"i": cls.INSERT, "u": cls.UPDATE, "d": cls.DELETE}[code]


class CompactionType(enum.StrEnum):
    """``major`` rewrites base + deltas into a new base; ``minor`` merges deltas;
    ``rebalance`` (Hive 4, never initiated automatically) rewrites a partition of an unbucketed
    table into a base whose rows are spread evenly over its bucket files."""

    MAJOR = "major"
    MINOR = "minor"
    REBALANCE = "rebalance"

    @property
    def code(self) -> str:
        """``COMPACTION_QUEUE.CQ_TYPE``: ``a`` major, ``i`` minor, ``r`` rebalance (Hive's)."""
        return _COMPACTION_CODES[self]

    @classmethod
    def from_code(cls, code: str) -> CompactionType:
        return {v: k for k, v in _COMPACTION_CODES.items()}[code]


_COMPACTION_CODES = {
    CompactionType.MAJOR: "a",
    CompactionType.MINOR: "i",
    CompactionType.REBALANCE: "r",
}


class CompactionState(enum.StrEnum):
    """Queue and history states, valued as Hive prints them in SHOW COMPACTIONS."""

    INITIATED = "initiated"
    WORKING = "working"
    READY_FOR_CLEANING = "ready for cleaning"
    FAILED = "failed"
    SUCCEEDED = "succeeded"
    DID_NOT_INITIATE = "did not initiate"

    @property
    def code(self) -> str:
        return _STATE_CODES[self]

    @classmethod
    def from_code(cls, code: str) -> CompactionState:
        return _STATE_BY_CODE[code]


_STATE_CODES = {
    CompactionState.INITIATED: "i",
    CompactionState.WORKING: "w",
    CompactionState.READY_FOR_CLEANING: "r",
    CompactionState.FAILED: "f",
    CompactionState.SUCCEEDED: "s",
    CompactionState.DID_NOT_INITIATE: "a",
}
_STATE_BY_CODE = {v: k for k, v in _STATE_CODES.items()}


@dataclass(frozen=True)
class CompactionInfo:
    """One compaction queue (or history) entry. Times are epoch milliseconds."""

    id: int
    db: str
    table: str
    partition: str | None
    type: CompactionType | None
    state: CompactionState
    properties: Mapping[str, str] = field(default_factory=dict)
    worker_id: str | None = None
    enqueue_time: int | None = None
    start: int | None = None
    end: int | None = None
    highest_write_id: int | None = None
    txn_id: int | None = None
    next_txn_id: int | None = None
    commit_time: int | None = None
    initiator_id: str | None = None
    error_message: str | None = None
    run_as: str | None = None
    pool_name: str | None = None
    #: A rebalance request's ``ORDER BY`` text (Hive's ``CQ_ORDER_BY``), e.g. ``k DESC, v``.
    order_by: str | None = None
    #: A rebalance request's ``CLUSTERED INTO n BUCKETS`` (Hive's ``CQ_NUMBER_OF_BUCKETS``).
    number_of_buckets: int | None = None


@dataclass(frozen=True)
class PartitionActivity:
    """What happened to one table/partition since the compactor last looked (initiator input).

    ``committed_txns`` counts committed writer txns (COMPLETED_TXN_COMPONENTS) not yet
    compacted and cleaned; ``aborted_txns`` counts aborted txns whose writes are still there.
    """

    db: str
    table: str
    partition: str | None
    committed_txns: int
    last_commit_time: int | None
    has_update_delete: bool
    aborted_txns: int


@dataclass(frozen=True)
class Database:
    """A catalog database."""

    name: str
    location: str | None = None


#: The table property recording an insert-only table's ``STORED AS`` (Hive keeps it in the
#: storage descriptor's input format; this metastore has no such column). Absent: ORC.
FILE_FORMAT_PROPERTY = "acid_platform.storage.format"


@dataclass(frozen=True)
class TableSpec:
    """A catalog table: schema, partitioning, bucketing, location and table properties.

    Column and partition-column types are Hive type strings (``int``, ``decimal(10,2)``,
    ``struct<a:int>``). ``num_buckets == 0`` means unbucketed.

    >>> t = TableSpec("db", "t", (("id", "int"),), location="/wh/db/t",
    ...               properties={"transactional": "true"})
    >>> t.is_transactional, t.is_insert_only, t.full_name
    (True, False, 'db.t')
    """

    db: str
    name: str
    columns: tuple[tuple[str, str], ...]
    partition_columns: tuple[tuple[str, str], ...] = ()
    bucket_columns: tuple[str, ...] = ()
    num_buckets: int = 0
    bucketing_version: int = 2
    location: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)
    #: When the metastore created this incarnation of the table (ms; 0: not known). Not part
    #: of the table's definition: two specs of one definition compare equal.
    created: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "db", normalize_identifier(self.db, "database name"))
        object.__setattr__(self, "name", normalize_identifier(self.name, "table name"))
        columns = _normalize_columns(self.columns, f"{self.db}.{self.name}")
        part_cols = _normalize_columns(self.partition_columns, f"{self.db}.{self.name}")
        names = [c for c, _ in columns]
        clash = sorted(set(names) & {c for c, _ in part_cols})
        if clash:
            raise InvalidNameError(
                f"table {self.db}.{self.name}: partition columns {clash} are also data columns"
            )
        buckets = tuple(normalize_identifier(c, "bucket column") for c in self.bucket_columns)
        missing = [c for c in buckets if c not in names]
        if missing:
            raise InvalidNameError(
                f"table {self.db}.{self.name}: bucket columns {missing} are not data columns"
            )
        if isinstance(self.num_buckets, bool) or not isinstance(self.num_buckets, int):
            raise ValueError(f"table {self.db}.{self.name}: num_buckets must be an int")
        if self.num_buckets < 0 or (buckets and self.num_buckets == 0):
            raise InvalidBucketError(
                f"table {self.db}.{self.name}: num_buckets {self.num_buckets} is not valid "
                f"for bucket columns {list(buckets)} (1 to {MAX_BUCKET_ID + 1})"
            )
        if self.num_buckets > MAX_BUCKET_ID + 1:
            raise InvalidBucketError(
                f"table {self.db}.{self.name}: {self.num_buckets} buckets, but bucket ids stop at "
                f"{MAX_BUCKET_ID} (Hive's BucketCodec V1): at most {MAX_BUCKET_ID + 1} buckets"
            )
        if self.bucketing_version not in (1, 2):
            raise ValueError(
                f"table {self.db}.{self.name}: bucketing_version must be 1 or 2, "
                f"not {self.bucketing_version!r}"
            )
        props = dict(self.properties)
        for k, v in props.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(
                    f"table {self.db}.{self.name}: property {k!r}={v!r} is not a string pair"
                )
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "partition_columns", part_cols)
        object.__setattr__(self, "bucket_columns", buckets)
        object.__setattr__(self, "location", str(self.location))
        object.__setattr__(self, "properties", MappingProxyType(dict(sorted(props.items()))))

    def __hash__(self) -> int:
        return hash(
            (
                self.db,
                self.name,
                self.columns,
                self.partition_columns,
                self.bucket_columns,
                self.num_buckets,
                self.bucketing_version,
                self.location,
                tuple(self.properties.items()),
            )
        )

    @property
    def full_name(self) -> str:
        """``db.table`` as used in ValidWriteIdList strings."""
        return f"{self.db}.{self.name}"

    @property
    def is_transactional(self) -> bool:
        """``transactional=true`` (full ACID or insert-only)."""
        return self.properties.get("transactional", "").lower() == "true"

    @property
    def is_insert_only(self) -> bool:
        """``transactional_properties=insert_only`` (an MM table)."""
        return (
            self.is_transactional
            and self.properties.get("transactional_properties", "").lower() == "insert_only"
        )

    @property
    def file_format(self) -> str:
        """How the table's files are stored: ``orc`` (every full ACID table), or ``parquet`` /
        ``textfile`` (an insert-only table ``STORED AS`` them; kept in the table property
        :data:`FILE_FORMAT_PROPERTY`)."""
        return self.properties.get(FILE_FORMAT_PROPERTY, "orc").lower()

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_columns)

    @property
    def partition_column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.partition_columns)


@dataclass(frozen=True)
class Source:
    """What a statement loads into a table, by identity: ``key`` names it exactly once (a
    landing file's URI, size and modification time), ``info`` describes it (JSON values).
    Recorded with the loading transaction, it is committed into the table exactly when the
    transaction commits (see :mod:`acid_platform.metastore.sources`)."""

    key: str
    info: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"a source key must be a non-empty string, not {self.key!r}")


@dataclass(frozen=True)
class CommittedSource:
    """A source committed into a table: by which transaction, with which write id (``None``
    when it held no rows), when (epoch ms), and its ``info``."""

    db: str
    table: str
    key: str
    txn_id: int
    write_id: int | None
    committed_at: int
    info: Mapping[str, object] = field(default_factory=dict)


def _normalize_columns(columns: object, table: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in columns:  # type: ignore[attr-defined]
        try:
            name, hive_type = item
        except (TypeError, ValueError):
            raise ValueError(f"table {table}: column {item!r} is not a (name, type) pair") from None
        name = normalize_identifier(name, "column name")
        if name in seen:
            raise InvalidNameError(f"table {table}: column {name!r} appears twice")
        seen.add(name)
        out.append((name, normalize_hive_type(hive_type, f"column {table}.{name}")))
    return tuple(out)
