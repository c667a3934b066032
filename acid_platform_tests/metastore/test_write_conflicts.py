"""First committer wins: update/delete of the same partition by overlapping txns conflicts."""

from __future__ import annotations

import pytest

from acid_platform.errors import TxnAbortedError, WriteConflictError
from acid_platform.metastore import LockComponent, LockType, Metastore
from acid_platform_tests.helpers import make_table

CASES = [
    ("update", "update", True),
    ("update", "delete", True),
    ("delete", "update", True),
    ("delete", "delete", True),
    ("insert", "update", False),
    ("update", "insert", False),
    ("insert", "delete", False),
    ("delete", "insert", False),
    ("insert", "insert", False),
]


@pytest.mark.parametrize(("first_op", "second_op", "conflict"), CASES)
@pytest.mark.parametrize("first_to_commit", ["older", "younger"])
def test_overlapping_writers_of_one_partition(
    ms: Metastore, first_op: str, second_op: str, conflict: bool, first_to_commit: str
) -> None:
    make_table(ms, partitioned=True)
    older, younger = ms.open_txns(2)
    winner, loser = (older, younger) if first_to_commit == "older" else (younger, older)
    ms.add_write_components(winner, "db", "t", ["p=1"], first_op)
    ms.add_write_components(loser, "db", "t", ["p=1"], second_op)
    ms.lock(loser, [LockComponent(LockType.SHARED_WRITE, "db", "t", "p=1")])
    ms.commit_txn(winner)
    if not conflict:
        ms.commit_txn(loser)
        assert ms.get_txn_state(loser) == "committed"
        return
    with pytest.raises(WriteConflictError) as err:
        ms.commit_txn(loser)
    message = str(err.value)
    assert f"txnid:{loser}" in message and f"txnid:{winner}" in message
    assert "db/t/p=1" in message and f"{second_op}/{first_op}" in message
    assert isinstance(err.value, TxnAbortedError)
    assert ms.get_txn_state(loser) == "aborted"
    assert ms.show_locks() == []  # the loser's locks went with it
    assert ms.valid_write_ids(None, "db", "t").is_write_id_aborted(
        ms.valid_write_ids(None, "db", "t").aborted_write_ids[0]
    )


def test_txns_that_did_not_overlap_never_conflict(ms: Metastore) -> None:
    make_table(ms)
    first = ms.open_txn()
    ms.add_write_components(first, "db", "t", [None], "update")
    ms.commit_txn(first)
    second = ms.open_txn()  # started after first committed
    ms.add_write_components(second, "db", "t", [None], "delete")
    ms.commit_txn(second)
    assert ms.get_txn_state(second) == "committed"


def test_other_partitions_and_tables_do_not_conflict(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    make_table(ms, name="u")
    a, b, c = ms.open_txns(3)
    ms.add_write_components(a, "db", "t", ["p=1"], "update")
    ms.add_write_components(b, "db", "t", ["p=2"], "update")
    ms.add_write_components(c, "db", "u", [None], "update")
    for txn in (a, b, c):
        ms.commit_txn(txn)


def test_a_table_level_write_conflicts_with_every_partition(ms: Metastore) -> None:
    # Hive never records both forms for one table; when it happens here, be safe.
    make_table(ms, partitioned=True)
    a, b = ms.open_txns(2)
    ms.add_write_components(a, "db", "t", ["p=1"], "delete")
    ms.add_write_components(b, "db", "t", [None], "update")
    ms.commit_txn(a)
    with pytest.raises(WriteConflictError, match="db/t/p=1"):
        ms.commit_txn(b)


def test_three_overlapping_updaters_only_the_first_wins(ms: Metastore) -> None:
    make_table(ms)
    txns = ms.open_txns(3)
    for txn in txns:
        ms.add_write_components(txn, "db", "t", [None], "update")
    ms.commit_txn(txns[1])
    for loser in (txns[0], txns[2]):
        with pytest.raises(WriteConflictError):
            ms.commit_txn(loser)
    assert [ms.get_txn_state(t) for t in txns] == ["aborted", "committed", "aborted"]


def test_grouped_components_record_every_operation_under_one_write_id(ms: Metastore) -> None:
    # a MERGE's insert and update branches, recorded together: the update still conflicts
    make_table(ms, partitioned=True)
    a, b = ms.open_txns(2)
    groups = [("insert", ["p=1", "p=2"]), ("update", ["p=2"])]
    write_id = ms.add_write_component_groups(a, "db", "t", groups)
    assert write_id == ms.allocate_write_id(a, "db", "t")
    ms.add_write_components(b, "db", "t", ["p=2"], "delete")
    ms.commit_txn(a)
    with pytest.raises(WriteConflictError, match="db/t/p=2"):
        ms.commit_txn(b)
    with pytest.raises(ValueError):
        ms.add_write_component_groups(ms.open_txn(), "db", "t", [])


# --------------------------------------------------------------------------- issue 29, item 8


def test_a_writer_the_snapshot_sees_is_no_conflict(ms: Metastore) -> None:
    """Snapshot isolation, not open order: a txn that opened before another updater committed
    but took its snapshot after that commit read the other's rows, so its update does not
    conflict (an autocommit statement's snapshot is taken once its locks are granted)."""
    make_table(ms, partitioned=True)
    waiting, holder = ms.open_txns(2)
    ms.add_write_components(holder, "db", "t", ["p=1"], "update")
    ms.commit_txn(holder)
    assert not ms.valid_txns(waiting).is_txn_valid(holder)  # younger: not in its open snapshot
    snapshot = ms.valid_txns(waiting, latest=True)  # after the holder's commit: sees it
    assert snapshot.is_txn_valid(holder) and snapshot.is_txn_valid(waiting)
    ms.add_write_components(waiting, "db", "t", ["p=1"], "update")
    ms.commit_txn(waiting, snapshot=snapshot)
    assert ms.get_txn_state(waiting) == "committed"


def test_a_writer_the_snapshot_does_not_see_still_conflicts(ms: Metastore) -> None:
    """The lost update the write set exists to stop: the snapshot was taken before the other
    updater committed, so it does not see it, and the second committer is aborted."""
    make_table(ms, partitioned=True)
    loser, winner = ms.open_txns(2)
    snapshot = ms.valid_txns(loser, latest=True)  # before the winner's commit
    ms.add_write_components(winner, "db", "t", ["p=1"], "update")
    ms.add_write_components(loser, "db", "t", ["p=1"], "delete")
    ms.commit_txn(winner)
    with pytest.raises(WriteConflictError, match="db/t/p=1"):
        ms.commit_txn(loser, snapshot=snapshot)
    assert ms.get_txn_state(loser) == "aborted"


def test_without_a_snapshot_every_later_committer_conflicts(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    waiting, holder = ms.open_txns(2)
    ms.add_write_components(holder, "db", "t", ["p=1"], "update")
    ms.commit_txn(holder)
    ms.add_write_components(waiting, "db", "t", ["p=1"], "update")
    with pytest.raises(WriteConflictError):
        ms.commit_txn(waiting)
