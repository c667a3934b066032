"""What the IO manager's type handlers get for one output or input (:class:`AcidConnection`),
and the rule naming an asset's table (:func:`table_for_asset`). Its own module so that the
handlers (:mod:`.handlers`, :mod:`.spark_io`) and the IO manager (:mod:`.io_manager`) each import
it, and not each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dagster import AssetKey, InputContext, OutputContext
from dagster._core.storage.db_io_manager import TableSlice

from acid_platform.orchestration.resources import AcidWarehouseResource
from acid_platform.table import DEFAULT_DATABASE
from acid_platform.warehouse import Warehouse


@dataclass(frozen=True)
class AcidConnection:
    """What the type handlers get for one output or input: the warehouse resource and the IO
    manager's settings."""

    resource: AcidWarehouseResource
    schema: str | None
    default_write_mode: str
    row_counts: bool

    @property
    def warehouse(self) -> Warehouse:
        """The step's warehouse session."""
        return self.resource.get_warehouse()

    def table_name(self, context: OutputContext | InputContext, table_slice: TableSlice) -> str:
        """``db.table`` of the asset (:func:`table_for_asset`)."""
        output = context if isinstance(context, OutputContext) else context.upstream_output
        if output is not None and output.has_asset_key:
            return table_for_asset(output.asset_key, output.definition_metadata, self.schema)
        return f"{table_slice.schema}.{table_slice.table}".lower()


def table_for_asset(
    key: AssetKey, metadata: Mapping[str, Any] | None, schema: str | None = None
) -> str:
    """The ``db.table`` the IO manager writes the asset ``key`` to — Dagster's ``DbIOManager``
    rule: the table is the key's last part; the database the ``schema`` definition metadata,
    else the IO manager's ``schema``, else the key's next-to-last part, else Hive's
    ``default`` (where Dagster says ``public``).

    >>> table_for_asset(AssetKey(["lake", "retail", "orders"]), {})
    'retail.orders'
    >>> table_for_asset(AssetKey(["orders"]), {"schema": "sales"}), table_for_asset(AssetKey("o"), {})
    ('sales.orders', 'default.o')
    """
    path = key.path
    given = (metadata or {}).get("schema")
    if given:
        db = str(getattr(given, "value", given))
    elif schema:
        db = schema
    elif len(path) > 1:
        db = path[-2]
    else:
        db = DEFAULT_DATABASE
    return f"{db}.{path[-1]}".lower()


__all__ = ["AcidConnection", "table_for_asset"]
