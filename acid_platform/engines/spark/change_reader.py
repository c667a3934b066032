"""The change feed through Spark: a batch read, and a Structured Streaming source by write id.

>>> # (spark.readStream.format("acid").option("read_changes", "true")
>>> #    .option("starting_write_id", "0").option("key", "id").load("db.orders"))
>>> # spark.read.format("acid").option("read_changes", "true")
>>> #    .option("starting_write_id", 3).option("ending_write_id", 7).load("db.orders")

Rows are the table layer's change feed (:mod:`acid_platform.table.changes`): the table's
columns, ``_change_type`` (``insert``, ``delete``, with ``key`` also ``update_preimage`` /
``update_postimage``), ``_write_id`` and ``row__id``. Planning (beside the driver) takes ONE
snapshot held as a reader lease, checks the window of write ids ``(after, upto]`` against it and
plans the partitions (:class:`~acid_platform.table.changes.ChangeScan`); each Spark task reads
one partition's changes (:meth:`~acid_platform.table.changes.ChangeScan.partition_changes`).

**Streaming.** The offset is ``{"write_id": w}``: every change of a write id up to ``w`` has been
read. ``latestOffset`` is the table's newest *final* write id (below every open one), so a
micro-batch's window never changes once planned and a replayed batch reads the same rows; a
micro-batch holds every write id committed since the last — or, with the option
``max_write_ids_per_trigger`` n, at most n of them (aborted write ids count; each carries no
changes), so a backlog is read in bounded micro-batches (``Trigger.AvailableNow`` too; Spark's
deprecated ``Trigger.Once`` reads everything at once). The start is ``starting_write_id``
(default 0: the whole history; ``latest``: what is final when the query first starts); a
restarted query resumes from its checkpointed offset. ``Trigger.AvailableNow`` reads up to the
write id final when the query starts. Each batch's reader lease is closed by the source's
process once the batch is done: at the next trigger's ``latestOffset`` (or ``commit``); only a
query that dies right after a batch leaves that lease to expire after ``hive.txn.timeout``
(Spark 4.3 does not call ``stop`` on a Python source it shuts down). A partition whose history below the offset is gone (a major compaction or INSERT
OVERWRITE wrote a base above it) fails the query with
:class:`~acid_platform.errors.ChangeHistoryUnavailableError` naming the earliest write id it
can answer from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from acid_platform.engines.spark.options import SourceOptions, table_location
from acid_platform.engines.spark.reader import keep_lease, parsed_write_ids
from acid_platform.engines.spark.schema import spark_arrow_schema, spark_batches
from acid_platform.errors import UnknownColumnError
from acid_platform.format import Snapshot
from acid_platform.format.change_events import WriteIdWindow
from acid_platform.metastore.model import TableSpec
from acid_platform.table.changes import (
    ChangeScan,
    change_feed_schema,
    change_window,
    newest_final_write_id,
)
from acid_platform.table.read_lease import take_snapshot
from acid_platform.table.scan import PartitionFiles

log = logging.getLogger(__name__)

#: The streaming source's offset: the newest write id whose changes were read.
OFFSET_KEY = "write_id"
LATEST = "latest"


class ChangePartition(InputPartition):
    """One Spark task of a change read: one partition's files under the batch's snapshot."""

    def __init__(
        self,
        part: PartitionFiles,
        write_ids: str,
        window: tuple[int, int],
        location: str,
        lease: tuple[str, float, int, float] | None,
    ) -> None:
        self.part = part
        self.write_ids = write_ids
        self.window = window
        self.location = location
        #: (metastore url, txn timeout, lease id, time opened) when the snapshot has a lease
        self.lease = lease


class ChangeColumns:
    """The feed columns a read returns (Spark's schema: the feed's, or a subset by name)."""

    def __init__(self, spec: TableSpec, schema: StructType) -> None:
        known = change_feed_schema(spec).names
        self.names = [f.name for f in schema.fields]
        self.columns = [n.lower() for n in self.names]
        unknown = [n for n in self.columns if n not in known]
        if unknown:
            raise UnknownColumnError(
                f"the change feed of {spec.full_name} has no column(s) {unknown}; its columns "
                f"are {known}"
            )
        self.arrow_schema = spark_arrow_schema(schema)


def plan_changes(
    options: SourceOptions, spec: TableSpec, after: int, upto: int | None
) -> tuple[list[ChangePartition], int | None]:
    """The tasks reading the changes of write ids ``(after, upto]`` (``upto`` ``None``: the
    newest final) under one new snapshot, and its reader lease id (the caller closes it; the
    tasks heartbeat it)."""
    ms = options.metastore()
    lease_on = options.conf_bool("acid.scan.read.lease")
    snapshots, lease_id = take_snapshot(ms, [spec], lease=lease_on, agent="spark changes")
    try:
        snapshot = snapshots[spec.full_name]
        window = change_window(spec, snapshot.write_ids, after, upto)
        scan = ChangeScan(
            spec, table_location(spec.location), snapshot, window, key=options.key or ()
        )
        files = scan.plan_files() if window.upto > window.after else []
    except BaseException:
        if lease_id is not None:
            ms.close_read_lease(lease_id)
        raise
    lease = None if lease_id is None else (ms.url, ms.txn_timeout_s, lease_id, time.time())
    text = str(snapshot.write_ids)
    bounds = (window.after, window.upto)
    tasks = [ChangePartition(p, text, bounds, spec.location, lease) for p in files]
    log.info("acid changes of %s (%s, %s]: %d task(s)", spec.full_name, *bounds, len(tasks))
    return tasks, lease_id


def read_partition(
    spec: TableSpec, key: Sequence[str], columns: ChangeColumns, partition: InputPartition
) -> Iterator[pa.RecordBatch]:
    """One task: the changes of one partition, in feed order, as Spark's Arrow batches."""
    if not isinstance(partition, ChangePartition):
        return  # nothing changed: Spark may still run one task
    if partition.lease is not None:
        keep_lease(partition.lease)
    after, upto = partition.window
    scan = ChangeScan(
        spec,
        table_location(partition.location),
        Snapshot(None, parsed_write_ids(partition.write_ids)),
        WriteIdWindow(after, upto),
        key=key,
    )
    changes = scan.partition_changes(partition.part).select(columns.columns)
    for batch in changes.to_batches():
        out = pa.RecordBatch.from_arrays(batch.columns, names=columns.names)
        yield from spark_batches(out, columns.arrow_schema)


def newest_final(options: SourceOptions, spec: TableSpec) -> int:
    """The table's newest final write id now (no lease: nothing is read)."""
    return newest_final_write_id(options.metastore(), spec)


class AcidChangeReader(DataSourceReader):
    """A batch read of the change feed: ``starting_write_id`` (exclusive) to
    ``ending_write_id`` (default: the newest final write id)."""

    def __init__(self, options: SourceOptions, spec: TableSpec, schema: StructType) -> None:
        self._options = options
        self._spec = spec
        self._columns = ChangeColumns(spec, schema)

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the read under one snapshot (its lease expires after the query)."""
        opts = self._options
        after = 0 if opts.starting_write_id == LATEST else int(opts.starting_write_id)
        tasks, _ = plan_changes(opts, self._spec, after, opts.ending_write_id)
        return tasks

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """One partition's changes (runs on an executor)."""
        yield from read_partition(self._spec, self._options.key, self._columns, partition)


class AcidChangeStream(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The change feed as a Structured Streaming source (see module docs)."""

    def __init__(self, options: SourceOptions, spec: TableSpec, schema: StructType) -> None:
        self._options = options
        self._spec = spec
        self._columns = ChangeColumns(spec, schema)
        #: Trigger.AvailableNow: the newest write id this run reads
        self._target: int | None = None
        #: the reader lease of each planned batch, by its end offset
        self._leases: dict[int, list[int]] = {}

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's name
        """Where a new query starts: ``starting_write_id`` (``latest``: the newest final)."""
        start = self._options.starting_write_id
        write_id = newest_final(self._options, self._spec) if start == LATEST else int(start)
        return {OFFSET_KEY: write_id}

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - Spark's name
        """``max_write_ids_per_trigger`` as the limit Spark hands back to :meth:`latestOffset`
        (carried as :class:`ReadMaxFiles`: Spark passes only its built-in limits between the
        JVM and Python, and a write id is the feed's unit as a file is Delta's); without it,
        everything available."""
        cap = self._options.max_write_ids_per_trigger
        return ReadAllAvailable() if cap is None else ReadMaxFiles(cap)

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:  # noqa: N802 - Spark's name
        """The newest final write id (at most the AvailableNow target, and at most ``limit``
        write ids after ``start``), never before ``start``. Spark asks before each trigger,
        once the batches up to ``start`` are done: their leases are closed."""
        after = int(start[OFFSET_KEY])
        self._close([w for w in self._leases if w <= after])
        final = newest_final(self._options, self._spec)
        if self._target is not None:
            final = min(final, self._target)
        if isinstance(limit, ReadMaxFiles):
            final = min(final, after + max(1, int(limit.max_files)))
        return {OFFSET_KEY: max(final, after)}

    def reportLatestOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's name
        """The newest final write id now (the query's progress shows the backlog)."""
        return {OFFSET_KEY: newest_final(self._options, self._spec)}

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - Spark's name
        """Read up to the write id final now, no further."""
        self._target = newest_final(self._options, self._spec)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """The tasks of one micro-batch: the changes of the write ids ``(start, end]``."""
        after, upto = int(start[OFFSET_KEY]), int(end[OFFSET_KEY])
        if upto <= after:
            return []
        tasks, lease_id = plan_changes(self._options, self._spec, after, upto)
        if lease_id is not None:
            self._leases.setdefault(upto, []).append(lease_id)
        return tasks

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """One partition's changes (runs on an executor)."""
        yield from read_partition(self._spec, self._options.key, self._columns, partition)

    def commit(self, end: dict[str, int]) -> None:
        """Spark has processed everything up to ``end``: close those batches' leases."""
        upto = int(end[OFFSET_KEY])
        self._close([w for w in self._leases if w <= upto])

    def stop(self) -> None:
        """The query ended: close every lease still held (if Spark calls it)."""
        self._close(list(self._leases))

    def _close(self, ends: Sequence[int]) -> None:
        ms = self._options.metastore()
        for w in ends:
            for lease_id in self._leases.pop(w, []):
                try:
                    ms.close_read_lease(lease_id)
                except Exception as exc:  # noqa: BLE001 - an unclosed lease only expires
                    log.warning("could not close reader lease %s: %s", lease_id, exc)


__all__ = [
    "LATEST",
    "OFFSET_KEY",
    "AcidChangeReader",
    "AcidChangeStream",
    "ChangeColumns",
    "ChangePartition",
    "newest_final",
    "plan_changes",
    "read_partition",
]
