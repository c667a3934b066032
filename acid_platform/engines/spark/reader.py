"""Reading an ACID table in parallel: Spark input partitions over (partition dir, bucket) splits.

Spark (4.0 – 4.3) plans a Python data source's read — :meth:`AcidSourceReader.partitions` and
the pickled reader — once per loaded relation, and reuses that plan for every later query on the
DataFrame or view, and for every scan of it within one query (see :mod:`.datasource`). So what
the plan holds must be right for every query:

* **No query's filters.** :class:`AcidSourceReader` takes no filters from Spark (it has no
  ``pushFilters``): a reader that kept one would apply it to the next query too. Only
  ``SparkEngine``'s statement reads — a relation scanned once, by one query, at a pinned
  snapshot — use :class:`PushdownReader` (the internal ``pushdown`` option).
* **No snapshot, unless pinned.** Planning only fixes how many tasks the read has (the splits
  of the table when planned). Each task takes *its query's* snapshot
  (:mod:`.query_snapshot`: the latest committed one when the query's first task starts, shared
  by all its tasks), plans the table's splits under it and reads every ``n``-th one. A snapshot
  pinned by the options (``snapshot``, ``as_of_write_id``, ``valid_write_ids``) is planned once,
  as before: the splits under it never change. So is the snapshot of the shared
  ``wh.transaction()`` a read by name joins (option ``transaction``): the transaction's, with
  its own earlier writes (its write id valid), listed when the statement is planned.

Planning registers a snapshot with the cleaner as a reader lease; the table layer's scan planner
(:func:`~acid_platform.table.scan.plan_scan`) lists the partition directories, selects each
one's files for the snapshot (``getAcidState``) and cuts them into picklable
:class:`~acid_platform.table.scan.ScanTask` s, one per bucket. Each split is read by
:func:`~acid_platform.table.scan.read_task` (insert events minus the bucket's valid delete
events, stripe by stripe, partition columns added) as Arrow batches.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from acid_platform.engines.spark.filters import Conjunct, matching_rows, translate
from acid_platform.engines.spark.options import SourceOptions, open_metastore, table_location
from acid_platform.engines.spark.query_snapshot import (
    Lease,
    execution_id,
    planned_tasks,
    query_splits,
)
from acid_platform.engines.spark.schema import (
    output_columns,
    scan_column,
    spark_arrow_schema,
    spark_batches,
)
from acid_platform.format import ReadSplit, Snapshot, ValidTxnList, ValidWriteIdList
from acid_platform.metastore.model import TableSpec
from acid_platform.table.deprecation import deprecated
from acid_platform.table.read_lease import take_snapshot
from acid_platform.table.scan import ScanTask, read_task
from acid_platform.table.scan_combine import combine_tasks
from acid_platform.table.schema import table_schema

log = logging.getLogger(__name__)


class SplitPartition(InputPartition):
    """One split of a read under a pinned snapshot: what a Spark task needs, picklable (no
    metastore, no open files)."""

    def __init__(
        self, task: ScanTask, write_ids: str, location: str, lease: Lease | None = None
    ) -> None:
        self.task = task
        self.write_ids = write_ids
        self.location = location
        #: (metastore url, txn timeout, lease id, time opened) when the snapshot has a lease
        self.lease = lease

    @property
    def split(self) -> ReadSplit:
        """The bucket files the task reads."""
        return self.task.split


class SlotPartition(InputPartition):
    """Task ``slot`` of ``slots`` of a read at each query's latest snapshot: it reads every
    ``slots``-th split of the table under its query's snapshot. ``planned`` is the snapshot of
    the planning (valid txns, write ids, lease), read by a task that runs outside any SQL
    execution (an RDD job), where no query snapshot can be agreed on."""

    def __init__(
        self, slot: int, slots: int, planned: tuple[str, str, Lease | None] | None = None
    ) -> None:
        self.slot = slot
        self.slots = slots
        self.planned = planned


class AcidSourceReader(DataSourceReader):
    """Reads the columns of ``schema`` from one table: at each query's latest snapshot, or at
    the one the options pin (see module docs)."""

    def __init__(
        self,
        options: SourceOptions,
        spec: TableSpec,
        schema: StructType,
        partition_filters: Sequence[Conjunct] = (),
        unscaled: frozenset[str] = frozenset(),
    ) -> None:
        self._options = options
        self._spec = spec
        self._with_row_id, data_columns, partition_columns = output_columns(
            spec, schema, options.with_row_id
        )
        self._columns = data_columns + partition_columns
        self._names = [f.name for f in schema.fields]
        self._arrow_schema = spark_arrow_schema(schema)
        #: decimal columns ``schema`` has as ``long``: sent as their unscaled values (the JVM
        #: scan's request, :func:`~.schema.unscaled_int64`)
        self._unscaled = unscaled
        self._row_filters: list[Conjunct] = []
        #: partitions to read: a scan by name's (planned for that scan only, see
        #: :mod:`.table_scans`) or, in :class:`PushdownReader`, the filters Spark pushed
        self._partition_filters: list[Conjunct] = list(partition_filters)
        #: this planned read: the scope of its queries' snapshots without a ``query_scope``
        self._token = uuid.uuid4().hex

    # ------------------------------------------------------------------ planning (driver side)
    def partitions(self) -> Sequence[InputPartition]:
        """Under a pinned snapshot, one partition per split; else as many as the table's splits
        as it is now make combined (:func:`~acid_platform.table.scan_combine.combine_tasks`:
        1,800 one-day splits of a few hundred kB are a few tasks), each reading its share of
        its query's splits (see module docs)."""
        opts, spec = self._options, self._spec
        snapshot, lease = self._planning_snapshot()
        tasks = planned_tasks(spec, snapshot, self._columns, self._pruning())
        log.info("acid read of %s: %d split(s) at %s", opts.table, len(tasks), snapshot.write_ids)
        if opts.pinned:
            return [SplitPartition(t, str(snapshot.write_ids), spec.location, lease) for t in tasks]
        planned = (str(snapshot.valid_txns or ""), str(snapshot.write_ids), lease)
        # small splits share a task (Spark's maxPartitionBytes / openCostInBytes rule)
        slots = max(1, len(combine_tasks(tasks, parallelism=os.cpu_count() or 1)))
        return [SlotPartition(i, slots, planned) for i in range(slots)]

    # ------------------------------------------------------------------ reading (executors)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The visible rows of one task, one stripe at a time, as Spark's Arrow batches."""
        if isinstance(partition, SplitPartition):
            if partition.lease is not None:
                keep_lease(partition.lease)
            tasks: Sequence[ScanTask] = [partition.task]
            write_ids = parsed_write_ids(partition.write_ids)
        elif isinstance(partition, SlotPartition):
            tasks, write_ids = self._query_share(partition)
        else:
            return  # an empty pinned read: Spark still runs one task
        location = table_location(self._spec.location).filesystem
        for task in tasks:
            yield from self._read_task(task, location, write_ids)

    def _read_task(
        self, task: ScanTask, filesystem: object, write_ids: ValidWriteIdList
    ) -> Iterator[pa.RecordBatch]:
        for batch in read_task(
            task,
            self._spec,
            filesystem,  # type: ignore[arg-type]
            write_ids,
            self._columns,
            with_row_id=self._with_row_id,
            filters=self._row_filters or None,
        ):
            if self._names:
                out = pa.RecordBatch.from_arrays(
                    [scan_column(batch, c.lower()) for c in self._names], names=self._names
                )
            else:  # no columns at all (e.g. a count): rows still count
                out = pa.RecordBatch.from_struct_array(
                    pa.array([{}] * batch.num_rows, pa.struct([]))
                )
            yield from spark_batches(out, self._arrow_schema, unscaled=self._unscaled)

    def _query_share(self, partition: SlotPartition) -> tuple[Sequence[ScanTask], ValidWriteIdList]:
        """The splits this task reads, and the write ids of the snapshot they are read at."""
        execution = execution_id()
        if execution is None and partition.planned is not None:
            valid_txns, write_ids, lease = partition.planned
            if lease is not None:
                keep_lease(lease)
            snapshot = Snapshot(
                ValidTxnList.parse(valid_txns) if valid_txns else None,
                parsed_write_ids(write_ids),
            )
            tasks = planned_tasks(self._spec, snapshot, self._columns, self._pruning())
            return tasks[partition.slot :: partition.slots], snapshot.write_ids
        scope = self._options.query_scope or self._token
        splits = query_splits(
            self._options,
            self._spec,
            self._token,
            scope,
            execution or "-",
            self._columns,
            self._pruning(),
        )
        if splits.lease is not None:
            keep_lease(splits.lease)
        return splits.share(partition.slot, partition.slots), splits.snapshot.write_ids

    # ------------------------------------------------------------------ helpers
    def _pruning(self) -> functools.partial[list[int]] | None:
        if not self._partition_filters:
            return None
        return functools.partial(matching_rows, conjuncts=self._partition_filters)

    def _planning_snapshot(self) -> tuple[Snapshot, Lease | None]:
        """The pinned snapshot, else a new one with a reader lease (see :func:`take_snapshot`)."""
        opts, spec = self._options, self._spec
        if opts.valid_write_ids:
            txns = ValidTxnList.parse(opts.valid_txns) if opts.valid_txns else None
            return Snapshot(txns, ValidWriteIdList.parse(opts.valid_write_ids)), None
        if opts.transaction is not None:  # the shared wh.transaction(): its own writes too
            txns = ValidTxnList.parse(opts.transaction.valid_txns)
            write_ids = opts.metastore().valid_write_ids(
                opts.transaction.txn_id, spec.db, spec.name, valid_txns=txns
            )
            return Snapshot(txns, write_ids), None
        snapshots, lease_id = take_snapshot(
            opts.metastore(),
            [spec],
            lease=opts.conf_bool("acid.scan.read.lease"),
            agent="spark scan",
        )
        lease = None
        if lease_id is not None:  # kept alive by the tasks (see read), expires after the query
            lease = (opts.metastore_url, opts.txn_timeout_s, lease_id, time.time())
        snapshot = snapshots[spec.full_name]
        if opts.as_of_write_id is not None:
            snapshot = Snapshot(snapshot.valid_txns, as_of(snapshot.write_ids, opts.as_of_write_id))
        return snapshot, lease


class PushdownReader(AcidSourceReader):
    """:class:`AcidSourceReader` that keeps the filters Spark pushes and evaluates exactly
    (partition pruning, stripe statistics, rows): only for a relation scanned once by one query
    under a pinned snapshot (the internal ``pushdown`` option of ``SparkEngine``'s statements), as
    Spark hands this reader to every later scan of the relation (see module docs). Needs
    ``spark.sql.python.filterPushdown.enabled``."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 - Spark's name
        """Keep the filters the reader evaluates exactly; hand back the others."""
        types = {f.name: f.type for f in table_schema(self._spec)}
        partition_columns = set(self._spec.partition_column_names)
        for f in filters:
            conjunct = translate(f, types)
            if conjunct is None:
                yield f
            elif conjunct[0] in partition_columns:
                self._partition_filters.append(conjunct)
            else:
                self._row_filters.append(conjunct)


def as_of(write_ids: ValidWriteIdList, write_id: int) -> ValidWriteIdList:
    """``write_ids`` as of ``write_id``: the writes up to it that are committed in
    ``write_ids`` (time travel; the files must still be there)."""
    hwm = min(write_id, write_ids.high_watermark)
    return ValidWriteIdList.of(
        write_ids.table_name,
        hwm,
        [w for w in write_ids.open_write_ids if w <= hwm],
        [w for w in write_ids.aborted_write_ids if w <= hwm],
    )


@functools.lru_cache(maxsize=64)
def parsed_write_ids(text: str) -> ValidWriteIdList:
    """Parsed once per snapshot and Python worker (workers serve many tasks)."""
    return ValidWriteIdList.parse(text)


def keep_lease(lease: Lease) -> None:
    """Heartbeat the scan's reader lease from a task once half its time-to-live has passed."""
    url, timeout_s, lease_id, opened = lease
    if time.time() - opened < timeout_s / 2:
        return
    try:
        open_metastore(url, timeout_s).heartbeat_read_lease(lease_id)
    except Exception as exc:  # noqa: BLE001 - the lease is an optimisation for the cleaner
        log.warning("could not heartbeat reader lease %s: %s", lease_id, exc)


def __getattr__(name: str) -> Any:
    if name == "AcidReader":  # renamed: the Dagster resource of that name is another thing
        deprecated(f"{__name__}.AcidReader", f"{__name__}.AcidSourceReader")
        return AcidSourceReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
