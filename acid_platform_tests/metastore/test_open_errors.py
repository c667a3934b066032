"""Opening a metastore that cannot be used is a typed error, and changes nothing (issue 13,
item 10): a file that is not a database, a schema of a newer version, a server that does not
answer, a URL that names no database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from acid_platform.errors import MetastoreUnavailableError, MetastoreVersionError
from acid_platform.metastore import Metastore
from acid_platform.metastore.migrate import HEAD, VERSION_TABLE, known_revisions
from acid_platform_tests.helpers import fresh_namespace


def test_known_revisions_end_at_head() -> None:
    assert HEAD in known_revisions() and max(known_revisions()) == HEAD


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    db.write_bytes(b"not SQLite at all" * 64)
    with pytest.raises(MetastoreUnavailableError, match="file is not a database"):
        Metastore(f"sqlite:///{db}")
    assert db.read_bytes() == b"not SQLite at all" * 64


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_schema_of_a_newer_version_is_refused_and_kept(backend: str, tmp_path: Path) -> None:
    url, cleanup = fresh_namespace(backend, tmp_path)
    try:
        Metastore(url).close()
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '9999'"))
        with pytest.raises(MetastoreVersionError, match=f"revision 9999.*up to {HEAD}"):
            Metastore(url)
        with engine.connect() as conn:
            assert conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all() == [
                ("9999",)
            ]
        engine.dispose()
    finally:
        cleanup()


def test_an_unreachable_postgresql_server() -> None:
    with pytest.raises(MetastoreUnavailableError, match="port 1") as caught:
        Metastore("postgresql://postgres:hunter2@127.0.0.1:1/test")
    assert "hunter2" not in str(caught.value)


def test_a_url_that_names_no_database() -> None:
    with pytest.raises(MetastoreUnavailableError, match="not a metastore URL"):
        Metastore("not a url at all")
