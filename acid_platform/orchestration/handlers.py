"""Type handlers of :class:`~.io_manager.AcidTableIOManager`: what an output of each type
becomes (a :class:`~.frames.Frame` the writes take) and what a load returns.

:class:`AcidTypeHandler` holds the one path every type goes through::

    handle_output: write options (metadata) -> the output as a Frame (converted once) -> create
    the table on first write -> slice (partition_expr) -> check and write in one transaction
    (:mod:`.writes`) -> metadata (:mod:`.metadata`; the type's ``writer_metadata``: who wrote)
    load_input: one snapshot (held until the step ends) -> the slice's rows, ``columns`` only

Subclasses say how their type converts (:meth:`AcidTypeHandler.frame`, once per output) and
loads: :class:`ArrowTypeHandler` (``pyarrow.Table``, ``RecordBatchReader``),
:class:`PandasTypeHandler`, and the Spark one in :mod:`.spark_io`.
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
    table_layout,
    write_options,
)
from acid_platform.orchestration.reading import TableRead, TableSnapshot
from acid_platform.orchestration.slices import Slice, partition_columns, slice_of
from acid_platform.orchestration.writes import (
    check_columns,
    check_in_slice,
    partitions_in,
    referenced,
    write_slice,
)
from acid_platform.table import Table
from acid_platform.table.statement import StatementMetrics
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from acid_platform.orchestration.connection import AcidConnection

T = TypeVar("T")


class AcidTypeHandler(DbTypeHandler[T], Generic[T]):
    """The write and load path shared by every type (see module docs)."""

    @abstractmethod
    def frame(self, wh: Warehouse, obj: T) -> Frame:
        """``obj`` as the rows the writes take, converted ONCE per output (column names lower
        case; conformed to the table by :meth:`~.frames.Frame.conformed`)."""

    @abstractmethod
    def load(self, read: TableRead, connection: AcidConnection, target: type) -> T:
        """The rows of ``read`` as ``target``."""

    def writer_metadata(
        self, wh: Warehouse, obj: T, metrics: Sequence[StatementMetrics]
    ) -> Mapping[str, Any]:
        """What the type adds to the metadata of an output ``obj`` written by the statements
        ``metrics`` (who wrote it; the Spark handler: the application and its tasks); nothing by
        default."""
        return {}

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
        exists = wh.table_exists(name)
        if not exists and options.mode is WriteMode.DELETE:
            raise NoSuchObjectError(
                f"asset {asset}: table {name} does not exist; there is nothing to delete"
            )
        rows = self.frame(wh, obj)
        if not exists:
            layout = table_layout(definition, partition_columns(dims, asset), asset)
            schema = rows.schema()
            first = slice_of(name, dims, _types(schema), partitions_def, asset)
            check_in_slice(rows, first)
            create_table(wh, name, schema, layout, asset)
        table = wh.table(name)
        check_columns(table, rows.schema().names, options)
        slice_ = slice_of(name, dims, _types(table.schema), partitions_def, asset)
        conformed = rows.conformed(table, keys_only=options.mode is WriteMode.DELETE)
        metrics = write_slice(table, conformed, options, slice_)
        health = table_health(table, slice_partitions(table, slice_), connection.row_counts)
        partitions = len(context.asset_partition_keys) if dims else 0
        metadata = materialization_metadata(table, options.mode.value, metrics, health, partitions)
        return {**metadata, **self.writer_metadata(wh, obj, metrics)}

    def load_input(
        self, context: InputContext, table_slice: TableSlice, connection: AcidConnection
    ) -> T:
        upstream = context.upstream_output
        name = connection.table_name(upstream or context, table_slice)
        asset = context.asset_key.to_user_string() if context.has_asset_key else name
        snapshot = connection.resource.hold(TableSnapshot(connection.warehouse, [name]))
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

    def frame(self, wh: Warehouse, obj: pa.Table | pa.RecordBatchReader) -> Frame:
        data = obj.read_all() if isinstance(obj, pa.RecordBatchReader) else obj
        return ArrowFrame.of(data, wh.engine)

    def load(
        self, read: TableRead, connection: AcidConnection, target: type
    ) -> pa.Table | pa.RecordBatchReader:
        return read.to_batches() if target is pa.RecordBatchReader else read.to_arrow()

    @property
    def supported_types(self) -> Sequence[type[object]]:
        return [pa.Table, pa.RecordBatchReader]


class PandasTypeHandler(AcidTypeHandler[Any]):
    """``pandas.DataFrame`` outputs and loads (through Arrow; the index is not stored). An
    output is converted to Arrow once: its column types are inferred once, not per question."""

    def frame(self, wh: Warehouse, obj: Any) -> Frame:
        return ArrowFrame.of(pa.Table.from_pandas(obj, preserve_index=False), wh.engine)

    def load(self, read: TableRead, connection: AcidConnection, target: type) -> Any:
        return read.to_pandas()

    @property
    def supported_types(self) -> Sequence[type[object]]:
        import pandas as pd

        return [pd.DataFrame]


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
        stored_as=layout.stored_as,
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


__all__ = [
    "AcidTypeHandler",
    "ArrowTypeHandler",
    "PandasTypeHandler",
    "create_table",
    "slice_partitions",
]
