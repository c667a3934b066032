"""Reading an ACID table in parallel: one Spark input partition per (partition dir, bucket).

Planning (``partitions``) runs once per query beside the driver: it takes ONE snapshot (or uses
the one passed in the options, e.g. a transaction's), registers it with the cleaner as a reader
lease, lists the partition directories the pushed filters leave, selects each directory's files
for the snapshot (``getAcidState``) and groups them per bucket into picklable
:class:`~acid_platform.format.ReadSplit` s. Each task then merges one split on read
(:func:`~acid_platform.format.read_split`: insert events minus the bucket's valid delete events)
stripe by stripe, adds the partition columns and yields Arrow batches.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from acid_platform.engines.spark.filters import Conjunct, matching_rows, translate
from acid_platform.engines.spark.options import SourceOptions, open_metastore, table_location
from acid_platform.engines.spark.schema import output_columns, spark_arrow_schema, to_spark_batch
from acid_platform.format import (
    ReadSplit,
    ValidTxnList,
    ValidWriteIdList,
    acid_state,
    list_partition_dirs,
    plan_splits,
    read_split,
)
from acid_platform.metastore.model import TableSpec
from acid_platform.table.partitions import partition_values_table
from acid_platform.table.schema import data_schema, partition_schema, table_schema

log = logging.getLogger(__name__)


class SplitPartition(InputPartition):
    """One split of one read: what a task needs, picklable (no metastore, no open files)."""

    def __init__(
        self,
        split: ReadSplit,
        partition_values: tuple[Any, ...],
        write_ids: str,
        location: str,
        lease: tuple[str, float, int, float] | None = None,
    ) -> None:
        self.split = split
        self.partition_values = partition_values
        self.write_ids = write_ids
        self.location = location
        #: (metastore url, txn timeout, lease id, time opened) when the snapshot has a lease
        self.lease = lease


class AcidReader(DataSourceReader):
    """Reads the columns of ``schema`` from one table under one snapshot."""

    def __init__(self, options: SourceOptions, spec: TableSpec, schema: StructType) -> None:
        self._options = options
        self._spec = spec
        self._with_row_id, self._data_columns, self._partition_columns = output_columns(
            spec, schema, options.with_row_id
        )
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
        """Plan the splits under one snapshot (see module docs)."""
        opts, spec = self._options, self._spec
        write_ids, valid_txns, lease = self._snapshot()
        location = table_location(spec.location)
        fs = location.filesystem
        out: list[InputPartition] = []
        for name, path, values in self._partition_dirs():
            state = acid_state(path, write_ids, valid_txns, filesystem=fs)
            for split in plan_splits(state, write_ids, partition=name or None):
                out.append(SplitPartition(split, values, str(write_ids), spec.location, lease))
        log.info("acid read of %s: %d split(s), snapshot %s", opts.table, len(out), write_ids)
        return out

    # ------------------------------------------------------------------ reading (executors)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The visible rows of one split, one stripe at a time, as Spark's Arrow batches."""
        if not isinstance(partition, SplitPartition):
            return  # an empty table: Spark still runs one task
        if partition.lease is not None:
            _keep_lease(partition.lease)
        location = table_location(partition.location)
        spec = self._spec
        part_fields = [table_schema(spec).field(c) for c in self._partition_columns]
        part_values = dict(
            zip(spec.partition_column_names, partition.partition_values, strict=True)
        )
        for batch in read_split(
            partition.split,
            location.filesystem,
            _write_ids(partition.write_ids),
            columns=self._data_columns,
            with_row_id=self._with_row_id,
            filters=[self._row_filters] if self._row_filters else None,
            schema=data_schema(spec),
        ):
            n = batch.num_rows
            arrays = {name: batch.column(name) for name in batch.schema.names}
            for f in part_fields:
                arrays[f.name] = pa.repeat(pa.scalar(part_values[f.name], f.type), n)
            if self._names:
                out = pa.RecordBatch.from_arrays(
                    [arrays[c.lower()] for c in self._names], names=self._names
                )
            else:  # no columns at all (e.g. a count): rows still count
                out = pa.RecordBatch.from_struct_array(pa.array([{}] * n, pa.struct([])))
            yield to_spark_batch(out, self._arrow_schema)

    # ------------------------------------------------------------------ helpers
    def _snapshot(
        self,
    ) -> tuple[ValidWriteIdList, ValidTxnList | None, tuple[str, float, int, float] | None]:
        opts, spec = self._options, self._spec
        if opts.valid_write_ids:
            txns = ValidTxnList.parse(opts.valid_txns) if opts.valid_txns else None
            return ValidWriteIdList.parse(opts.valid_write_ids), txns, None
        ms = opts.metastore()
        lease = None
        if opts.conf_bool("acid.scan.read.lease"):
            # the lease first, on a snapshot no newer than the one read: a cleaner running in
            # between is held back only by a registered lease
            lease_id = ms.open_read_lease(
                ms.valid_txns(), agent_info=f"spark scan {spec.full_name}"[:128]
            )
            lease = (opts.metastore_url, opts.txn_timeout_s, lease_id, time.time())
        valid_txns = ms.valid_txns()
        write_ids = ms.valid_write_ids(None, spec.db, spec.name, valid_txns=valid_txns)
        return write_ids, valid_txns, lease

    def _partition_dirs(self) -> list[tuple[str, str, tuple[Any, ...]]]:
        spec = self._spec
        location = table_location(spec.location)
        listed = list_partition_dirs(
            location.path, list(spec.partition_column_names), location.filesystem
        )
        if not spec.partition_columns:
            return [(name, path, ()) for name, path in listed]
        columns = [(f.name, f.type) for f in partition_schema(spec)]
        values = partition_values_table([n for n, _ in listed], columns, spec.full_name)
        keep = matching_rows(values, self._partition_filters)
        rows = values.take(pa.array(keep, pa.int64())).to_pylist()
        return [
            (listed[i][0], listed[i][1], tuple(row[c] for c, _ in columns))
            for i, row in zip(keep, rows, strict=True)
        ]


@functools.lru_cache(maxsize=64)
def _write_ids(text: str) -> ValidWriteIdList:
    """Parsed once per snapshot and Python worker (workers serve many tasks)."""
    return ValidWriteIdList.parse(text)


def _keep_lease(lease: tuple[str, float, int, float]) -> None:
    """Heartbeat the scan's reader lease from a task once half its time-to-live has passed."""
    url, timeout_s, lease_id, opened = lease
    if time.time() - opened < timeout_s / 2:
        return
    try:
        open_metastore(url, timeout_s).heartbeat_read_lease(lease_id)
    except Exception as exc:  # noqa: BLE001 - the lease is an optimisation for the cleaner
        log.warning("could not heartbeat reader lease %s: %s", lease_id, exc)
