"""Write ids and ValidWriteIdLists, and multi-statement transactions over several tables."""

from __future__ import annotations

import pytest

from acid_platform.errors import (
    InvalidNameError,
    MetastoreError,
    NoSuchObjectError,
    NoSuchTxnError,
    TxnAbortedError,
)
from acid_platform.format.write_id_list import ValidWriteIdList
from acid_platform.metastore import Metastore
from acid_platform_tests.helpers import make_table


def test_write_ids_are_per_table_consecutive_and_one_per_txn(ms: Metastore) -> None:
    make_table(ms, name="a")
    make_table(ms, name="b")
    t1, t2, t3 = ms.open_txns(3)
    assert ms.allocate_write_id(t2, "db", "a") == 1
    assert ms.allocate_write_id(t1, "db", "a") == 2
    assert ms.allocate_write_id(t2, "db", "a") == 1  # same txn, same table: same id
    assert ms.allocate_write_id(t3, "db", "b") == 1  # another table starts at 1
    assert ms.allocate_write_id(t1, "DB", "B") == 2


def test_batch_allocation_is_consecutive_in_txn_order(ms: Metastore) -> None:
    make_table(ms)
    ids = ms.open_txns(5)
    assert ms.allocate_write_id(ids[2], "db", "t") == 1
    assert ms.allocate_write_ids(list(reversed(ids)), "db", "t") == [5, 4, 1, 3, 2]


def test_write_id_errors_are_typed(ms: Metastore) -> None:
    make_table(ms)
    a, b = ms.open_txns(2)
    ms.abort_txn(a)
    with pytest.raises(TxnAbortedError):
        ms.allocate_write_id(a, "db", "t")
    with pytest.raises(NoSuchTxnError):
        ms.allocate_write_id(99, "db", "t")
    with pytest.raises(NoSuchObjectError):
        ms.allocate_write_id(b, "db", "nope")
    with pytest.raises(InvalidNameError):
        ms.allocate_write_id(b, "db", "no-pe")
    with pytest.raises(ValueError):
        ms.allocate_write_ids([], "db", "t")


def test_a_txn_sees_its_own_writes_and_not_open_or_aborted_ones(ms: Metastore) -> None:
    make_table(ms)
    aborted, mine, other = ms.open_txns(3)
    assert ms.allocate_write_id(aborted, "db", "t") == 1
    assert ms.allocate_write_id(other, "db", "t") == 2
    assert ms.allocate_write_id(mine, "db", "t") == 3
    ms.abort_txn(aborted)
    w = ms.valid_write_ids(mine, "db", "t")
    # Snapshot of txn 2: txn 3 (other) is newer, so its write id 2 is invalid (open).
    assert str(w) == "db.t:3:2:2:1"
    assert w.is_write_id_valid(3) and not w.is_write_id_valid(2)
    assert w.is_write_id_aborted(1)
    # Globally no write id is valid yet: Hive then lowers the watermark to the first
    # invalid id (GetValidWriteIdsForTableFunction), keeping min open write id 2.
    glob = ms.valid_write_ids(None, "db", "t")
    assert str(glob) == "db.t:1:2::1"
    assert not any(glob.is_write_id_valid(w) for w in (1, 2, 3))


def test_snapshot_isolation_hides_a_newer_txns_commit(ms: Metastore) -> None:
    make_table(ms)
    old, new = ms.open_txns(2)
    ms.allocate_write_id(new, "db", "t")
    ms.commit_txn(new)
    assert str(ms.valid_write_ids(old, "db", "t")) == "db.t:1:1:1:"
    assert str(ms.valid_write_ids(None, "db", "t")) == "db.t:1:9223372036854775807::"


def test_write_ids_of_a_fresh_table_and_of_an_earlier_snapshot(ms: Metastore) -> None:
    make_table(ms)
    assert str(ms.valid_write_ids(None, "db", "t")) == "db.t:0:9223372036854775807::"
    t1 = ms.open_txn()
    ms.allocate_write_id(t1, "db", "t")
    before = ms.valid_txns()
    ms.commit_txn(t1)
    stale = ms.valid_write_ids(None, "db", "t", valid_txns=before)
    assert not stale.is_write_id_valid(1)
    assert ms.valid_write_ids(None, "db", "t").is_write_id_valid(1)
    assert isinstance(stale, ValidWriteIdList)


def test_multi_statement_txn_commits_several_tables_atomically(ms: Metastore) -> None:
    make_table(ms, name="orders")
    make_table(ms, name="lines", partitioned=True)
    txn = ms.open_txn()
    ms.add_write_components(txn, "db", "orders", [None], "insert")  # statement 1
    ms.add_write_components(txn, "db", "lines", ["p=a", "p=b"], "insert")  # statement 2
    ms.add_write_components(txn, "db", "orders", [None], "update")  # statement 3
    assert ms.allocate_write_id(txn, "db", "orders") == 1
    assert ms.valid_write_ids(txn, "db", "orders").is_write_id_valid(1)  # own writes
    reader = ms.valid_txns()
    for table in ("orders", "lines"):
        assert not ms.valid_write_ids(None, "db", table).is_write_id_valid(1)
    ms.commit_txn(txn)
    for table in ("orders", "lines"):
        assert ms.valid_write_ids(None, "db", table).is_write_id_valid(1)
        assert not ms.valid_write_ids(None, "db", table, valid_txns=reader).is_write_id_valid(1)
    activity = {(a.table, a.partition): a for a in ms.write_activity()}
    assert set(activity) == {("orders", None), ("lines", "p=a"), ("lines", "p=b")}
    assert activity[("orders", None)].has_update_delete


def test_aborted_multi_statement_txn_leaves_aborted_ids_in_every_table(ms: Metastore) -> None:
    make_table(ms, name="x")
    make_table(ms, name="y")
    txn = ms.open_txn()
    ms.add_write_components(txn, "db", "x", [None], "insert")
    ms.add_write_components(txn, "db", "y", [None], "delete")
    ms.abort_txn(txn)
    for table in ("x", "y"):
        assert ms.valid_write_ids(None, "db", table).is_write_id_aborted(1)


def test_write_components_are_validated(ms: Metastore) -> None:
    make_table(ms)
    make_table(ms, name="p", partitioned=True)
    txn = ms.open_txn()
    with pytest.raises(MetastoreError, match="not partitioned"):
        ms.add_write_components(txn, "db", "t", ["p=1"], "insert")
    with pytest.raises(InvalidNameError):
        ms.add_write_components(txn, "db", "p", ["q=1"], "insert")
    with pytest.raises(ValueError):
        ms.add_write_components(txn, "db", "p", ["p=1"], "upsert")
    with pytest.raises(ValueError):
        ms.add_write_components(txn, "db", "p", [], "insert")
    with pytest.raises(NoSuchObjectError):
        ms.add_write_components(txn, "db", "nope", [None], "insert")
    assert ms.add_write_components(txn, "db", "p", ["p=1", "p=1"], "insert") == 1


def test_shared_statement_ids_are_one_counter_per_txn(ms: Metastore) -> None:
    """A transaction shared with Spark SQL (``wh.transaction()``) numbers its statements in the
    metastore: every process reserving ids gets distinct ones, in order, from where the owner
    started the counter; another txn has its own; the counter goes with the txn."""
    a, b = ms.open_txns(2)
    with pytest.raises(MetastoreError, match="does not share its statement ids"):
        ms.reserve_statement_ids(a)
    ms.share_statement_ids(a, first=2)  # two statements already ran in the owner's process
    ms.share_statement_ids(b)
    assert ms.reserve_statement_ids(a) == 2
    assert ms.reserve_statement_ids(a, 2) == 3  # a MERGE: two ids
    assert ms.reserve_statement_ids(b) == 0
    ms.share_statement_ids(a, first=1)  # sharing again never goes back
    assert ms.reserve_statement_ids(a) == 5
    ms.commit_txn(a)
    with pytest.raises(MetastoreError):  # only an open txn reserves
        ms.reserve_statement_ids(a)
    ms.release_statement_ids(a)
    ms.release_statement_ids(a)  # idempotent
    assert ms.reserve_statement_ids(b) == 1
