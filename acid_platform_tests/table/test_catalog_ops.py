"""The warehouse's catalog and administration calls (``table/catalog_ops.py``), and opening a
warehouse only when one exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    AlreadyExistsError,
    MetastoreError,
    NoSuchObjectError,
    NoSuchWarehouseError,
    UnsupportedOperationError,
)
from acid_platform.metastore import METASTORE_FILE
from acid_platform_tests.helpers import warehouse_fixture
from acid_platform_tests.store_path import StorePath

#: The catalog calls on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


def test_databases_and_table_existence(wh: Warehouse) -> None:
    wh.create_database("hr")
    assert wh.database_exists("hr") and wh.database_exists("HR")
    assert not wh.database_exists("sales")
    assert wh.list_databases() == ["default", "hr"]
    wh.create_table("hr.emp", [("id", "int")])
    assert wh.table_exists("hr.emp")
    assert not wh.table_exists("hr.nope") and not wh.table_exists("nope.emp")
    with pytest.raises(
        NoSuchObjectError, match=r"table hr.nope does not exist \(tables in hr: emp\)"
    ):
        wh.table("hr.nope")
    with pytest.raises(NoSuchObjectError, match="no database 'nope'"):
        wh.table("nope.emp")


def test_drop_database_refuses_a_non_empty_one_and_cascade_purges_files(wh: Warehouse) -> None:
    wh.create_database("hr")
    emp = wh.create_table("hr.emp", [("id", "int")])
    emp.insert([{"id": 1}])
    location = StorePath(emp.spec.location)
    assert location.files()
    with pytest.raises(MetastoreError, match="Database hr is not empty"):
        wh.drop_database("hr")
    wh.drop_database("hr", cascade=True)
    assert wh.list_databases() == ["default"]
    assert not location.exists() and not location.files()
    wh.drop_database("hr", if_exists=True)
    with pytest.raises(NoSuchObjectError, match="Database does not exist: hr"):
        wh.drop_database("hr")
    with pytest.raises(UnsupportedOperationError, match="default database"):
        wh.drop_database("default")


def test_ddl_is_refused_inside_a_transaction(wh: Warehouse) -> None:
    with wh.transaction() as txn:
        for ddl in (lambda: wh.create_database("hr"), lambda: wh.drop_database("hr")):
            with pytest.raises(UnsupportedOperationError, match=f"txn {txn.id}"):
                ddl()


def test_partitions_and_the_metastore_views(wh: Warehouse) -> None:
    t = wh.create_table("t", [("id", "int")], partition_columns=[("ds", "string")])
    t.insert([{"id": 1, "ds": "a"}, {"id": 2, "ds": "b"}])
    assert wh.list_partitions("default.t") == ["ds=a", "ds=b"]
    assert wh.show_transactions() == [] and wh.show_locks() == []
    assert wh.show_compactions() == []
    other = Warehouse.open(wh.root, wh.metastore.url)
    try:
        txn = other.transaction()
        t2 = other.table("t")
        t2.insert([{"id": 3, "ds": "c"}])
        (row,) = wh.show_transactions()
        assert row["Transaction ID"] == txn.id and row["Transaction State"] == "OPEN"
        assert wh.show_locks()
        assert wh.abort_transactions([txn.id]) == [txn.id]
        assert wh.show_transactions()[0]["Transaction State"] == "ABORTED"
        other.rollback()
    finally:
        other.close()


def test_open_without_create_needs_an_existing_warehouse(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(NoSuchWarehouseError, match=f"no warehouse at {missing}"):
        Warehouse.open(missing, create=False)
    assert not missing.exists()  # nothing created
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoSuchWarehouseError, match="acid init"):
        Warehouse.open(tmp_path / "empty", create=False)
    assert os.listdir(tmp_path / "empty") == []
    Warehouse.open(tmp_path / "wh").close()
    assert (tmp_path / "wh" / METASTORE_FILE).is_file()
    Warehouse.open(tmp_path / "wh", create=False).close()


def test_open_without_create_checks_the_metastore_belongs_to_the_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with pytest.raises(NoSuchWarehouseError, match="its metastore holds none"):
        Warehouse.open(tmp_path / "a", url, create=False)
    Warehouse.open(tmp_path / "a", url).close()
    Warehouse.open(tmp_path / "a", url, create=False).close()
    with pytest.raises(AlreadyExistsError, match=f"holds the warehouse at {tmp_path / 'a'}, not"):
        Warehouse.open(tmp_path / "b", url, create=False)
