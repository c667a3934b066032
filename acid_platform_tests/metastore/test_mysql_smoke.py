"""MariaDB/MySQL backend: one end-to-end smoke test against the machine's server
(``ACID_TEST_MYSQL_URL``, default 127.0.0.1:3306); an unreachable server fails the test.

The whole suite also runs on it with ``ACID_TEST_BACKENDS=sqlite,postgresql,mysql``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform.errors import WriteConflictError
from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec
from acid_platform_tests.helpers import fresh_namespace


@pytest.fixture
def mysql_url(tmp_path: Path) -> Iterator[str]:
    """A fresh database on the machine's MariaDB (a missing server fails the test)."""
    url, cleanup = fresh_namespace("mysql", tmp_path)
    try:
        yield url
    finally:
        cleanup()


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
