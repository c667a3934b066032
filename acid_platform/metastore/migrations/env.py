"""Alembic environment: runs on the connection handed over by ``acid_platform.metastore.migrate``.

Online mode only. The caller opens the connection, takes the cross-process migration lock and
owns the transaction; this script just runs the revisions inside it.
"""

from __future__ import annotations

from alembic import context

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable from the alembic CLI
    raise RuntimeError(
        "acid_platform metastore migrations run through acid_platform.metastore.migrate."
        "upgrade(); there is no offline mode"
    )

context.configure(
    connection=connection,
    version_table=config.attributes["version_table"],
    transactional_ddl=config.attributes.get("transactional_ddl"),
)
with context.begin_transaction():
    context.run_migrations()
