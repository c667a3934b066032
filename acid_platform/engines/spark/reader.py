"""Reading an ACID table in parallel: one Spark input partition per (partition dir, bucket).

Planning (``partitions``) runs once per query beside the driver: it takes ONE snapshot (or uses
the one passed in the options, e.g. a transaction's), registers it with the cleaner as a reader
lease, and hands the table layer's scan planner (:func:`~acid_platform.table.scan.plan_scan`)
the partition filters Spark pushed: it lists and prunes the partition directories, selects each
one's files for the snapshot (``getAcidState``) and cuts them into picklable
:class:`~acid_platform.table.scan.ScanTask` s, one per bucket. Each Spark task then reads one
(:func:`~acid_platform.table.scan.read_task`: insert events minus the bucket's valid delete
events, stripe by stripe, partition columns added) and yields Arrow batches.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from acid_platform.engines.spark.filters import Conjunct, matching_rows, translate
from acid_platform.engines.spark.options import SourceOptions, open_metastore, table_location
from acid_platform.engines.spark.schema import output_columns, spark_arrow_schema, to_spark_batch
from acid_platform.format import ReadSplit, Snapshot, ValidTxnList, ValidWriteIdList
from acid_platform.metastore.model import TableSpec
from acid_platform.table.read_lease import take_snapshot
from acid_platform.table.scan import ScanTask, plan_scan, read_task
from acid_platform.table.scan_filter import ScanFilter
from acid_platform.table.schema import table_schema

log = logging.getLogger(__name__)


class SplitPartition(InputPartition):
    """One task of one read: what a Spark task needs, picklable (no metastore, no open files)."""

    def __init__(
        self,
        task: ScanTask,
        write_ids: str,
        location: str,
        lease: tuple[str, float, int, float] | None = None,
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


class AcidReader(DataSourceReader):
    """Reads the columns of ``schema`` from one table under one snapshot."""

    def __init__(self, options: SourceOptions, spec: TableSpec, schema: StructType) -> None:
        self._options = options
        self._spec = spec
        self._with_row_id, data_columns, partition_columns = output_columns(
            spec, schema, options.with_row_id
        )
        self._columns = data_columns + partition_columns
        self._names = [f.name for f in schema.fields]
        self._arrow_schema = spark_arrow_schema(schema)
        self._row_filters: list[Conjunct] = []
        self._partition_filters: list[Conjunct] = []

    # ------------------------------------------------------------------ planning (driver side)
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

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the tasks under one snapshot (see module docs)."""
        opts, spec = self._options, self._spec
        snapshot, lease = self._snapshot()
        write_ids = snapshot.write_ids
        pruning = functools.partial(matching_rows, conjuncts=self._partition_filters)
        scan = plan_scan(
            spec,
            table_location(spec.location),
            snapshot,
            columns=self._columns,
            where=ScanFilter(partitions=pruning if self._partition_filters else None),
        )
        out = [SplitPartition(t, str(write_ids), spec.location, lease) for t in scan.split_tasks()]
        log.info("acid read of %s: %d split(s), snapshot %s", opts.table, len(out), write_ids)
        return out

    # ------------------------------------------------------------------ reading (executors)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The visible rows of one task, one stripe at a time, as Spark's Arrow batches."""
        if not isinstance(partition, SplitPartition):
            return  # an empty table: Spark still runs one task
        if partition.lease is not None:
            keep_lease(partition.lease)
        for batch in read_task(
            partition.task,
            self._spec,
            table_location(partition.location).filesystem,
            parsed_write_ids(partition.write_ids),
            self._columns,
            with_row_id=self._with_row_id,
            filters=self._row_filters or None,
        ):
            if self._names:
                out = pa.RecordBatch.from_arrays(
                    [batch.column(c.lower()) for c in self._names], names=self._names
                )
            else:  # no columns at all (e.g. a count): rows still count
                out = pa.RecordBatch.from_struct_array(
                    pa.array([{}] * batch.num_rows, pa.struct([]))
                )
            yield to_spark_batch(out, self._arrow_schema)

    # ------------------------------------------------------------------ helpers
    def _snapshot(self) -> tuple[Snapshot, tuple[str, float, int, float] | None]:
        """The options' snapshot, else a new one with a reader lease (see :func:`take_snapshot`)."""
        opts, spec = self._options, self._spec
        if opts.valid_write_ids:
            txns = ValidTxnList.parse(opts.valid_txns) if opts.valid_txns else None
            return Snapshot(txns, ValidWriteIdList.parse(opts.valid_write_ids)), None
        snapshots, lease_id = take_snapshot(
            opts.metastore(),
            [spec],
            lease=opts.conf_bool("acid.scan.read.lease"),
            agent="spark scan",
        )
        lease = None
        if lease_id is not None:  # kept alive by the tasks (see read), expires after the query
            lease = (opts.metastore_url, opts.txn_timeout_s, lease_id, time.time())
        return snapshots[spec.full_name], lease


@functools.lru_cache(maxsize=64)
def parsed_write_ids(text: str) -> ValidWriteIdList:
    """Parsed once per snapshot and Python worker (workers serve many tasks)."""
    return ValidWriteIdList.parse(text)


def keep_lease(lease: tuple[str, float, int, float]) -> None:
    """Heartbeat the scan's reader lease from a task once half its time-to-live has passed."""
    url, timeout_s, lease_id, opened = lease
    if time.time() - opened < timeout_s / 2:
        return
    try:
        open_metastore(url, timeout_s).heartbeat_read_lease(lease_id)
    except Exception as exc:  # noqa: BLE001 - the lease is an optimisation for the cleaner
        log.warning("could not heartbeat reader lease %s: %s", lease_id, exc)
