"""Streaming Ingest V2: :class:`StreamingConnection` (Hive's ``HiveStreamingConnection``).

A client streams records into one ACID table in transactions of its own choosing::

    conn = (
        StreamingConnection.builder(wh)
        .with_database("db")
        .with_table("alerts")
        .with_static_partition_values(["2024-05-01"])   # or none: partition from each record
        .with_agent_info("sensor-gateway-7")
        .with_transaction_batch_size(100)
        .with_record_writer(StrictDelimitedInputWriter(","))
        .connect()
    )
    conn.begin_transaction()
    conn.write(b"1,disk full")
    conn.write([b"2,fan", b"3,ok"])
    conn.commit_transaction()       # readable now, by every new snapshot
    conn.close()                    # aborts what is still open, ends the files

Transactions come in batches (:mod:`.batch`): the n transactions of a batch share one
``delta_<minW>_<maxW>`` per partition and one file per bucket, readable after each commit up to
its ``_flush_length``. Buffered rows are flushed to the files when they pass the connection's
memory limit. With :meth:`StreamingConnectionBuilder.with_write_id` the connection is
*unmanaged*: it opens no transaction, writes ``delta_w_w[_s]`` under the given write id and
statement id, and :meth:`~StreamingConnection.commit_transaction` only ends the files — the
coordinator that owns the transaction commits it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from acid_platform.errors import InvalidPartitionError, StreamingError
from acid_platform.format.writer import DEFAULT_STRIPE_SIZE
from acid_platform.metastore.model import Source, TableSpec
from acid_platform.streaming.batch import BatchTarget, TransactionBatch
from acid_platform.streaming.delta_files import DeltaFiles
from acid_platform.streaming.record_writers import RecordWriter, StrictDelimitedInputWriter
from acid_platform.table.event_layout import EventLayout
from acid_platform.table.inserts import data_columns, static_partition
from acid_platform.table.partitions import partition_path
from acid_platform.table.schema import check_not_null, not_null_columns, table_schema
from acid_platform.table.statement import StatementMetrics, WriteRequest, register_partitions
from acid_platform.table.transaction import lock_wait_s
from acid_platform.table.warehouse import TableWarehouse
from acid_platform.table.writes import split_by_partition

#: Default bound on buffered rows before they are flushed to the files.
DEFAULT_MEMORY_LIMIT = 128 * 1024 * 1024


@dataclass(frozen=True)
class StreamingOptions:
    """What a connection streams into and how (the builder's settings)."""

    database: str = "default"
    table: str = ""
    #: Values of the partition columns, in order (``None``: dynamic, from each record).
    static_partition_values: tuple[Any, ...] | None = None
    agent_info: str = "acid_platform streaming"
    transaction_batch_size: int = 1
    record_writer: RecordWriter = field(default_factory=StrictDelimitedInputWriter)
    #: Buffered row bytes past which the connection flushes them to the files.
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT
    #: Unmanaged mode: the write id (and statement id) of a transaction owned elsewhere.
    write_id: int | None = None
    statement_id: int | None = None
    #: Seconds between heartbeats of a batch's transactions (default: ``hive.txn.timeout / 2``).
    heartbeat_interval_s: float | None = None
    stripe_size: int = DEFAULT_STRIPE_SIZE


@dataclass
class ConnectionStats:
    """What a connection did (Hive's ``ConnectionStats``)."""

    records_written: int = 0
    rows_committed: int = 0
    committed_transactions: int = 0
    aborted_transactions: int = 0
    auto_flushes: int = 0
    batches: int = 0


class StreamingConnection:
    """A streaming connection to one table (see module docs). Use :meth:`builder`."""

    def __init__(self, warehouse: TableWarehouse, options: StreamingOptions) -> None:
        if options.transaction_batch_size < 1:
            raise StreamingError("the transaction batch size must be at least 1")
        self.warehouse = warehouse
        self.options = options
        self.spec = _streaming_table(warehouse, options)
        self._static_name, self._record_schema = self._partitioning()
        location = warehouse.table(self.spec.full_name).location
        self._layout = EventLayout.of(
            self.spec, location.filesystem, stripe_size=options.stripe_size
        )
        lock = WriteRequest.insert(
            self.spec, warehouse.conf, self._static_name or None, False
        ).locks
        self._target = BatchTarget(
            warehouse,
            self.spec,
            location.path,
            self._layout,
            self._static_name,
            lock,
            options.agent_info,
            lock_wait_s(warehouse.conf),
            options.heartbeat_interval_s or warehouse.metastore.txn_timeout_s / 2,
        )
        self._not_null = not_null_columns(self.spec)
        self._batch: TransactionBatch | None = None
        self._unmanaged: dict[str, DeltaFiles] = {}
        self._unmanaged_open = False
        self._txn_records = 0
        self.partitions_written: set[str] = set()
        self.stats = ConnectionStats()
        self.closed = False
        if self._static_name:
            register_partitions(warehouse, self.spec, [self._static_name])

    @staticmethod
    def builder(warehouse: TableWarehouse) -> StreamingConnectionBuilder:
        """A builder for a connection to a table of ``warehouse``."""
        return StreamingConnectionBuilder(warehouse)

    # ------------------------------------------------------------------ transactions
    @property
    def unmanaged(self) -> bool:
        return self.options.write_id is not None

    @property
    def current_txn_id(self) -> int | None:
        """The open transaction's id (``None`` when none is open, or unmanaged)."""
        b = self._batch
        return b.txn_id if b is not None and b.is_open else None

    @property
    def current_write_id(self) -> int | None:
        if self.unmanaged:
            return self.options.write_id if self._unmanaged_open else None
        b = self._batch
        return b.write_id if b is not None and b.is_open else None

    @property
    def remaining_transactions(self) -> int:
        """Transactions of the current batch not yet begun."""
        return self._batch.remaining if self._batch is not None else 0

    @property
    def pending_bytes(self) -> int:
        """Bytes of buffered rows not yet in the files (kept under the memory limit)."""
        if self._batch is not None:
            return self._batch.pending_bytes
        return sum(d.pending_bytes for d in self._unmanaged.values())

    def begin_transaction(self) -> None:
        """Begin the next transaction (opening a new batch when the current one is used up)."""
        self._check_usable()
        if self._in_txn():
            raise StreamingError("a transaction is already open: commit or abort it first")
        self._txn_records = 0
        if self.unmanaged:
            if self._unmanaged_open or self.stats.committed_transactions:
                raise StreamingError("an unmanaged connection writes one transaction")
            self._unmanaged_open = True
            return
        if self._batch is None or self._batch.remaining == 0:
            self._close_batch()
            self._batch = TransactionBatch.open(self._target, self.options.transaction_batch_size)
            self.stats.batches += 1
        self._batch.begin()

    def write(self, data: Any) -> None:
        """Write records in the open transaction: one record or a sequence of them (bytes or
        str for the text writers), or a table / frame for the Arrow and pandas writers. All of
        one call is taken or, on a :class:`~acid_platform.errors.MalformedRecordError`, none."""
        self._check_usable()
        if not self._in_txn():
            raise StreamingError("no transaction is open: call begin_transaction() first")
        rows = self.options.record_writer.parse(
            data, self._record_schema, self.spec.full_name, self._txn_records
        )
        if rows.num_rows == 0:
            return
        rows = self._with_static_values(rows)
        check_not_null(self.spec.full_name, rows, self._not_null)
        groups = split_by_partition(rows, self.spec.partition_column_names, data_columns(self.spec))
        for name, part in groups:
            self._write_partition(name, part)
        self._txn_records += rows.num_rows
        self.stats.records_written += rows.num_rows
        self._bound_memory()

    def commit_transaction(self) -> StatementMetrics:
        """Make the transaction's rows readable and commit it (unmanaged: end the files; the
        owner of the transaction commits it)."""
        self._check_usable()
        if not self._in_txn():
            raise StreamingError("no transaction is open to commit")
        rows = self._txn_records
        if self.unmanaged:
            metrics = self._end_unmanaged()
        else:
            assert self._batch is not None
            try:
                metrics = self._batch.commit()
            except BaseException:
                self.stats.aborted_transactions += 1
                raise
        self.stats.committed_transactions += 1
        self.stats.rows_committed += rows
        self._txn_records = 0
        return metrics

    def record_sources(self, sources: Sequence[Source]) -> None:
        """Record that the open transaction loads ``sources`` (landing files, ...): they are
        committed into the table exactly when it commits, and forgotten if it aborts (see
        :mod:`acid_platform.metastore.sources`). Raises
        :class:`~acid_platform.errors.DuplicateSourceError` when one is committed already
        (then abort the transaction); :meth:`commit_transaction` raises it — the transaction
        aborted — when a concurrent transaction committed one first."""
        self._check_usable()
        if self.unmanaged:
            raise StreamingError("an unmanaged connection's transaction is owned elsewhere")
        if not self._in_txn():
            raise StreamingError("no transaction is open: call begin_transaction() first")
        assert self._batch is not None
        spec = self.spec
        self.warehouse.metastore.record_sources(self._batch.txn_id, spec.db, spec.name, sources)

    def abort_transaction(self) -> None:
        """Abort the open transaction: nothing it wrote becomes readable."""
        self._check_usable()
        if not self._in_txn():
            raise StreamingError("no transaction is open to abort")
        if self.unmanaged:
            for d in self._unmanaged.values():
                d.abort()
            self._unmanaged_open = False
        else:
            assert self._batch is not None
            self._batch.abort()
        self.stats.aborted_transactions += 1
        self._txn_records = 0

    def close(self) -> None:
        """Abort the open transaction and the batch's unused ones, end the files (side files
        deleted). Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.unmanaged:
            for d in self._unmanaged.values():
                d.abort()
                d.close()
            return
        self._close_batch()

    def __enter__(self) -> StreamingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StreamingConnection({self.spec.full_name!r}, closed={self.closed})"

    # ------------------------------------------------------------------ helpers
    def _partitioning(self) -> tuple[str | None, pa.Schema]:
        """The static partition's name (``""`` unpartitioned, ``None`` dynamic) and the schema
        of a record."""
        spec, values = self.spec, self.options.static_partition_values
        full = table_schema(spec)
        if not spec.partition_columns:
            if values:
                raise InvalidPartitionError(f"table {spec.full_name} is not partitioned")
            return "", full
        if values is None:
            return None, full
        names = spec.partition_column_names
        if len(values) != len(names):
            raise InvalidPartitionError(
                f"table {spec.full_name} is partitioned by {list(names)}; "
                f"{len(values)} static value(s) given"
            )
        _, name = static_partition(spec, dict(zip(names, values, strict=True)), [])
        assert name is not None
        return name, pa.schema([full.field(c) for c, _ in spec.columns])

    def _with_static_values(self, rows: pa.Table) -> pa.Table:
        if not self._static_name or self.options.static_partition_values is None:
            return rows
        full = table_schema(self.spec)
        for col, value in zip(
            self.spec.partition_column_names, self.options.static_partition_values, strict=True
        ):
            rows = rows.append_column(
                full.field(col), pa.array([value] * rows.num_rows).cast(full.field(col).type)
            )
        return rows

    def _write_partition(self, name: str, rows: pa.Table) -> None:
        self.partitions_written.add(name)
        if not self.unmanaged:
            assert self._batch is not None
            self._batch.write(name, rows)
            return
        delta = self._unmanaged.get(name)
        if delta is None:
            if name:
                register_partitions(self.warehouse, self.spec, [name])
            w = self.options.write_id
            assert w is not None
            stmt = -1 if self.options.statement_id is None else self.options.statement_id
            directory = self._layout.batch_dir(
                partition_path(self._target.table_path, name), w, w, stmt
            )
            delta = self._unmanaged[name] = DeltaFiles(
                self.spec, self._layout, directory, False, stmt
            )
        delta.write(rows, self.options.write_id)  # type: ignore[arg-type]

    def _bound_memory(self) -> None:
        if self.pending_bytes <= self.options.memory_limit_bytes:
            return
        if self._batch is not None:
            self._batch.flush()
        for d in self._unmanaged.values():
            d.flush()
        self.stats.auto_flushes += 1

    def _end_unmanaged(self) -> StatementMetrics:
        started = time.perf_counter()
        rows = sum(d.txn_rows for d in self._unmanaged.values())
        files: list[str] = []
        for d in self._unmanaged.values():
            files += d.commit()
            d.close()
        self._unmanaged_open = False
        stmt = self.options.statement_id
        return StatementMetrics(
            table=self.spec.full_name,
            txn_id=0,
            write_id=self.options.write_id,
            statement_ids=() if stmt is None else (stmt,),
            rows_inserted=rows,
            dirs_written=tuple(sorted(d.directory for d in self._unmanaged.values() if d.files)),
            files_written=len(files),
            bytes_written=sum(
                f.result.size
                for d in self._unmanaged.values()
                for f in d.files.values()
                if f.result
            ),
            duration_s=time.perf_counter() - started,
        )

    def _in_txn(self) -> bool:
        if self.unmanaged:
            return self._unmanaged_open
        return self._batch is not None and self._batch.is_open

    def _close_batch(self) -> None:
        if self._batch is not None:
            batch, self._batch = self._batch, None
            if batch.is_open:
                self.stats.aborted_transactions += 1
            batch.close()

    def _check_usable(self) -> None:
        if self.closed:
            raise StreamingError(f"the streaming connection to {self.spec.full_name} is closed")


class StreamingConnectionBuilder:
    """Hive's ``HiveStreamingConnection.Builder`` in Python names (each ``with_*`` returns the
    builder; :meth:`connect` opens the connection)."""

    def __init__(self, warehouse: TableWarehouse) -> None:
        self._warehouse = warehouse
        self._options = StreamingOptions()

    def _set(self, **changes: Any) -> StreamingConnectionBuilder:
        self._options = replace(self._options, **changes)
        return self

    def with_database(self, database: str) -> StreamingConnectionBuilder:
        return self._set(database=database)

    def with_table(self, table: str) -> StreamingConnectionBuilder:
        return self._set(table=table)

    def with_static_partition_values(self, values: Sequence[Any]) -> StreamingConnectionBuilder:
        """Write every record into this partition (values of the partition columns, in order);
        without it a partitioned table takes each record's trailing partition values."""
        return self._set(static_partition_values=tuple(values))

    def with_agent_info(self, agent_info: str) -> StreamingConnectionBuilder:
        return self._set(agent_info=agent_info)

    def with_transaction_batch_size(self, size: int) -> StreamingConnectionBuilder:
        return self._set(transaction_batch_size=size)

    def with_record_writer(self, writer: RecordWriter) -> StreamingConnectionBuilder:
        return self._set(record_writer=writer)

    def with_memory_limit(self, limit_bytes: int) -> StreamingConnectionBuilder:
        """Flush buffered rows to the files when they pass ``limit_bytes``."""
        return self._set(memory_limit_bytes=limit_bytes)

    def with_write_id(self, write_id: int) -> StreamingConnectionBuilder:
        """Unmanaged mode: write under ``write_id`` of a transaction owned elsewhere."""
        return self._set(write_id=write_id)

    def with_statement_id(self, statement_id: int) -> StreamingConnectionBuilder:
        return self._set(statement_id=statement_id)

    def with_heartbeat_interval(self, seconds: float) -> StreamingConnectionBuilder:
        return self._set(heartbeat_interval_s=seconds)

    def with_stripe_size(self, stripe_size: int) -> StreamingConnectionBuilder:
        return self._set(stripe_size=stripe_size)

    def connect(self) -> StreamingConnection:
        """Open the connection (the table must exist and be a full ACID table)."""
        if not self._options.table:
            raise StreamingError("a streaming connection needs a table (with_table)")
        return StreamingConnection(self._warehouse, self._options)


#: Hive's name for the connection.
HiveStreamingConnection = StreamingConnection


def _streaming_table(warehouse: TableWarehouse, options: StreamingOptions) -> TableSpec:
    spec = warehouse.table_spec(options.database, options.table)
    props = {k.lower(): v for k, v in spec.properties.items()}
    if props.get("transactional", "").lower() != "true":
        raise StreamingError(f"table {spec.full_name} is not transactional")
    if props.get("transactional_properties", "default").lower() == "insert_only":
        raise StreamingError(f"table {spec.full_name} is insert-only; streaming needs full ACID")
    if options.write_id is None and options.statement_id is not None:
        raise StreamingError("a statement id is given only with a write id (unmanaged mode)")
    return spec
