"""``AcidWarehouseComponent``: a warehouse of Hive ACID tables, declared in ``defs.yaml``."""

# no `from __future__ import annotations`: Dagster's Resolvable reads the annotations

from typing import Literal

from dagster import (
    Component,
    ComponentLoadContext,
    Definitions,
    Model,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_component,
    scaffold_with,
)

from acid_platform.orchestration.components.settings import Setting, setting
from acid_platform.orchestration.io_manager import AcidTableIOManager
from acid_platform.orchestration.platform import warehouse_definitions
from acid_platform.orchestration.resources import (
    DEFAULT_RESOURCE_KEY,
    AcidWarehouseResource,
    ObjectStoreConfig,
)


class ObjectStore(Model, Resolvable):
    """An object store's endpoint and credentials (unset: the AWS environment variables)."""

    endpoint: Setting | None = None
    region: Setting | None = None
    access_key: Setting | None = None
    secret_key: Setting | None = None
    session_token: Setting | None = None
    path_style: bool | None = None


class Maintenance(Model, Resolvable):
    """What keeps the warehouse healthy: the compaction sensor (initiator + one run per queued
    compaction), the cleaner schedule and the housekeeping sensor."""

    enabled: bool = True
    cleaner_cron: str = "*/5 * * * *"
    compaction_interval_s: int = 30
    #: Default: half ``hive.txn.timeout``, between 5 and 30 seconds.
    housekeeping_interval_s: int | None = None


def hive_conf(conf: dict[str, str | int | float | bool] | str) -> dict[str, str]:
    """Hive settings as text: a mapping's values, or ``key=value`` pairs separated by commas.

    >>> hive_conf("hive.txn.timeout=60s, hive.compactor.check.interval=10s")
    {'hive.txn.timeout': '60s', 'hive.compactor.check.interval': '10s'}
    >>> hive_conf({"hive.compactor.initiator.on": True, "hive.compactor.delta.num.threshold": 10})
    {'hive.compactor.initiator.on': 'true', 'hive.compactor.delta.num.threshold': '10'}
    """
    if isinstance(conf, str):
        pairs = [p.partition("=") for p in conf.split(",") if p.strip()]
        return {k.strip(): v.strip() for k, _, v in pairs}
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in conf.items()}


class WarehouseScaffolder(Scaffolder):
    """Writes a ``defs.yaml`` for a warehouse on the embedded defaults (SQLite metastore
    inside the warehouse), its location and metastore overridable from the environment."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        scaffold_component(
            request,
            {
                "warehouse": {
                    "env": "ACID_WAREHOUSE",
                    "default": "{{ context.project_root }}/.dagster/warehouse",
                },
                "metastore_url": {"env": "ACID_METASTORE_URL"},
                "maintenance": {"cleaner_cron": "*/5 * * * *"},
            },
        )


@scaffold_with(WarehouseScaffolder)
class AcidWarehouseComponent(Component, Model, Resolvable):
    """A warehouse of Hive ACID tables: the resource under ``resource_key``, the ACID IO
    manager under ``io_manager_key`` and the snapshot reader under ``reader_key``, and the
    maintenance (compaction sensor and job, cleaner schedule, housekeeping sensor and job),
    named after the resource key so one code location holds several warehouses.

    Give secrets as ``{env: NAME}``: the config then holds Dagster's ``EnvVar``, never the
    value. Table assets on this warehouse get their checks from the table component or from
    ``with_acid_checks`` in the project's ``definitions.py``.

    .. code-block:: yaml

        type: acid_platform.orchestration.components.AcidWarehouseComponent
        attributes:
          warehouse: {env: ACID_WAREHOUSE, default: "{{ context.project_root }}/.dagster/warehouse"}
          metastore_url: {env: ACID_METASTORE_URL}     # unset: SQLite inside the warehouse
          conf: {hive.compactor.delta.num.threshold: "10"}
          maintenance: {cleaner_cron: "*/5 * * * *"}
    """

    warehouse: Setting
    metastore_url: Setting | None = None
    engine: Literal["embedded", "spark"] = "embedded"
    #: Spark's master for Spark assets and the ``spark`` engine (default: the active session,
    #: else ``local[*]``); the session starts on first use.
    spark_master: Setting | None = None
    #: Hive settings (values may be numbers: YAML templating turns "10" into 10), or
    #: ``key=value,key=value`` text (e.g. ``"{{ env('ACID_CONF', '') }}"``).
    conf: dict[str, str | int | float | bool] | str = {}
    storage: ObjectStore | None = None
    resource_key: str = DEFAULT_RESOURCE_KEY
    io_manager_key: str | None = "io_manager"
    reader_key: str | None = "reader"
    #: The IO manager's database for assets without key prefix or ``schema`` metadata.
    database: str | None = None
    default_write_mode: Literal["append", "overwrite", "merge", "delete"] = "overwrite"
    maintenance: Maintenance = Maintenance()

    def resource(self) -> AcidWarehouseResource:
        """The warehouse resource these attributes describe."""
        store = self.storage
        return AcidWarehouseResource(
            warehouse=setting(self.warehouse),
            metastore_url=setting(self.metastore_url),
            engine=self.engine,
            conf=hive_conf(self.conf),
            spark_master=setting(self.spark_master),
            storage=None
            if store is None
            else ObjectStoreConfig(
                endpoint=setting(store.endpoint),
                region=setting(store.region),
                access_key=setting(store.access_key),
                secret_key=setting(store.secret_key),
                session_token=setting(store.session_token),
                path_style=store.path_style,
            ),
        )

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        resource = self.resource()
        io_manager = AcidTableIOManager(
            acid_warehouse=resource,
            schema=self.database,
            default_write_mode=self.default_write_mode,
        )
        return warehouse_definitions(
            resource,
            resource_key=self.resource_key,
            io_manager_key=self.io_manager_key,
            reader_key=self.reader_key,
            io_manager=io_manager,
            maintenance=self.maintenance.enabled,
            cleaner_cron=self.maintenance.cleaner_cron,
            compaction_interval_s=self.maintenance.compaction_interval_s,
            housekeeping_interval_s=self.maintenance.housekeeping_interval_s,
        )


__all__ = ["AcidWarehouseComponent", "Maintenance", "ObjectStore", "hive_conf"]
