"""``AcidTableComponent``: one Hive ACID table as an asset, declared in ``defs.yaml``."""

# no `from __future__ import annotations`: Dagster's Resolvable reads the annotations

from typing import Any, Literal

from dagster import (
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    Component,
    ComponentLoadContext,
    DailyPartitionsDefinition,
    Definitions,
    MaterializeResult,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    asset,
    scaffold_component,
    scaffold_with,
)

from acid_platform.metastore.names import split_table_name
from acid_platform.orchestration.checks import WAREHOUSE_META, acid_table_checks
from acid_platform.orchestration.components.settings import asset_key_of
from acid_platform.orchestration.health import table_health
from acid_platform.orchestration.metadata import materialization_metadata
from acid_platform.orchestration.options import (
    BUCKETS,
    CLUSTERED_BY,
    KEY_COLUMNS,
    MERGE_OPTIONS,
    PARTITION_EXPR,
    PARTITIONED_BY,
    TABLE_PROPERTIES,
    WRITE_MODE,
)
from acid_platform.orchestration.resources import DEFAULT_RESOURCE_KEY, warehouse_resource


class DailyPartitions(Model):
    """Dagster daily partitions, one Hive partition each (in the column ``partition_expr``)."""

    start_date: str
    end_date: str | None = None


class TableScaffolder(Scaffolder):
    """Writes a ``defs.yaml`` for a table named after the folder, in database ``default``,
    with two columns to edit."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        name = request.target_path.name.replace("-", "_")
        scaffold_component(
            request,
            {
                "table": f"default.{name}",
                "columns": {"id": "bigint", "name": "string"},
                "key_columns": ["id"],
                "description": f"The ACID table default.{name}.",
            },
        )


@scaffold_with(TableScaffolder)
class AcidTableComponent(Component, Model, Resolvable):
    """One Hive ACID table as a Dagster asset, with its consistency, files and health checks.

    Its rows come from ``upstream`` (an asset whose value — pyarrow, pandas or Spark — is
    written with ``write_mode``: append, overwrite, merge on ``key_columns`` or delete), or,
    without it, from outside Dagster (SQL, Spark, streaming): materializing it then creates
    the table from ``columns`` if it does not exist and reports its state. The asset key is
    ``[database, table]`` unless ``asset_key`` says otherwise; the IO manager writes
    ``table`` either way.

    .. code-block:: yaml

        type: acid_platform.orchestration.components.AcidTableComponent
        attributes:
          table: retail.orders
          upstream: raw_orders
          write_mode: merge
          key_columns: [order_id]
          partition_expr: ds
          partitions: {start_date: "2024-01-01"}
          partitioned_by: {ds: date}
          clustered_by: [order_id]
          buckets: 4
          automation: eager
    """

    #: ``db.table`` (or ``table`` in ``default``).
    table: str
    #: The table's columns (``name: hive type``), for a table created here.
    columns: dict[str, str] = {}
    #: An asset (``a/b`` or a list of parts) whose value is written to the table.
    upstream: str | list[str] | None = None
    write_mode: Literal["append", "overwrite", "merge", "delete"] = "overwrite"
    key_columns: list[str] = []
    merge_options: dict[str, Any] = {}
    #: The column that holds the asset's (daily) partitions.
    partition_expr: str | None = None
    partitions: DailyPartitions | None = None
    #: Partition columns of a table created here (``name: hive type``).
    partitioned_by: dict[str, str] = {}
    clustered_by: list[str] = []
    buckets: int = 0
    properties: dict[str, str | int | float | bool] = {}
    asset_key: str | list[str] | None = None
    warehouse_key: str = DEFAULT_RESOURCE_KEY
    io_manager_key: str = "io_manager"
    group_name: str | None = None
    description: str | None = None
    owners: list[str] = []
    tags: dict[str, str] = {}
    code_version: str | int | None = None
    #: ``eager`` (on upstream updates), a cron (``on_cron``), or none.
    automation: str | None = None

    @property
    def key(self) -> AssetKey:
        return asset_key_of(self.asset_key, self.table)

    @property
    def table_name(self) -> str:
        return ".".join(split_table_name(self.table))

    def metadata(self) -> dict[str, Any]:
        """What the IO manager reads (see :mod:`~acid_platform.orchestration.options`)."""
        db, _ = split_table_name(self.table)
        meta: dict[str, Any] = {
            "schema": db,
            "dagster/table_name": self.table_name,
            WAREHOUSE_META: self.warehouse_key,
            WRITE_MODE: self.write_mode,
        }
        optional = {
            KEY_COLUMNS: self.key_columns,
            MERGE_OPTIONS: self.merge_options,
            PARTITION_EXPR: self.partition_expr,
            PARTITIONED_BY: self.partitioned_by,
            CLUSTERED_BY: self.clustered_by,
            BUCKETS: self.buckets,
            TABLE_PROPERTIES: {k: str(v) for k, v in self.properties.items()},
        }
        return meta | {k: v for k, v in optional.items() if v}

    def automation_condition(self) -> AutomationCondition | None:
        if not self.automation or self.automation == "none":
            return None
        if self.automation == "eager":
            return AutomationCondition.eager()
        return AutomationCondition.on_cron(self.automation)

    def build_asset(self) -> AssetsDefinition:
        """The table's asset."""
        common: dict[str, Any] = {
            "key": self.key,
            "metadata": self.metadata(),
            "group_name": self.group_name,
            "description": self.description or f"The ACID table {self.table_name}.",
            "owners": self.owners or None,
            "tags": self.tags or None,
            "code_version": None if self.code_version is None else str(self.code_version),
            "kinds": {"hive", "orc"},
            "automation_condition": self.automation_condition(),
            "partitions_def": None
            if self.partitions is None
            else DailyPartitionsDefinition(
                start_date=self.partitions.start_date, end_date=self.partitions.end_date
            ),
        }
        if self.upstream is not None:
            upstream = asset_key_of(self.upstream)

            @asset(
                ins={"rows": AssetIn(key=upstream)}, io_manager_key=self.io_manager_key, **common
            )
            def _written(rows: Any) -> Any:
                return rows

            return _written
        return self.declared_asset(common)

    def declared_asset(self, common: dict[str, Any]) -> AssetsDefinition:
        """The asset of a table written outside Dagster: created if missing, state reported."""
        name, key, spec = self.table_name, self.warehouse_key, self

        @asset(required_resource_keys={key}, **common)
        def _declared(context: AssetExecutionContext) -> MaterializeResult:
            wh = warehouse_resource(context, key).get_warehouse()
            table = wh.create_table(
                name,
                list(spec.columns.items()),
                partition_columns=list(spec.partitioned_by.items()),
                bucket_columns=spec.clustered_by,
                num_buckets=spec.buckets,
                properties={k: str(v) for k, v in spec.properties.items()},
                if_not_exists=True,
            )
            metadata = materialization_metadata(table, "declare", [], table_health(table), 0)
            return MaterializeResult(metadata=metadata)

        return _declared

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        return Definitions(
            assets=[self.build_asset()],
            asset_checks=acid_table_checks(
                self.key, self.table_name, resource_key=self.warehouse_key
            ),
        )


__all__ = ["AcidTableComponent", "DailyPartitions"]
