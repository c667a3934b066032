"""Two sessions (warehouses) on one metastore: Hive 4 locks and first-committer-wins."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import LockTimeoutError, WriteConflictError
from acid_platform_tests.helpers import warehouse_fixture
from acid_platform_tests.table.conftest import rows_of

COLS = [("id", "int"), ("v", "int")]


SHARED_WRITE = {"hive.txn.xlock.write": "false", "acid.lock.wait.timeout.s": "0"}

#: The first session, on local disk and on the S3 server.
wh = warehouse_fixture(conf=SHARED_WRITE, backends=["sqlite", "s3"])


@pytest.fixture
def pair(wh: Warehouse) -> Iterator[tuple[Warehouse, Warehouse]]:
    """Two sessions on one warehouse and metastore, ``t`` partitioned by ``p`` in it."""
    a, b = wh, Warehouse.open(wh.root, wh.metastore.url, conf=SHARED_WRITE)
    a.create_table("t", COLS, partition_columns=[("p", "int")]).insert(
        [{"id": 1, "v": 0, "p": 1}, {"id": 2, "v": 0, "p": 2}]
    )
    yield a, b
    b.close()


def test_update_update_same_partition_second_committer_conflicts(
    pair: tuple[Warehouse, Warehouse],
) -> None:
    a, b = pair
    a.transaction()
    b.transaction()
    a.table("t").update({"v": "v + 1"}, "p = 1")
    b.table("t").update({"v": "v + 10"}, "p = 1")
    a.commit()
    with pytest.raises(WriteConflictError, match="default/t/p=1"):
        b.commit()
    assert not b.in_transaction
    assert rows_of(a.table("t")) == [(1, 1, 1), (2, 0, 2)]


def test_the_loser_of_a_write_conflict_leaves_no_file_record(
    pair: tuple[Warehouse, Warehouse],
) -> None:
    # what a transaction wrote is recorded in its commit's own database transaction: the
    # conflict that aborts it drops the record with it
    a, b = pair
    a.transaction()
    b.transaction()
    a.table("t").update({"v": "v + 1"}, "p = 1")  # write id 2
    b.table("t").update({"v": "v + 10"}, "p = 1")  # write id 3
    a.commit()
    with pytest.raises(WriteConflictError):
        b.commit()
    record = a.metastore.recorded_files("default", "t").partition("p=1")
    assert record is not None
    assert sorted(record.dirs) == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
    ]
    assert rows_of(a.table("t")) == [(1, 1, 1), (2, 0, 2)]


def test_update_delete_on_different_partitions_both_commit(
    pair: tuple[Warehouse, Warehouse],
) -> None:
    a, b = pair
    a.transaction()
    b.transaction()
    a.table("t").update({"v": "v + 1"}, "p = 1")
    b.table("t").delete("p = 2")
    b.commit()
    a.commit()
    assert rows_of(a.table("t")) == [(1, 1, 1)]


def test_insert_insert_both_commit(pair: tuple[Warehouse, Warehouse]) -> None:
    a, b = pair
    a.transaction()
    b.transaction()
    a.table("t").insert([{"id": 3, "v": 3, "p": 1}])
    b.table("t").insert([{"id": 4, "v": 4, "p": 1}])
    b.commit()
    a.commit()
    assert rows_of(a.table("t")) == [(1, 0, 1), (2, 0, 2), (3, 3, 1), (4, 4, 1)]


def test_excl_write_blocks_a_second_writer(tmp_path: Path) -> None:
    a = Warehouse.open(tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0"})
    b = Warehouse.open(tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "0"})
    try:
        t = a.create_table("t", COLS)
        t.insert([{"id": 1, "v": 0}])
        a.transaction()
        t.update({"v": "v + 1"})
        with pytest.raises(LockTimeoutError):
            b.table("t").update({"v": "v + 10"})
        b.table("t").insert([{"id": 2, "v": 0}])  # SHARED_READ is compatible with EXCL_WRITE
        a.commit()
        assert rows_of(t) == [(1, 1), (2, 0)]
    finally:
        a.close()
        b.close()


def test_waiting_writer_reruns_on_a_fresh_snapshot_no_lost_update(tmp_path: Path) -> None:
    a = Warehouse.open(tmp_path / "wh")
    b = Warehouse.open(tmp_path / "wh", conf={"acid.lock.wait.timeout.s": "20"})
    try:
        t = a.create_table("t", COLS)
        t.insert([{"id": 1, "v": 0}])
        a.transaction()
        t.update({"v": "v + 1"})
        errors: list[BaseException] = []

        def other() -> None:
            try:
                b.table("t").update({"v": "v + 10"})  # waits for a's EXCL_WRITE
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.5)
        a.commit()
        thread.join(30)
        assert not errors
        assert rows_of(t) == [(1, 11)]
    finally:
        a.close()
        b.close()
