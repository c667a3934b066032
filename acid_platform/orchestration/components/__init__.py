"""Dagster Components of acid_platform (the registry module ``dg list components`` reads,
through the ``dagster_dg_cli.registry_modules`` entry point): each is YAML over the Python
factories of :mod:`acid_platform.orchestration.platform` and has a scaffolder
(``dg scaffold defs <type> <path>``).

* :class:`AcidWarehouseComponent` — a warehouse: resources, IO manager, reader, maintenance;
* :class:`AcidTableComponent` — one ACID table as an asset, with its checks;
* :class:`AcidIngestComponent` — landing files into a table, each exactly once;
* :class:`AcidChangeFeedComponent` — a table's change feed appended to another table;
* :class:`FromEnv` (:mod:`.settings`) — ``{env: NAME}`` in ``defs.yaml``, Dagster's ``EnvVar``.

Each lives in a module of its own (:mod:`.warehouse`, :mod:`.table`, :mod:`.ingest`,
:mod:`.changes`); a new component joins them and is exported here.
"""

from acid_platform.orchestration.components.changes import AcidChangeFeedComponent
from acid_platform.orchestration.components.ingest import AcidIngestComponent
from acid_platform.orchestration.components.settings import FromEnv
from acid_platform.orchestration.components.table import AcidTableComponent
from acid_platform.orchestration.components.warehouse import AcidWarehouseComponent

__all__ = [
    "AcidChangeFeedComponent",
    "AcidIngestComponent",
    "AcidTableComponent",
    "AcidWarehouseComponent",
    "FromEnv",
]
