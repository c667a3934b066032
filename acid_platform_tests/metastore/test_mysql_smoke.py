"""MariaDB/MySQL backend: one end-to-end smoke test against the machine's server
(``ACID_TEST_MYSQL_URL``, default 127.0.0.1:3306); an unreachable server fails the test.

The whole suite also runs on it with ``ACID_TEST_BACKENDS=sqlite,postgresql,mysql``.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from acid_platform.errors import WriteConflictError
from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec

from .conftest import MYSQL_URL


@pytest.fixture
def mysql_url() -> object:
    admin = create_engine(MYSQL_URL, isolation_level="AUTOCOMMIT")
    name = f"acid_smoke_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    except OperationalError as exc:  # the machine runs MariaDB: a missing server is a failure
        admin.dispose()
        pytest.fail(f"MariaDB/MySQL not reachable at {MYSQL_URL}: {exc.orig}")
    try:
        yield make_url(MYSQL_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
        admin.dispose()


def test_mysql_end_to_end(mysql_url: str) -> None:
    with Metastore(mysql_url) as ms:
        assert ms.dialect in ("mysql", "mariadb")
        ms.create_database("db")
        ms.create_table(
            TableSpec(
                "db",
                "t",
                (("id", "int"),),
                (("p", "string"),),
                location="/wh/db/t",
                properties={"transactional": "true"},
            )
        )
        a, b = ms.open_txns(2)
        ms.lock(a, [LockComponent(LockType.SHARED_WRITE, "db", "t", "p=1")])
        ms.add_write_components(a, "db", "t", ["p=1"], "update")
        ms.add_write_components(b, "db", "t", ["p=1"], "delete")
        ms.commit_txn(a)
        with pytest.raises(WriteConflictError):
            ms.commit_txn(b)
        assert str(ms.valid_write_ids(None, "db", "t")) == "db.t:2:9223372036854775807::2"
        cq = ms.enqueue_compaction("db", "t", "p=1", "major")
        assert cq is not None
        info = ms.claim_compaction("host-1")
        assert info is not None
        ms.mark_compacted(cq, 2)
        assert [c.id for c in ms.find_ready_to_clean()] == [cq]
        ms.mark_cleaned(cq)
        assert ms.show_compactions()[0]["State"] == "succeeded"
