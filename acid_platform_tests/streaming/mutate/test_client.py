"""``MutatorClient`` and its transaction: locks, heartbeats and the lock-failure listener, a
stale snapshot re-opened before anything is written, one commit for several tables (or one
abort), and a commit that refuses files no coordinator reported."""

from __future__ import annotations

import os
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acid_platform import Warehouse
from acid_platform.errors import (
    FileConflictError,
    LockTimeoutError,
    MissingFileError,
    MutationError,
    TransactionStateError,
    TxnAbortedError,
    UnsupportedOperationError,
)
from acid_platform.streaming.mutate import (
    MutationReport,
    MutatorClient,
    MutatorCoordinator,
    apply_changes,
    prepare_changes,
)
from acid_platform.streaming.mutate.files import written_files
from acid_platform.table import Table
from acid_platform_tests.helpers import open_warehouse, poll
from acid_platform_tests.streaming.mutate.conftest import make_acct, with_row_ids


def _changes(table: Table, region: str, *, new_id: int) -> pa.Table:
    """A change set for ``table``: one update and one delete of the region's rows, one insert."""
    rows = [r for r in table.scan().to_arrow().to_pylist() if r.get("region", region) == region][:2]
    changes = [
        {"mutation": "U", **{**rows[0], "bal": Decimal("1.25")}},
        {"mutation": "D", **rows[1]},
        {"mutation": "I", "id": new_id, "name": "new", "bal": Decimal("2.50"), "region": region},
    ]
    if not table.spec.partition_columns:
        changes = [{k: v for k, v in c.items() if k != "region"} for c in changes]
    return pa.Table.from_pylist(changes)


def test_begin_locks_the_sinks_for_writing_and_the_sources_for_reading(wh: Warehouse) -> None:
    acct = make_acct(wh)
    make_acct(wh, "rates", rows=5)
    client = MutatorClient(wh, ["acct"], sources=["rates"])
    txn = client.new_transaction()
    with pytest.raises(TransactionStateError, match="begin"):
        _ = txn.tables
    txn.begin()
    locks = {
        (r["Table"], r["Type"])
        for r in wh.metastore.show_locks()
        if r["Transaction ID"] == txn.txn_id
    }
    assert locks == {("acct", "EXCL_WRITE"), ("rates", "SHARED_READ")}
    assert not txn.tables["default.rates"].is_sink
    with pytest.raises(LockTimeoutError):  # another writer waits (here: gives up at once)
        acct.update({"bal": "bal + 1"}, "id = 1")
    assert len(txn.read("rates", columns=["id"])) == 5
    client.close()  # aborts what is still open
    assert txn.state == "aborted"
    assert wh.metastore.show_locks() == []


def test_an_insert_only_table_cannot_be_a_sink(wh: Warehouse) -> None:
    wh.create_table("log", [("id", "int")], properties={"transactional_properties": "insert_only"})
    with pytest.raises(UnsupportedOperationError, match="full ACID"):
        MutatorClient(wh, ["log"])


def test_a_writer_committing_while_begin_waits_makes_it_reopen_the_transaction(
    tmp_path: Path,
) -> None:
    with open_warehouse(tmp_path, {"acid.lock.wait.timeout.s": "60"}) as wh:
        acct = make_acct(wh)
        writer = wh.transaction()
        acct.update({"name": "'first'"}, "id = 1")  # holds EXCL_WRITE until it commits
        txn = MutatorClient(wh, ["acct"]).new_transaction()
        done = threading.Event()

        def begin() -> None:
            txn.begin()
            done.set()

        thread = threading.Thread(target=begin)
        thread.start()
        poll(
            lambda: any(r["State"] == "WAITING" for r in wh.metastore.show_locks()),
            "begin() to wait for the lock",
        )
        first = max(r["Transaction ID"] for r in wh.metastore.show_locks())
        wh.commit()
        poll(done.is_set, "begin() to finish")
        thread.join()
        assert writer.state == "committed"
        assert txn.txn_id is not None and txn.txn_id > first  # its first snapshot was stale
        assert wh.metastore.get_txn_state(first).value == "aborted"
        rows = txn.read("acct", columns=["id", "name"]).to_pylist()
        assert [r["name"] for r in rows if r["id"] == 1] == ["first"]  # it sees the writer
        txn.abort()


def test_the_lock_failure_listener_hears_of_a_lost_transaction(tmp_path: Path) -> None:
    with open_warehouse(tmp_path) as base:
        make_acct(base)
    heard: list[tuple[int, list[str], BaseException]] = []
    wh = Warehouse.open(tmp_path / "wh", txn_timeout_s=1.0)
    try:
        client = MutatorClient(
            wh,
            ["acct"],
            lock_failure_listener=lambda t, names, exc: heard.append((t, list(names), exc)),
        )
        txn = client.new_transaction().begin()
        assert txn.txn_id is not None
        wh.metastore.abort_txn(txn.txn_id)  # e.g. ABORT TRANSACTIONS, or the time-out reaper
        poll(lambda: bool(heard), "the listener to be called")
        txn_id, names, exc = heard[0]
        assert (txn_id, names) == (txn.txn_id, ["default.acct"])
        assert isinstance(exc, TxnAbortedError)
        with pytest.raises(TxnAbortedError, match="lost its locks"):
            txn.commit()
        assert txn.state == "aborted"
    finally:
        wh.close()


def _apply(txn: Any, name: str, new_id: int, wh: Warehouse) -> MutationReport:
    prepared = prepare_changes(txn, name, _changes(wh.table(name), "eu", new_id=new_id), ["id"])
    return apply_changes(txn.table(name), prepared)


def test_one_commit_makes_both_tables_changes_visible_at_once(wh: Warehouse) -> None:
    a, b = make_acct(wh, "a"), make_acct(wh, "b", partitioned=False, buckets=0)
    before_a, before_b = with_row_ids(a), with_row_ids(b)
    txn = MutatorClient(wh, ["a", "b"]).new_transaction().begin()
    reports = [_apply(txn, "a", 900, wh), _apply(txn, "b", 901, wh)]
    assert (with_row_ids(a), with_row_ids(b)) == (before_a, before_b)
    with wh.transaction():  # a reader whose snapshot predates the commit
        a.scan().to_arrow()
        metrics = txn.commit(reports)
        assert (with_row_ids(a), with_row_ids(b)) == (before_a, before_b)
    assert [(m.table, m.rows_inserted, m.rows_updated, m.rows_deleted) for m in metrics] == [
        ("default.a", 1, 1, 1),
        ("default.b", 1, 1, 1),
    ]
    for t, new_id in ((a, 900), (b, 901)):
        rows = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
        assert rows[new_id]["name"] == "new" and len(rows) == 40
    assert txn.state == "committed"


def test_an_abort_leaves_nothing_in_either_table(wh: Warehouse) -> None:
    a, b = make_acct(wh, "a"), make_acct(wh, "b")
    before = (with_row_ids(a), with_row_ids(b))
    txn = MutatorClient(wh, ["a", "b"]).new_transaction().begin()
    reports = [_apply(txn, "a", 900, wh), _apply(txn, "b", 901, wh)]
    assert all(r.files for r in reports)
    txn.abort()
    assert (with_row_ids(a), with_row_ids(b)) == before
    assert wh.metastore.get_txn_state(reports[0].txn_id).value == "aborted"
    assert wh.metastore.show_locks() == []


def test_a_commit_refuses_files_no_coordinator_reported(wh: Warehouse) -> None:
    acct = make_acct(wh)
    before = with_row_ids(acct)
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    report = _apply(txn, "acct", 900, wh)
    assert written_files(txn.table("acct"))
    with pytest.raises(MutationError, match="no coordinator reported them"):
        txn.commit()  # the report never reached the client
    assert txn.state == "aborted"
    assert with_row_ids(acct) == before
    assert report.files


def test_two_coordinators_writing_one_group_cannot_replace_each_others_file(
    wh: Warehouse,
) -> None:
    acct = make_acct(wh)
    txn = MutatorClient(wh, ["acct"]).new_transaction().begin()
    with MutatorCoordinator(txn.table("acct")) as first:
        first.insert(["eu"], {"id": 5000, "name": "x", "bal": None})
    assert first.report is not None
    # the second one into the same (partition, bucket) fails: files are created exclusively
    with pytest.raises(FileConflictError), MutatorCoordinator(txn.table("acct")) as second:
        second.insert(["eu"], {"id": 5001, "name": "y", "bal": None})
    txn.commit([first.report])  # the first one's file is intact
    assert len(acct.scan().to_arrow()) == 41
    # the commit recorded what the coordinators wrote: a file lost later is an error, not
    # fewer rows (issue 13, item 6)
    [written] = first.report.files
    os.remove(written.path)
    with pytest.raises(MissingFileError, match="bucket_"):
        acct.scan().to_arrow()
