"""``AcidIngestComponent``: files landing in a location loaded into an ACID table, each exactly
once, declared in ``defs.yaml``."""

# no `from __future__ import annotations`: Dagster's Resolvable reads the annotations

import datetime as dt

from dagster import (
    AssetKey,
    AssetSpec,
    Component,
    ComponentLoadContext,
    Definitions,
    FreshnessPolicy,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_component,
    scaffold_with,
)

from acid_platform.metastore.names import split_table_name
from acid_platform.orchestration.checks import TABLE_META, WAREHOUSE_META, acid_table_checks
from acid_platform.orchestration.components.settings import asset_key_of
from acid_platform.orchestration.ingest import INGEST_SENSOR, ingest_sensor
from acid_platform.orchestration.resources import DEFAULT_RESOURCE_KEY, keyed_name


class IngestScaffolder(Scaffolder):
    """Writes a ``defs.yaml`` loading ``landing/<folder>`` into ``default.<folder>``."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        name = request.target_path.name.replace("-", "_")
        scaffold_component(
            request,
            {
                "landing": f"{{{{ context.project_root }}}}/.dagster/landing/{name}",
                "table": f"default.{name}",
                "columns": {"id": "bigint", "value": "string"},
            },
        )


@scaffold_with(IngestScaffolder)
class AcidIngestComponent(Component, Model, Resolvable):
    """Files landing in ``landing`` (Parquet, CSV with a header, JSON lines; ``.gz`` too)
    loaded into the ACID table ``table``, each file exactly once: a sensor requests one run per
    new file or batch (run key: the file's identity), the run loads each file in a transaction
    of its own and records it, so a repeated tick or a re-run loads nothing twice. The table is
    an asset (created on the first load from ``columns`` and ``partition_columns``) whose
    materializations are the loads, with its checks and a freshness policy.

    .. code-block:: yaml

        type: acid_platform.orchestration.components.AcidIngestComponent
        attributes:
          landing: /data/landing/returns
          table: retail.returns
          columns: {return_id: bigint, amount: double}
          partition_columns: {ds: date}
          batch_size: 10
          fresh_within_hours: 24
    """

    landing: str
    table: str
    columns: dict[str, str] = {}
    partition_columns: dict[str, str] = {}
    #: A glob relative to ``landing``.
    pattern: str = "*"
    recursive: bool = False
    #: The files' format (default: by suffix).
    format: str = ""
    batch_size: int = 1
    #: A new file is loaded once this many ticks in a row saw it unchanged (not half-written).
    stable_listings: int = 2
    interval_s: int = 30
    sensor_name: str | None = None
    asset_key: str | list[str] | None = None
    warehouse_key: str = DEFAULT_RESOURCE_KEY
    group_name: str | None = "ingest"
    description: str | None = None
    owners: list[str] = []
    #: A load is expected at least this often (Dagster's freshness policy; 0: none).
    fresh_within_hours: float = 0

    @property
    def key(self) -> AssetKey:
        return asset_key_of(self.asset_key, self.table)

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        table = ".".join(split_table_name(self.table))
        freshness = (
            FreshnessPolicy.time_window(fail_window=dt.timedelta(hours=self.fresh_within_hours))
            if self.fresh_within_hours
            else None
        )
        spec = AssetSpec(
            self.key,
            group_name=self.group_name,
            kinds={"hive", "orc"},
            owners=self.owners or None,
            metadata={
                TABLE_META: table,
                WAREHOUSE_META: self.warehouse_key,
                "dagster/table_name": table,
            },
            description=self.description
            or f"{table}, loaded from the files landing in {self.landing}, each exactly once.",
            freshness_policy=freshness,
        )
        name = self.sensor_name or keyed_name(
            f"{INGEST_SENSOR}__{table.replace('.', '__')}", self.warehouse_key
        )
        sensor = ingest_sensor(
            self.landing,
            table,
            name=name,
            pattern=self.pattern,
            recursive=self.recursive,
            file_format=self.format,
            batch_size=self.batch_size,
            columns=self.columns or None,
            partition_columns=self.partition_columns or None,
            asset_key=self.key,
            minimum_interval_seconds=self.interval_s,
            resource_key=self.warehouse_key,
            stable_listings=self.stable_listings,
        )
        return Definitions(
            assets=[spec],
            sensors=[sensor],
            asset_checks=acid_table_checks(self.key, table, resource_key=self.warehouse_key),
        )


__all__ = ["AcidIngestComponent"]
