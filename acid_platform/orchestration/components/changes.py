"""``AcidChangeFeedComponent``: an ACID table's change feed appended to another table, window
by window of write ids, each change once, declared in ``defs.yaml``."""

# no `from __future__ import annotations`: Dagster reads the annotations

from dagster import (
    AssetExecutionContext,
    Component,
    ComponentLoadContext,
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
from acid_platform.orchestration.changes import (
    ChangeWindow,
    append_changes,
    change_feed_sensor,
    window_metadata,
)
from acid_platform.orchestration.checks import TABLE_META, WAREHOUSE_META, acid_table_checks
from acid_platform.orchestration.components.settings import asset_key_of
from acid_platform.orchestration.metadata import statement_metadata
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    keyed_name,
    warehouse_resource,
)


class ChangeFeedScaffolder(Scaffolder):
    """Writes a ``defs.yaml`` appending ``default.<folder>``'s changes to
    ``default.<folder>_changes``."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        name = request.target_path.name.replace("-", "_")
        scaffold_component(
            request,
            {"source": f"default.{name}", "table": f"default.{name}_changes", "key": ["id"]},
        )


@scaffold_with(ChangeFeedScaffolder)
class AcidChangeFeedComponent(Component, Model, Resolvable):
    """The change feed of the ACID table ``source`` appended to the ACID table ``table``: a
    sensor requests one run per window of ``source``'s new write ids (its cursor keeps the last
    one), and the run appends the window's changes (``_change_type``, updates paired on
    ``key``, ``_write_id``) exactly once (a re-run appends nothing).

    .. code-block:: yaml

        type: acid_platform.orchestration.components.AcidChangeFeedComponent
        attributes:
          source: retail.stores
          table: retail.store_changes
          key: [store_id]
          source_asset: retail/stores
    """

    source: str
    table: str
    key: list[str] = []
    #: The source table's asset (drawn as upstream in the asset graph).
    source_asset: str | list[str] | None = None
    asset_key: str | list[str] | None = None
    start_write_id: int = 0
    max_write_ids_per_run: int | None = None
    interval_s: int = 30
    sensor_name: str | None = None
    warehouse_key: str = DEFAULT_RESOURCE_KEY
    group_name: str | None = None
    description: str | None = None
    owners: list[str] = []

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        source = ".".join(split_table_name(self.source))
        target = ".".join(split_table_name(self.table))
        key = asset_key_of(self.asset_key, target)
        resource_key = self.warehouse_key

        @asset(
            key=key,
            deps=[asset_key_of(self.source_asset)] if self.source_asset else None,
            group_name=self.group_name,
            kinds={"hive", "orc"},
            owners=self.owners or None,
            metadata={
                TABLE_META: target,
                WAREHOUSE_META: resource_key,
                "dagster/table_name": target,
            },
            required_resource_keys={resource_key},
            description=self.description
            or f"The change log of {source}: each change with its write id, appended window by "
            "window of write ids, once.",
        )
        def _changes(context: AssetExecutionContext, config: ChangeWindow) -> MaterializeResult:
            resource = warehouse_resource(context, resource_key)
            changes, metrics = append_changes(resource, config, target)
            metadata = {**window_metadata(config, changes), "appended": metrics is not None}
            if metrics is not None:
                metadata |= statement_metadata([metrics])
            return MaterializeResult(metadata=metadata)

        sensor = change_feed_sensor(
            source,
            target=_changes,
            name=self.sensor_name
            or keyed_name(f"acid_changes__{source.replace('.', '__')}", resource_key),
            key=self.key,
            start_write_id=self.start_write_id,
            max_write_ids_per_run=self.max_write_ids_per_run,
            minimum_interval_seconds=self.interval_s,
            resource_key=resource_key,
        )
        return Definitions(
            assets=[_changes],
            sensors=[sensor],
            asset_checks=acid_table_checks(key, target, resource_key=resource_key),
        )


__all__ = ["AcidChangeFeedComponent"]
