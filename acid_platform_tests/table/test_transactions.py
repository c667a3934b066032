"""Multi-statement transactions: one write id, statement ids 0,1,2…, own writes visible,
commit / rollback, failures abort, and the lifecycle rules around them."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    TransactionStateError,
    TxnAbortedError,
    UnknownColumnError,
    UnsupportedOperationError,
)
from acid_platform.metastore import TxnState
from acid_platform.table import lit
from acid_platform.table.writes import EventSink
from acid_platform_tests.helpers import acid_dirs, poll, warehouse_fixture
from acid_platform_tests.store_path import StorePath
from acid_platform_tests.table.conftest import rows_of

COLS = [("id", "int"), ("v", "string")]

#: Transactions on local disk and on the S3 server.
wh = warehouse_fixture(conf={"acid.lock.wait.timeout.s": "0"}, backends=["sqlite", "s3"])


def test_statements_share_one_write_id_and_see_each_other(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS)
    t.insert([{"id": 1, "v": "a"}])
    with wh.transaction() as tx:
        r1 = t.insert([{"id": 2, "v": "b"}, {"id": 3, "v": "c"}])
        assert rows_of(t) == [(1, "a"), (2, "b"), (3, "c")]  # own insert visible
        r2 = t.update({"v": lit("B")}, "id = 2")  # updates a row of the same transaction
        assert r2.rows_updated == 1
        r3 = t.delete("id IN (1, 3)")
        assert r3.rows_deleted == 2
        assert rows_of(t) == [(2, "B")]
        r4 = (
            t.merge([{"id": 2, "v": "x"}, {"id": 5, "v": "e"}], "t.id = s.id")
            .when_matched_delete()
            .when_not_matched_insert_all()
            .execute()
        )
        assert (r4.rows_deleted, r4.rows_inserted) == (1, 1)
        assert {r1.write_id, r2.write_id, r3.write_id, r4.write_id} == {2}
        assert (
            r1.statement_ids,
            r2.statement_ids,
            r3.statement_ids,
            r4.statement_ids,
        ) == ((0,), (1,), (2,), (3, 4))
        assert tx.id == r1.txn_id == r4.txn_id
        other = Warehouse.open(wh.root, wh.metastore.url)
        try:
            assert rows_of(other.table("t")) == [(1, "a")]  # not visible outside before commit
        finally:
            other.close()
    assert not wh.in_transaction
    assert rows_of(t) == [(5, "e")]
    assert acid_dirs(t.spec.location) == [
        "delete_delta_0000002_0000002_0001",
        "delete_delta_0000002_0000002_0002",
        "delete_delta_0000002_0000002_0004",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
        "delta_0000002_0000002_0003",
    ]
    assert wh.metastore.get_txn_state(tx.id) == TxnState.COMMITTED


def test_rollback_leaves_only_invisible_files(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS)
    t.insert([{"id": 1, "v": "a"}])
    tx = wh.transaction()
    assert wh.in_transaction and wh.current_transaction is tx
    t.insert([{"id": 2, "v": "b"}])
    t.delete("id = 1")
    assert rows_of(t) == [(2, "b")]
    wh.rollback()
    assert not wh.in_transaction
    assert rows_of(t) == [(1, "a")]
    assert "delta_0000002_0000002_0000" in acid_dirs(t.spec.location)  # written, but aborted
    assert wh.metastore.get_txn_state(tx.id) == TxnState.ABORTED
    assert wh.metastore.valid_write_ids(None, "default", "t").is_write_id_aborted(2)
    t.insert([{"id": 3, "v": "c"}])
    assert rows_of(t) == [(1, "a"), (3, "c")]


def test_context_manager_aborts_on_exception(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS)
    with pytest.raises(RuntimeError), wh.transaction():
        t.insert([{"id": 1, "v": "a"}])
        raise RuntimeError("boom")
    assert not wh.in_transaction
    assert t.scan().to_arrow().num_rows == 0


def test_failed_statement_aborts_the_transaction(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS)
    wh.transaction()
    t.insert([{"id": 1, "v": "a"}])
    with pytest.raises(UnknownColumnError):
        t.update({"nope": 1})
    with pytest.raises(TxnAbortedError):
        t.insert([{"id": 2, "v": "b"}])
    with pytest.raises(TxnAbortedError):
        wh.commit()
    assert not wh.in_transaction
    assert t.scan().to_arrow().num_rows == 0


def test_failure_after_files_were_written_leaves_table_unchanged(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = wh.create_table("t", COLS, partition_columns=[("p", "int")])
    t.insert([{"id": 1, "v": "a", "p": 1}, {"id": 2, "v": "b", "p": 2}])
    real = EventSink._write_file
    calls = []

    def failing(self: EventSink, *args: object, **kwargs: object) -> object:
        # The second of the statement's four event files fails (they are written concurrently).
        calls.append(args)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(EventSink, "_write_file", failing)
    with pytest.raises(OSError, match="disk full"):
        t.update({"v": "concat(v, '!')"})
    monkeypatch.undo()
    assert rows_of(t) == [(1, "a", 1), (2, "b", 2)]
    assert any(
        d.startswith("delete_delta_0000002") for d in acid_dirs(StorePath(t.spec.location) / "p=1")
    )
    assert wh.metastore.valid_write_ids(None, "default", "t").is_write_id_aborted(2)


def test_lifecycle_errors(wh: Warehouse) -> None:
    with pytest.raises(TransactionStateError):
        wh.commit()
    with pytest.raises(TransactionStateError):
        wh.rollback()
    wh.transaction()
    with pytest.raises(TransactionStateError):
        wh.transaction()
    with pytest.raises(UnsupportedOperationError):
        wh.create_table("x", COLS)
    wh.commit()


def test_insert_overwrite_must_be_alone_in_its_transaction(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS)
    with pytest.raises(UnsupportedOperationError), wh.transaction():
        t.insert([{"id": 1, "v": "a"}])
        t.insert([{"id": 2, "v": "b"}], overwrite=True)
    assert t.scan().to_arrow().num_rows == 0


def test_heartbeat_keeps_a_long_transaction_alive(tmp_path: Path) -> None:
    from acid_platform.metastore import Metastore

    ms = Metastore.for_warehouse(tmp_path, txn_timeout_s=0.4)
    wh = Warehouse(str(tmp_path), ms)
    wh.metastore.create_database("default", location=str(tmp_path), if_not_exists=True)
    try:
        t = wh.create_table("t", COLS)
        with wh.transaction():
            t.insert([{"id": 1, "v": "a"}])
            import time

            time.sleep(1.0)
            assert ms.reap_timed_out() == []  # heartbeats (every 0.2 s) kept it alive
        assert rows_of(t) == [(1, "a")]
    finally:
        wh.close()


def test_query_reads_one_snapshot_and_sees_own_writes(wh: Warehouse) -> None:
    t = wh.create_table("t", COLS, partition_columns=[("p", "int")])
    wh.create_table("u", [("id", "int")]).insert([{"id": 1}, {"id": 3}])
    t.insert(
        [{"id": 1, "v": "a", "p": 1}, {"id": 2, "v": "b", "p": 1}, {"id": 3, "v": "c", "p": 2}]
    )
    sql = "WITH k AS (SELECT id FROM u) SELECT t.p, count(*) AS n FROM t JOIN k ON t.id = k.id GROUP BY t.p ORDER BY t.p"
    assert wh.query(sql).to_pylist() == [{"p": 1, "n": 1}, {"p": 2, "n": 1}]
    with wh.transaction():
        t.delete("id = 3")
        assert wh.query(sql).to_pylist() == [{"p": 1, "n": 1}]
    assert wh.query("SELECT count(*) AS n FROM default.t").to_pylist() == [{"n": 2}]


# --------------------------------------------------------------------------- issue 13, smaller items


def test_an_outdated_single_statement_says_what_conflicted_with_whom(wh: Warehouse) -> None:
    """A single UPDATE whose snapshot went stale names the table, the transaction that committed
    first, and that a retry may succeed (as the multi-statement WriteConflictError does)."""
    from acid_platform.table.transaction import OutdatedSnapshot, Transaction, ledger_of

    t = wh.create_table("acct", [("id", "int"), ("bal", "int")])
    t.insert([{"id": 1, "bal": 10}])
    mine = Transaction(wh)  # an autocommit statement's transaction: its snapshot is taken
    mine.snapshot(t.spec)
    with Warehouse.open(wh.root, wh.metastore.url) as other:
        other.table("acct").update({"bal": "bal + 1"}, "id = 1")  # write id 2, commits first
        (winner,) = other.metastore.writers_of("default", "acct", [2]).values()
    with pytest.raises(OutdatedSnapshot) as info:
        ledger_of(mine).check_outdated(t.spec)
    mine.rollback()
    message = str(info.value)
    assert "write conflict on default.acct" in message
    assert f"txnid:{winner} (write id 2) committed" in message
    assert f"while txnid:{mine.id} waited" in message
    assert "retrying the statement" in message and "may succeed" in message


def test_partitions_registered_by_a_rolled_back_transaction_are_unregistered(
    wh: Warehouse,
) -> None:
    t = wh.create_table("p", [("k", "int")], partition_columns=[("ds", "string")])
    t.insert([{"k": 1, "ds": "kept"}])
    with pytest.raises(RuntimeError), wh.transaction():
        t.insert([{"k": 2, "ds": "new"}, {"k": 3, "ds": "kept"}])
        assert sorted(wh.list_partitions("p")) == ["ds=kept", "ds=new"]
        raise RuntimeError("roll back")
    assert wh.list_partitions("p") == ["ds=kept"]
    wh.transaction()
    t.insert([{"k": 4, "ds": "other"}])
    wh.rollback()
    assert wh.list_partitions("p") == ["ds=kept"]
    assert [r["k"] for r in t.scan().to_arrow().to_pylist()] == [1]
    t.insert([{"k": 5, "ds": "new"}])  # the session's partition cache forgot it too
    assert sorted(wh.list_partitions("p")) == ["ds=kept", "ds=new"]


# --------------------------------------------------------------------------- issue 29, item 8


def test_an_update_that_waited_for_the_lock_reads_the_writer_it_waited_for(
    wh: Warehouse,
) -> None:
    """Lock, then snapshot (Hive's driver): an autocommit UPDATE queued behind another
    updater's EXCL_WRITE lock runs once, on a snapshot that holds the other's commit; no
    stale snapshot, no re-run, no write conflict, no lost update."""
    t = wh.create_table("acct", [("id", "int"), ("bal", "int")])
    t.insert([{"id": 1, "bal": 10}])
    waits = {"acid.lock.wait.timeout.s": "60"}
    with (
        Warehouse.open(wh.root, wh.metastore.url) as other,
        Warehouse.open(wh.root, wh.metastore.url, conf=waits) as waiter,
    ):
        other.transaction()
        other.table("acct").update({"bal": "bal + 1"}, "id = 1")  # holds EXCL_WRITE
        failed: list[BaseException] = []

        def update() -> None:
            try:
                waiter.table("acct").update({"bal": "bal + 100"}, "id = 1")
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed.append(exc)

        thread = threading.Thread(target=update)
        thread.start()
        poll(
            lambda: (
                bool(failed) or any(r["State"] == "WAITING" for r in other.metastore.show_locks())
            ),
            "the UPDATE to wait for the lock",
        )
        other.commit()
        thread.join(timeout=60)
        assert not thread.is_alive() and failed == []
        assert [r["bal"] for r in other.table("acct").scan().to_arrow().to_pylist()] == [111]
        assert other.metastore.valid_txns().aborted_txns == ()  # it ran once, first time


def test_retries_back_off_with_full_jitter() -> None:
    import random

    from acid_platform.table.statement import OUTDATED_BACKOFF_S, backoff_s

    rng = random.Random(7)
    for attempt in range(4):
        waits = [backoff_s(attempt, rng) for _ in range(200)]
        assert all(0.0 <= w <= OUTDATED_BACKOFF_S * 2**attempt for w in waits)
        assert max(waits) > OUTDATED_BACKOFF_S * 2**attempt * 0.8  # spread, not fixed
