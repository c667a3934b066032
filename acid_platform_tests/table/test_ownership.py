"""Issue 13, items 4 and 5: writers never replace a file, a table never adopts files it did not
write, and one warehouse directory belongs to one metastore (SQLite and PostgreSQL, and on the
S3 server)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import FileConflictError, WarehouseOwnershipError
from acid_platform.format import EventWriter
from acid_platform.format.fs import resolve
from acid_platform_tests.helpers import warehouse_fixture
from acid_platform_tests.store_path import StorePath

BACKENDS = ["sqlite", "postgresql"]

#: Writers' file ownership on local disk (SQLite and PostgreSQL metastores) and on the S3 server.
wh = warehouse_fixture(backends=[*BACKENDS, "s3"])


def _ids(wh: Warehouse, name: str) -> list[int]:
    return sorted(r["id"] for r in wh.table(name).scan(columns=["id"]).to_arrow().to_pylist())


def test_a_second_metastore_on_the_warehouse_is_refused(wh: Warehouse, tmp_path: Path) -> None:
    t = wh.create_table("t", [("id", "int")])
    t.insert([{"id": 1}])
    other = "sqlite:///" + str(tmp_path / "other.db")
    with pytest.raises(WarehouseOwnershipError, match="belongs to another metastore"):
        Warehouse.open(wh.root, other)
    # the first metastore's warehouse is untouched and still opens with it
    assert _ids(wh, "t") == [1]
    with Warehouse.open(wh.root, wh.metastore.url) as again:
        assert _ids(again, "t") == [1]


def test_an_event_writer_never_replaces_a_file(tmp_path: Path) -> None:
    path = tmp_path / "bucket_00000"
    path.write_bytes(b"committed")
    with pytest.raises(FileConflictError, match="exists already"):
        EventWriter(str(path), pa.schema([("id", pa.int32())]))
    assert path.read_bytes() == b"committed"


def test_an_insert_over_a_file_already_there_fails_and_replaces_nothing(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")])
    t.insert([{"id": 1}])
    # what another writer (a second metastore) put where write id 2 writes
    squatter = StorePath(t.spec.location) / "delta_0000002_0000002_0000" / "bucket_00000"
    squatter.write_bytes(b"not ours")
    with pytest.raises(FileConflictError):
        t.insert([{"id": 2}])
    assert squatter.read_bytes() == b"not ours"
    squatter.unlink()
    assert _ids(wh, "t") == [1]  # the failed insert's transaction aborted


def test_a_recreated_table_never_adopts_a_dropped_tables_files(wh: Warehouse) -> None:
    old = wh.create_table("t", [("id", "int")])
    old.insert([{"id": 1}, {"id": 2}])
    wh.drop_table("t", purge=False)  # DROP without PURGE leaves the files
    assert StorePath(old.spec.location).files()
    new = wh.create_table("t", [("id", "int")])
    assert new.spec.location != old.spec.location
    assert new.spec.location.endswith("/t.v0000001")
    assert _ids(wh, "t") == []
    new.insert([{"id": 3}])
    assert _ids(wh, "t") == [3]


def test_a_drop_deleting_after_its_commit_keeps_a_recreated_tables_rows(wh: Warehouse) -> None:
    """DROP commits in the metastore, then deletes the directory; a table of the same name
    created and written in between keeps its rows (each incarnation has its own directory)."""
    old = wh.create_table("t", [("id", "int")])
    old.insert([{"id": 1}])
    wh.metastore.drop_table("default", "t")  # the drop's metastore commit ...
    new = wh.create_table("t", [("id", "int")])
    new.insert([{"id": 7}, {"id": 8}])
    loc = resolve(old.spec.location)
    loc.filesystem.delete_dir(loc.path)  # ... and then its directory delete
    assert _ids(wh, "t") == [7, 8]
    wh.drop_table("t")  # a whole drop removes the new incarnation's directory only
    assert not StorePath(new.spec.location).exists()
    again = wh.create_table("t", [("id", "int")])
    assert again.spec.location.endswith("/t")  # the name is free again
    assert _ids(wh, "t") == []
