"""Component settings that may come from the environment at run time: ``{env: NAME}`` in
``defs.yaml`` becomes Dagster's :class:`~dagster.EnvVar` in the resource's config, so the UI,
the run storage and ``dg list envs`` see the variable's name, never its value (give every
secret this way), and a changed value needs no code reload.

.. code-block:: yaml

    metastore_url: {env: ACID_METASTORE_URL}                 # unset: the embedded default
    warehouse: {env: ACID_WAREHOUSE, default: /data/wh}      # unset when loaded: the default

A plain string is used as written (``{{ env('X', 'default') }}`` templating renders when the code
location loads).
"""

# no `from __future__ import annotations`: Dagster's Resolvable reads the annotations

import os
from typing import Any

from dagster import AssetKey, EnvVar, Model, Resolvable

from acid_platform.metastore.names import split_table_name


class FromEnv(Model, Resolvable):
    """A setting read from the environment variable ``env`` when the code uses it; ``default``
    when the variable is not set as the code location loads."""

    env: str
    default: str | None = None


#: A setting: a literal, or an environment variable.
Setting = str | FromEnv


def setting(value: Setting | None) -> Any:
    """The resource config value of a setting: the literal, an :class:`~dagster.EnvVar`, or the
    default (``None`` when neither the variable nor a default is there)."""
    if isinstance(value, FromEnv):
        return EnvVar(value.env) if os.environ.get(value.env) else value.default
    return value


def asset_key_of(value: str | list[str] | None, table: str = "") -> AssetKey:
    """An asset key written in ``defs.yaml`` (``a/b`` or a list of parts); none given: the
    table's ``[database, table]``.

    >>> asset_key_of("lake/retail/orders"), asset_key_of(None, "retail.orders")
    (AssetKey(['lake', 'retail', 'orders']), AssetKey(['retail', 'orders']))
    """
    if value is None:
        return AssetKey(list(split_table_name(table)))
    return AssetKey.from_user_string(value) if isinstance(value, str) else AssetKey(value)


__all__ = ["FromEnv", "Setting", "asset_key_of", "setting"]
