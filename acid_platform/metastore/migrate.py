"""Create or upgrade the metastore schema on first use, safely from many processes at once.

The fast path reads the version table and returns when it is at :data:`HEAD` (no Alembic
import). Otherwise one process at a time (PostgreSQL advisory lock, SQLite ``BEGIN IMMEDIATE``,
MySQL ``GET_LOCK``) runs the Alembic revisions inside a single transaction where the database
allows transactional DDL, and the others find the schema ready when they get the lock.
"""

from __future__ import annotations

import os
import random
import time

from sqlalchemy import Column, MetaData, String, Table, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from acid_platform.errors import MetastoreError, MetastoreVersionError, ReadOnlyMetastoreError
from acid_platform.metastore.store import is_sqlite_busy, is_transient, unavailable

HEAD = "0005"
"""The newest revision in ``migrations/versions`` (a test checks it against Alembic's head)."""
VERSION_TABLE = "acid_metastore_version"
_ADVISORY_LOCK_KEY = 0x41434944  # "ACID"
_MYSQL_LOCK_NAME = "acid_platform_metastore_migration"

_version_table = Table(VERSION_TABLE, MetaData(), Column("version_num", String(32)))


def migrations_dir() -> str:
    """Path of the Alembic script directory inside the installed package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")


def current_revision(conn: Connection) -> str | None:
    """The schema revision recorded in the database, or ``None`` for an empty database."""
    try:
        with conn.begin():
            return conn.execute(select(_version_table.c.version_num)).scalar()
    except DBAPIError:
        return None


def known_revisions() -> frozenset[str]:
    """The revisions this version of acid_platform has (``migrations/versions/NNNN_*.py``)."""
    names = os.listdir(os.path.join(migrations_dir(), "versions"))
    return frozenset(n[:4] for n in names if n[:4].isdigit() and n.endswith(".py"))


def ensure_schema(engine: Engine, *, read_only: bool = False) -> None:
    """Bring the schema to :data:`HEAD`, creating it in an empty database. A schema of a
    revision this version does not know (a newer acid_platform's) raises
    :class:`~acid_platform.errors.MetastoreVersionError` and is left as it is; a ``read_only``
    one that needs an upgrade raises :class:`~acid_platform.errors.ReadOnlyMetastoreError`."""
    try:
        with engine.connect() as conn:
            revision = current_revision(conn)
            if revision is None:
                _check_is_database(conn)
    except DBAPIError as exc:  # the server does not answer, the file is not a database
        raise unavailable(engine.url.render_as_string(hide_password=False), exc) from None
    if revision == HEAD:
        return
    if revision is not None and revision not in known_revisions():
        raise MetastoreVersionError(
            f"the metastore's schema is at revision {revision}, newer than this acid_platform "
            f"knows (up to {HEAD}): use the acid_platform version that wrote it, or a newer one"
        )
    if read_only:
        raise ReadOnlyMetastoreError(
            f"the metastore's schema is at revision {revision or 'none'} and needs an upgrade "
            f"to {HEAD}, but it is read-only"
        )
    deadline = time.monotonic() + 120
    while True:
        try:
            upgrade(engine)
            return
        except DBAPIError as exc:
            # Another process holds the database (SQLite write lock, a deadlock victim...):
            # the migration is one transaction, so simply run it again.
            if not (is_transient(exc) or is_sqlite_busy(exc)) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.001, 0.02))


def _check_is_database(conn: Connection) -> None:
    """Raise the database's own error when it cannot be read at all (``current_revision``
    takes any failure for an empty database)."""
    probe = "SELECT count(*) FROM sqlite_master" if conn.dialect.name == "sqlite" else "SELECT 1"
    with conn.begin():
        conn.execute(text(probe))


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the Alembic upgrade under a cross-process lock."""
    from alembic import command
    from alembic.config import Config

    dialect = engine.dialect.name
    with engine.connect() as conn:
        # SQLite: the engine's begin hook turns this into BEGIN IMMEDIATE (one writer at a time).
        conn.execution_options(acid_begin="IMMEDIATE")
        with conn.begin():
            if dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _ADVISORY_LOCK_KEY})
            elif dialect in ("mysql", "mariadb"):
                got = conn.execute(
                    text("SELECT GET_LOCK(:n, :t)"), {"n": _MYSQL_LOCK_NAME, "t": 120}
                ).scalar()
                if got != 1:
                    raise MetastoreError(
                        "timed out waiting for another process to migrate the metastore"
                    )
            try:
                cfg = Config()
                cfg.set_main_option("script_location", migrations_dir())
                cfg.attributes["connection"] = conn
                cfg.attributes["version_table"] = VERSION_TABLE
                cfg.attributes["transactional_ddl"] = dialect not in ("mysql", "mariadb")
                command.upgrade(cfg, revision)
            finally:
                if dialect in ("mysql", "mariadb"):
                    conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": _MYSQL_LOCK_NAME})
