"""Type handlers of :class:`~.io_manager.AcidTableIOManager`: what an output of each type
becomes (a :class:`~.frames.Frame` the writes take) and what a load returns.

:class:`AcidTypeHandler` holds the one path every type goes through::

    handle_output: write options (metadata) -> slice (partition_expr) -> create the table on
    first write -> check and write in one transaction (:mod:`.writes`) -> metadata (:mod:`.metadata`)
    load_input: one snapshot (held until the step ends) -> the slice's rows, ``columns`` only

Subclasses say how their type converts: :class:`ArrowTypeHandler` (``pyarrow.Table``,
``RecordBatchReader``), :class:`PandasTypeHandler`, and the Spark one in :mod:`.spark_io`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyarrow as pa
from dagster import InputContext, OutputContext
from dagster._core.storage.db_io_manager import DbTypeHandler, TableSlice

from acid_platform.errors import AssetMetadataError, NoSuchObjectError
from acid_platform.orchestration.frames import ArrowFrame, Frame
from acid_platform.orchestration.health import table_health
from acid_platform.orchestration.metadata import materialization_metadata
from acid_platform.orchestration.options import (
    TableLayout,
    WriteMode,
    WriteOptions,
    table_layout,
    write_options,
)
from acid_platform.orchestration.reading import TableRead
from acid_platform.orchestration.slices import Slice, partition_columns, slice_of
from acid_platform.orchestration.writes import (
    check_columns,
    check_in_slice,
    partitions_in,
    referenced,
    write_slice,
)
from acid_platform.table import Table
from acid_platform.table.schema import conform
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from acid_platform.orchestration.io_manager import AcidConnection

T = TypeVar("T")


class AcidTypeHandler(DbTypeHandler[T], Generic[T]):
    """The write and load path shared by every type (see module docs)."""

    @abstractmethod
    def frame(self, wh: Warehouse, table: Table | None, obj: T, options: WriteOptions) -> Frame:
        """``obj`` as the rows the writes take (conformed to ``table`` where the type allows;
        as they are before the table exists)."""

    @abstractmethod
    def schema(self, obj: T) -> pa.Schema:
        """The Arrow schema of ``obj`` (a new table is created from it)."""

    @abstractmethod
    def load(self, read: TableRead, connection: AcidConnection, target: type) -> T:
        """The rows of ``read`` as ``target``."""

    def handle_output(
        self, context: OutputContext, table_slice: TableSlice, obj: T, connection: AcidConnection
    ) -> Mapping[str, Any]:
        asset = context.asset_key.to_user_string() if context.has_asset_key else context.name
        name = connection.table_name(context, table_slice)
        definition = context.definition_metadata or {}
        options = write_options(
            definition, context.output_metadata or {}, connection.default_write_mode, asset
        )
        dims = table_slice.partition_dimensions or []
        partitions_def = context.asset_partitions_def if context.has_asset_partitions else None
        wh = connection.warehouse
        if not wh.table_exists(name):
            if options.mode is WriteMode.DELETE:
                raise NoSuchObjectError(
                    f"asset {asset}: table {name} does not exist; there is nothing to delete"
                )
            layout = table_layout(definition, partition_columns(dims, asset), asset)
            schema = self.schema(obj)
            first = slice_of(name, dims, _types(schema), partitions_def, asset)
            check_in_slice(self.frame(wh, None, obj, options), first)
            create_table(wh, name, schema, layout, asset)
        table = wh.table(name)
        check_columns(table, self.schema(obj).names, options)
        slice_ = slice_of(name, dims, _types(table.schema), partitions_def, asset)
        metrics = write_slice(table, self.frame(wh, table, obj, options), options, slice_)
        health = table_health(table, slice_partitions(table, slice_), connection.row_counts)
        partitions = len(context.asset_partition_keys) if dims else 0
        return materialization_metadata(table, options.mode.value, metrics, health, partitions)

    def load_input(
        self, context: InputContext, table_slice: TableSlice, connection: AcidConnection
    ) -> T:
        upstream = context.upstream_output
        name = connection.table_name(upstream or context, table_slice)
        asset = context.asset_key.to_user_string() if context.has_asset_key else name
        snapshot = connection.resource.snapshot(name)
        table = snapshot.table(name)
        partitions_def = context.asset_partitions_def if context.has_asset_partitions else None
        slice_ = slice_of(
            name,
            table_slice.partition_dimensions or [],
            _types(table.schema),
            partitions_def,
            asset,
        )
        read = TableRead(
            table, snapshot.snapshots[table.name], table_slice.columns, slice_.predicate
        )
        return self.load(read, connection, context.dagster_type.typing_type)


class ArrowTypeHandler(AcidTypeHandler[pa.Table | pa.RecordBatchReader]):
    """``pyarrow.Table`` (and ``RecordBatchReader``) outputs and loads."""

    def frame(
        self,
        wh: Warehouse,
        table: Table | None,
        obj: pa.Table | pa.RecordBatchReader,
        options: WriteOptions,
    ) -> Frame:
        return arrow_frame(wh, table, _arrow(obj), options)

    def schema(self, obj: pa.Table | pa.RecordBatchReader) -> pa.Schema:
        return obj.schema

    def load(
        self, read: TableRead, connection: AcidConnection, target: type
    ) -> pa.Table | pa.RecordBatchReader:
        return read.to_batches() if target is pa.RecordBatchReader else read.to_arrow()

    @property
    def supported_types(self) -> Sequence[type[object]]:
        return [pa.Table, pa.RecordBatchReader]


class PandasTypeHandler(AcidTypeHandler[Any]):
    """``pandas.DataFrame`` outputs and loads (through Arrow; the index is not stored)."""

    def frame(self, wh: Warehouse, table: Table | None, obj: Any, options: WriteOptions) -> Frame:
        return arrow_frame(wh, table, pa.Table.from_pandas(obj, preserve_index=False), options)

    def schema(self, obj: Any) -> pa.Schema:
        return pa.Schema.from_pandas(obj, preserve_index=False)

    def load(self, read: TableRead, connection: AcidConnection, target: type) -> Any:
        return read.to_pandas()

    @property
    def supported_types(self) -> Sequence[type[object]]:
        import pandas as pd

        return [pd.DataFrame]


def arrow_frame(
    wh: Warehouse, table: Table | None, data: pa.Table, options: WriteOptions
) -> ArrowFrame:
    """Arrow rows conformed to ``table`` (names and types; a delete keeps only the table
    columns it has), so predicates compare like with like. The columns were checked
    (:func:`~.writes.check_columns`)."""
    have = {n.lower() for n in data.column_names}
    if table is None:
        return ArrowFrame(data.rename_columns([n.lower() for n in data.column_names]), wh.engine)
    target = table.schema
    if options.mode is WriteMode.DELETE:
        keep = [f for f in target if f.name in have]
        by_lower = {n.lower(): n for n in data.column_names}
        data = data.select([by_lower[f.name] for f in keep])
        target = pa.schema(keep)
    return ArrowFrame(conform(table.name, data, target), wh.engine)


def create_table(
    wh: Warehouse, name: str, schema: pa.Schema, layout: TableLayout, asset: str
) -> Table:
    """CREATE TABLE IF NOT EXISTS from an output's schema and the asset's layout (race-safe:
    concurrent first writes create it once)."""
    fields = {f.name.lower(): f.with_name(f.name.lower()) for f in schema}
    for key, cols in (
        ("partitioned_by", layout.partitioned_by),
        ("clustered_by", layout.clustered_by),
    ):
        unknown = [c for c in cols if c.lower() not in fields]
        if unknown:
            raise AssetMetadataError(
                f"asset {asset}: {key} column(s) {unknown} are not columns of the output "
                f"({sorted(fields)})"
            )
    parts = [c.lower() for c in layout.partitioned_by]
    data = [f for n, f in fields.items() if n not in parts]
    db = name.rpartition(".")[0]
    if db and not wh.database_exists(db):
        wh.create_database(db, if_not_exists=True)
    return wh.create_table(
        name,
        pa.schema(data),
        partition_columns=pa.schema([fields[c] for c in parts]),
        bucket_columns=[c.lower() for c in layout.clustered_by],
        num_buckets=layout.buckets,
        properties=layout.properties,
        if_not_exists=True,
    )


def slice_partitions(table: Table, slice_: Slice) -> list[str] | None:
    """The table's partitions the slice covers (``None`` when the slice is not a set of
    partitions: an unpartitioned asset, or a predicate on data columns)."""
    spec = table.refresh()
    if slice_.predicate is None or not spec.partition_columns:
        return None
    if not set(referenced(slice_.predicate)) <= set(spec.partition_column_names):
        return None
    return partitions_in(table, slice_.predicate)


def _types(schema: pa.Schema) -> dict[str, pa.DataType]:
    return {f.name.lower(): f.type for f in schema}


def _arrow(obj: pa.Table | pa.RecordBatchReader) -> pa.Table:
    return obj.read_all() if isinstance(obj, pa.RecordBatchReader) else obj


__all__ = [
    "AcidTypeHandler",
    "ArrowTypeHandler",
    "PandasTypeHandler",
    "arrow_frame",
    "create_table",
    "slice_partitions",
]
