"""Schema: Alembic migrations create exactly ``schema.py``; every statement binds its values."""

from __future__ import annotations

from typing import Any

import pytest
import setuptools
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from acid_platform.metastore import LockComponent, LockType, Metastore, Source, TableSpec
from acid_platform.metastore.migrate import HEAD, VERSION_TABLE, current_revision, migrations_dir
from acid_platform.metastore.schema import metadata
from acid_platform.metastore.store import normalize_url

from .conftest import FakeClock


def test_head_constant_matches_the_alembic_scripts() -> None:
    script = ScriptDirectory(migrations_dir())
    assert script.get_heads() == [HEAD]


def test_migrations_ship_as_package_modules() -> None:
    found = setuptools.find_packages(
        where=str(__import__("pathlib").Path(migrations_dir()).parents[2]),
        include=["acid_platform*"],
    )
    assert "acid_platform.metastore.migrations" in found
    assert "acid_platform.metastore.migrations.versions" in found


def test_migrated_database_matches_the_schema_module(url: str) -> None:
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            assert current_revision(conn) == HEAD
            ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            diff = [
                d
                for d in compare_metadata(ctx, metadata)
                if not (d[0] == "remove_table" and d[1].name == VERSION_TABLE)
            ]
        assert diff == []
    finally:
        engine.dispose()


def test_sqlite_durability_is_chosen_in_the_url(tmp_path: Any) -> None:
    with Metastore(f"sqlite:///{tmp_path}/a.db") as full, full._store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    url = f"sqlite:///{tmp_path}/b.db?synchronous=normal"
    with Metastore(url) as normal, normal._store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    with pytest.raises(Exception, match="synchronous"):
        Metastore(f"sqlite:///{tmp_path}/c.db?synchronous=sometimes")


def test_every_statement_binds_user_values(url: str, clock: FakeClock) -> None:
    """Run every kind of operation with tell-tale strings; none may appear in SQL text."""
    statements: list[str] = []

    def record(conn: Any, cursor: Any, stmt: str, params: Any, ctx: Any, many: bool) -> None:
        statements.append(stmt)

    # Every engine of the process: on PostgreSQL, opens and most commits use the autocommit one.
    event.listen(Engine, "before_cursor_execute", record)
    try:
        _every_kind_of_operation(url, clock)
    finally:
        event.remove(Engine, "before_cursor_execute", record)
    assert len(statements) > 50
    leaked = [s for s in statements if "zq" in s.lower()]
    assert leaked == []


def _every_kind_of_operation(url: str, clock: FakeClock) -> None:
    with Metastore(url, clock=clock) as ms:
        ms.create_database("zqdb", location="/zqloc")
        ms.create_table(
            TableSpec(
                "zqdb",
                "zqtable",
                (("zqcol", "int"),),
                (("zqpart", "string"),),
                location="/zqloc/t",
                properties={"zqkey": "zqvalue'--"},
            )
        )
        ms.alter_table_properties("zqdb", "zqtable", {"zqkey2": "zqvalue2"})
        ms.add_partition("zqdb", "zqtable", "zqpart=zqval")
        txn = ms.open_txn(user="zquser", host="zqhost", agent_info="zqagent")
        ms.lock(txn, [LockComponent(LockType.SHARED_WRITE, "zqdb", "zqtable", "zqpart=zqval")])
        ms.add_write_components(txn, "zqdb", "zqtable", ["zqpart=zqval"], "update")
        ms.valid_write_ids(txn, "zqdb", "zqtable")
        ms.heartbeat(txn)
        ms.record_source(txn, "zqdb", "zqtable", Source("zqsource", {"zqinfo": "zqvalue"}))
        other = ms.open_txn()
        ms.add_write_components(other, "zqdb", "zqtable", ["zqpart=zqval"], "delete")
        ms.commit_txn(txn)
        with pytest.raises(Exception, match="write conflict"):
            ms.commit_txn(other)
        assert ms.committed_source("zqdb", "zqtable", "zqsource") is not None
        late = ms.open_txn()
        ms.record_source(late, "zqdb", "zqtable", Source("zqlate"))
        clash = ms.open_txn()
        ms.record_source(clash, "zqdb", "zqtable", Source("zqlate"))
        ms.commit_txn(late)
        with pytest.raises(Exception, match="already committed"):
            ms.commit_txn(clash)
        free = ms.lock(None, [LockComponent(LockType.EXCLUSIVE, "zqdb")], user="zquser")
        ms.unlock(free.lock_id)
        cq = ms.enqueue_compaction(
            "zqdb",
            "zqtable",
            "zqpart=zqval",
            "major",
            initiator_id="zqinit",
            properties={"zqp": "zqv"},
        )
        assert cq is not None
        ms.claim_compaction("zqworker-1")
        ms.mark_compacted(cq, 1)
        lease = ms.open_read_lease(ms.valid_txns(), agent_info="zqlease")
        ms.find_ready_to_clean()
        ms.close_read_lease(lease)
        ms.mark_cleaned(cq)
        ms.mark_did_not_initiate("zqdb", "zqtable", "zqpart=zqval", "zqmessage")
        ms.too_many_failed_compactions("zqdb", "zqtable", "zqpart=zqval")
        ms.write_activity()
        ms.show_compactions()
        ms.show_locks()
        ms.show_transactions()
        ms.purge_history()
        ms.purge_txn_history()
        ms.reap_timed_out()
        ms.drop_table("zqdb", "zqtable")
        ms.drop_database("zqdb")


def test_urls_pick_the_shipped_drivers() -> None:
    assert make_url(normalize_url("postgresql://u@h/d")).drivername == "postgresql+psycopg"
    assert make_url(normalize_url("mysql://u@h/d")).drivername == "mysql+pymysql"
    assert make_url(normalize_url("sqlite:////x/y.db")).drivername == "sqlite"
