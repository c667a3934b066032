"""Alembic environment: runs on the connection handed over by ``acid_platform.metastore.migrate``.

Online mode only. The caller opens the connection, takes the cross-process migration lock and
owns the transaction; this script just runs the revisions inside it.
"""

from __future__ import annotations

from typing import Any

from alembic import context


def run_migrations(config: Any) -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "acid_platform metastore migrations run through "
            "acid_platform.metastore.migrate.upgrade(); there is no offline mode"
        )
    context.configure(
        connection=connection,
        version_table=config.attributes["version_table"],
        transactional_ddl=config.attributes.get("transactional_ddl"),
    )
    with context.begin_transaction():
        context.run_migrations()


try:
    _config: Any = context.config
except AttributeError:  # imported outside an Alembic run (e.g. by a doctest collector)
    _config = None
if _config is not None:
    run_migrations(_config)
