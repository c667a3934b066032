"""``AcidTableIOManager``: assets as Hive ACID tables, in the shape of dagster-deltalake and
dagster-iceberg (a config factory -> Dagster's ``DbIOManager`` -> a client -> type handlers).

::

    acid = AcidWarehouseResource(warehouse="/data/wh")
    defs = Definitions(
        assets=[daily_sales],
        resources={"acid_warehouse": acid, "io_manager": AcidTableIOManager(acid_warehouse=acid)},
    )

    @asset(
        key_prefix=["sales"],                             # the database (Hive's)
        partitions_def=DailyPartitionsDefinition("2024-01-01"),
        metadata={"partition_expr": "ds", "write_mode": "overwrite"},
    )
    def daily_sales(context) -> pa.Table: ...             # table sales.daily_sales, partition ds=…

Conventions are Dagster's: the table is the last part of the asset key, the database the
``schema`` metadata, else the IO manager's ``schema``, else the key prefix, else ``default``;
``partition_expr`` names the column of each partition dimension (a dict for multi partitions);
``AssetIn(metadata={"columns": [...]})`` projects a load. The writes (:mod:`.writes`) replace
a slice in ONE transaction — ``delete_table_slice`` is deliberately empty — and the mode comes
from metadata (:mod:`.options`). Loads read one snapshot, held until the step ends.
"""

# Pydantic reads these classes' annotations at run time: no postponed evaluation here.

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal, cast

import pyarrow as pa
from dagster import (
    ConfigurableIOManagerFactory,
    InitResourceContext,
    InputContext,
    OutputContext,
    ResourceDependency,
    TimeWindow,
)
from dagster._core.storage.db_io_manager import DbClient, DbIOManager, DbTypeHandler, TableSlice
from pydantic import Field
from sqlglot import exp

from acid_platform.errors import AssetMetadataError
from acid_platform.orchestration.connection import AcidConnection, table_for_asset
from acid_platform.orchestration.handlers import ArrowTypeHandler, PandasTypeHandler
from acid_platform.orchestration.options import PARTITION_EXPR
from acid_platform.orchestration.resources import AcidWarehouseResource
from acid_platform.table import DEFAULT_DATABASE

#: What ``DbIOManager`` calls the database of an asset without key prefix or schema.
_DAGSTER_DEFAULT_SCHEMA = "public"


class AcidDbClient(DbClient[AcidConnection]):
    """The IO manager's client: hands the handlers an :class:`AcidConnection`."""

    def __init__(self, connection: AcidConnection) -> None:
        self.connection = connection

    @contextmanager
    def connect(  # type: ignore[override]
        self, context: OutputContext | InputContext, table_slice: TableSlice
    ) -> Iterator[AcidConnection]:
        yield self.connection

    def ensure_schema_exists(  # type: ignore[override]
        self, context: OutputContext, table_slice: TableSlice, connection: AcidConnection
    ) -> None:
        """Nothing here: the handler creates the database with the table, after the output
        has been checked (a bad output creates nothing)."""

    def delete_table_slice(  # type: ignore[override]
        self, context: OutputContext, table_slice: TableSlice, connection: AcidConnection
    ) -> None:
        """Nothing here: the write replaces the slice inside its own transaction (a separate
        delete first would let readers see the slice empty, and a failure leave it so)."""

    def get_select_statement(self, table_slice: TableSlice) -> str:  # type: ignore[override]
        """An illustrative SELECT of the slice (shown as ``Query`` in the UI), built as a
        syntax tree: partition keys are literals, never pasted text."""
        cols: list[exp.Expr] = [exp.column(c) for c in table_slice.columns or []] or [exp.Star()]
        where: list[exp.Expr] = []
        for dim in table_slice.partition_dimensions or []:
            col, parts = exp.column(dim.partition_expr), dim.partitions
            if isinstance(parts, TimeWindow):
                start, end = (exp.Literal.string(str(t)) for t in (parts.start, parts.end))
                where += [col >= start, col.copy() < end]
            else:
                where.append(col.isin(*(exp.Literal.string(str(k)) for k in parts)))
        db = table_slice.schema
        if db == _DAGSTER_DEFAULT_SCHEMA and self.connection.schema is None:
            db = DEFAULT_DATABASE
        query = exp.select(*cols).from_(exp.table_(table_slice.table, db=db))
        return (query.where(*where) if where else query).sql(dialect="hive")


class AcidDbIOManager(DbIOManager):
    """``DbIOManager`` that refuses a partitioned asset without ``partition_expr`` with a
    typed error (:class:`~acid_platform.errors.AssetMetadataError`) before anything is written."""

    def handle_output(self, context: OutputContext, obj: object) -> None:
        if context.has_asset_partitions and not (context.definition_metadata or {}).get(
            PARTITION_EXPR
        ):
            raise AssetMetadataError(
                f"asset {context.asset_key.to_user_string()} is partitioned but has no "
                f"{PARTITION_EXPR!r} metadata naming the column that holds its partitions, e.g. "
                f'@asset(metadata={{"{PARTITION_EXPR}": "ds"}}); nothing was written'
            )
        super().handle_output(context, obj)


class AcidTableIOManager(ConfigurableIOManagerFactory):
    """Writes asset outputs to Hive ACID tables and loads them (see module docs). Subclass
    and override :meth:`type_handlers` to change the types handled."""

    acid_warehouse: ResourceDependency[AcidWarehouseResource]
    schema_: str | None = Field(
        default=None,
        alias="schema",
        description="Database of every asset (over the key prefix; the `schema` metadata wins).",
    )
    default_write_mode: Literal["append", "overwrite", "merge", "delete"] = Field(
        default="overwrite",
        description="The mode of outputs whose metadata names none (see `write_mode`).",
    )
    row_counts: bool = Field(
        default=True,
        description="Count the table's rows after each write from the ORC footers of its files "
        "(dagster/row_count, dagster/partition_row_count, delete_ratio).",
    )

    @staticmethod
    def type_handlers() -> Sequence[DbTypeHandler]:
        """pyarrow, pandas and Spark DataFrames."""
        from acid_platform.orchestration.spark_io import SparkTypeHandler

        return [ArrowTypeHandler(), PandasTypeHandler(), SparkTypeHandler()]

    @staticmethod
    def default_load_type() -> type | None:
        """Inputs without a type annotation load as ``pyarrow.Table``."""
        return pa.Table

    def create_io_manager(self, context: InitResourceContext) -> DbIOManager:
        connection = AcidConnection(
            cast(AcidWarehouseResource, self.acid_warehouse),
            self.schema_,
            self.default_write_mode,
            self.row_counts,
        )
        return AcidDbIOManager(
            type_handlers=self.type_handlers(),
            db_client=AcidDbClient(connection),
            database="acid",
            schema=self.schema_,
            io_manager_name="AcidTableIOManager",
            default_load_type=self.default_load_type(),
        )


__all__ = [
    "AcidConnection",
    "AcidDbClient",
    "AcidDbIOManager",
    "AcidTableIOManager",
    "table_for_asset",
]
