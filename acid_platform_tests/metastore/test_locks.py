"""Locks: Hive 4's matrix and scopes (TestTxnHandler cases), queue order, waits, expiry."""

from __future__ import annotations

import threading
import time

import pytest

from acid_platform.errors import (
    InvalidNameError,
    LockTimeoutError,
    NoSuchLockError,
    NoSuchTxnError,
    TxnAbortedError,
    TxnOpenError,
)
from acid_platform.metastore import (
    SHOW_LOCKS_COLUMNS,
    LockComponent,
    LockState,
    LockType,
    Metastore,
)

from .conftest import FakeClock

R, W, X, E = LockType.SHARED_READ, LockType.SHARED_WRITE, LockType.EXCL_WRITE, LockType.EXCLUSIVE
ACQ, WAIT = "acquired", "waiting"


def comp(
    lock_type: LockType,
    db: str = "mydb",
    table: str | None = "mytable",
    partition: str | None = "mypartition=myvalue",
) -> LockComponent:
    return LockComponent(lock_type, db, table, partition)


def request(ms: Metastore, lock_type: LockType, *scope: str | None, txn: bool = False) -> str:
    txn_id = ms.open_txn() if txn else None
    return ms.lock(txn_id, [comp(lock_type, *scope)]).state  # type: ignore[arg-type]


# Hive's TestTxnHandler scope cases, all EXCLUSIVE and without a txn: (first, second, state).
SCOPE_CASES = {
    "different_dbs": (("mydb", None, None), ("yourdb", None, None), ACQ),
    "same_db": (("mydb", None, None), ("mydb", None, None), WAIT),
    "db_locks_table": (("mydb", None, None), ("mydb", "mytable", None), WAIT),
    "db_does_not_lock_table_in_other_db": (("mydb", None, None), ("yourdb", "mytable", None), ACQ),
    "different_tables": (("mydb", "mytable", None), ("mydb", "yourtable", None), ACQ),
    "same_table": (("mydb", "mytable", None), ("mydb", "mytable", None), WAIT),
    "table_locks_partition": (("mydb", "mytable", None), ("mydb", "mytable", "p=1"), WAIT),
    "partition_locks_table": (("mydb", "mytable", "p=1"), ("mydb", "mytable", None), WAIT),
    "other_table_does_not_lock_partition": (
        ("mydb", "mytable", None),
        ("mydb", "yourtable", "p=1"),
        ACQ,
    ),
    "different_partitions": (("mydb", "mytable", "p=1"), ("mydb", "mytable", "p=2"), ACQ),
    "same_partition": (("mydb", "mytable", "p=1"), ("mydb", "mytable", "p=1"), WAIT),
}


@pytest.mark.parametrize("case", sorted(SCOPE_CASES))
def test_lock_scopes(ms: Metastore, case: str) -> None:
    first, second, expected = SCOPE_CASES[case]
    assert request(ms, E, *first) == ACQ
    assert request(ms, E, *second) == expected


# Hive 4 compatibility (CheckLockFunction): requested x existing -> acquired?
MATRIX = {
    (R, R): ACQ,
    (R, W): ACQ,
    (R, X): ACQ,
    (R, E): WAIT,
    (W, R): ACQ,
    (W, W): ACQ,
    (W, X): WAIT,
    (W, E): WAIT,
    (X, R): ACQ,
    (X, W): WAIT,
    (X, X): WAIT,
    (X, E): WAIT,
    (E, R): WAIT,
    (E, W): WAIT,
    (E, X): WAIT,
    (E, E): WAIT,
}


@pytest.mark.parametrize(("requested", "existing"), sorted(MATRIX, key=str))
def test_lock_matrix_on_one_partition(
    ms: Metastore, requested: LockType, existing: LockType
) -> None:
    assert request(ms, existing, txn=True) == ACQ
    assert request(ms, requested, txn=True) == MATRIX[(requested, existing)]


@pytest.mark.parametrize(
    ("existing", "requested", "expected"),
    [
        # Hive: EXCLUSIVE on a table/partition does not block SHARED_READ on the database...
        (comp(E, table="mytable", partition=None), comp(R, table=None, partition=None), ACQ),
        (comp(E), comp(R, table=None, partition=None), ACQ),
        # ...nor does SHARED_READ on the database block EXCLUSIVE on a table in it.
        (comp(R, table=None, partition=None), comp(E, partition=None), ACQ),
        (comp(R, table=None, partition=None), comp(E), ACQ),
        # but the other way round they do
        (comp(E, table=None, partition=None), comp(R, partition=None), WAIT),
        (comp(R, partition=None), comp(E, table=None, partition=None), WAIT),
        (comp(E, partition=None), comp(R), WAIT),
        (comp(X, table=None, partition=None), comp(W), WAIT),
    ],
)
def test_database_level_exceptions(
    ms: Metastore, existing: LockComponent, requested: LockComponent, expected: str
) -> None:
    assert ms.lock(None, [existing]).state == ACQ
    assert ms.lock(None, [requested]).state == expected


def test_locks_of_one_txn_never_block_each_other(ms: Metastore) -> None:
    txn = ms.open_txn()
    assert ms.lock(txn, [comp(E)]).state == ACQ
    assert ms.lock(txn, [comp(E), comp(X, partition=None)]).state == ACQ
    assert ms.lock(None, [comp(R)]).state == WAIT  # txn-less requests conflict with everyone


def test_a_txn_never_queues_behind_waiters_for_a_lock_it_holds(ms: Metastore) -> None:
    # A multi-statement txn's second UPDATE asks again for what its first one holds; the other
    # writer queued in between must not block it (it would wait for us: a deadlock).
    txn = ms.open_txn()
    assert ms.lock(txn, [comp(X, partition=None)]).state == ACQ
    other = ms.open_txn()
    waiting = ms.lock(other, [comp(X, partition=None)])
    assert waiting.state == WAIT
    assert ms.lock(txn, [comp(X, partition=None)]).state == ACQ  # same object, same type
    assert ms.lock(txn, [comp(W)]).state == ACQ  # a partition of it, a weaker type
    # Not covered: a stronger type, or another object, still queues behind the waiter.
    assert ms.lock(txn, [comp(E, partition=None)]).state == WAIT
    assert ms.lock(txn, [comp(X, table="yourtable", partition=None)]).state == ACQ
    ms.abort_txn(txn)
    assert ms.check_lock(waiting.lock_id).state == ACQ


def test_a_request_is_all_or_nothing(ms: Metastore) -> None:
    blocker = ms.lock(None, [comp(E, partition="p=2")]).lock_id
    req = ms.lock(None, [comp(E, partition="p=1"), comp(E, partition="p=2")])
    assert req.state == WAIT
    mine = [r for r in ms.show_locks() if r["Lock ID"].startswith(f"{req.lock_id}.")]
    assert [r["State"] for r in mine] == ["WAITING", "WAITING"]
    assert mine[1]["Blocked By"] == f"{blocker}.1"
    assert ms.lock(None, [comp(E, partition="p=1")]).state == WAIT  # queued behind req
    ms.unlock(blocker)
    assert ms.check_lock(req.lock_id).state == ACQ
    assert {r["State"] for r in ms.show_locks() if r["Lock ID"].startswith(f"{req.lock_id}.")} == {
        "ACQUIRED"
    }


def test_the_queue_is_fifo_and_never_waits_on_a_later_request(ms: Metastore) -> None:
    reader = ms.lock(None, [comp(R)]).lock_id
    writer = ms.lock(None, [comp(E)])
    assert writer.state == WAIT  # behind the reader
    late_reader = ms.lock(None, [comp(R)])
    assert late_reader.state == WAIT  # no barging past the waiting writer
    ms.unlock(reader)
    assert ms.check_lock(late_reader.lock_id).state == WAIT
    assert ms.check_lock(writer.lock_id).state == ACQ  # the later reader does not block it
    ms.unlock(writer.lock_id)
    assert ms.check_lock(late_reader.lock_id).state == ACQ


def test_txn_locks_go_at_commit_and_abort(ms: Metastore) -> None:
    t1, t2 = ms.open_txns(2)
    ms.lock(t1, [comp(X)])
    waiting = ms.lock(t2, [comp(X)])
    assert waiting.state == WAIT
    ms.commit_txn(t1)
    assert ms.check_lock(waiting.lock_id).state == ACQ
    ms.abort_txn(t2)
    assert ms.show_locks() == []
    with pytest.raises(NoSuchLockError):
        ms.check_lock(waiting.lock_id)


def test_lock_errors_are_typed(ms: Metastore) -> None:
    txn = ms.open_txn()
    lock_id = ms.lock(txn, [comp(W)]).lock_id
    with pytest.raises(TxnOpenError):
        ms.unlock(lock_id)
    for bad in (999, -1, "1"):
        with pytest.raises(NoSuchLockError):
            ms.check_lock(bad)  # type: ignore[arg-type]
        with pytest.raises(NoSuchLockError):
            ms.unlock(bad)  # type: ignore[arg-type]
    free = ms.lock(None, [comp(R, table="other")]).lock_id
    ms.unlock(free)
    with pytest.raises(NoSuchLockError):
        ms.unlock(free)
    ms.abort_txn(txn)
    with pytest.raises(TxnAbortedError):
        ms.lock(txn, [comp(W)])
    with pytest.raises(NoSuchTxnError):
        ms.lock(424242, [comp(W)])
    with pytest.raises(ValueError):
        ms.lock(None, [])
    with pytest.raises(InvalidNameError):
        LockComponent(R, "mydb", None, "p=1")  # a partition needs a table
    with pytest.raises(InvalidNameError):
        LockComponent(R, "my db")
    with pytest.raises(ValueError):
        LockComponent("NOT_A_LOCK", "mydb")  # type: ignore[arg-type]


def test_wait_times_out_and_withdraws_the_request(ms: Metastore) -> None:
    ms.lock(None, [comp(E)])
    with pytest.raises(LockTimeoutError, match="blocked by lock 1.1"):
        ms.lock(None, [comp(R)], wait_s=0.05)
    assert [r["Lock ID"] for r in ms.show_locks()] == ["1.1"]


def test_wait_returns_once_the_blocker_is_gone(ms: Metastore) -> None:
    blocker = ms.lock(None, [comp(E)]).lock_id
    result: list[object] = []
    waiter = threading.Thread(
        target=lambda: result.append(ms.lock(None, [comp(E)], wait_s=60).state)
    )
    waiter.start()
    deadline = time.monotonic() + 30
    while len(ms.show_locks()) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)  # wait until the request is queued (not a pass condition)
    ms.unlock(blocker)
    waiter.join(timeout=60)
    assert result == [LockState.ACQUIRED]


def test_txnless_locks_expire_without_heartbeats(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=10, clock=clock) as ms:
        kept = ms.lock(None, [comp(R, table="a")]).lock_id
        dropped = ms.lock(None, [comp(R, table="b")]).lock_id
        txn = ms.open_txn()
        held = ms.lock(txn, [comp(R, table="c")]).lock_id
        clock.advance(8)
        ms.heartbeat(txn_id=txn, lock_id=kept)
        clock.advance(8)
        ms.reap_timed_out()
        assert {r["Lock ID"] for r in ms.show_locks()} == {f"{kept}.1", f"{held}.1"}
        with pytest.raises(NoSuchLockError):
            ms.heartbeat(lock_id=dropped)


def test_show_locks_has_hives_columns(ms: Metastore, clock: FakeClock) -> None:
    txn = ms.open_txn()
    ms.lock(txn, [comp(X)], agent_info="query-1")
    ms.lock(None, [comp(W, partition=None)], user="bob", host="h2")
    rows = ms.show_locks()
    assert all(tuple(r) == SHOW_LOCKS_COLUMNS for r in rows)
    first, second = rows
    assert first["Lock ID"] == "1.1" and first["Type"] == "EXCL_WRITE"
    assert first["Transaction ID"] == txn and first["State"] == "ACQUIRED"
    assert first["Acquired At"] == int(clock.now * 1000) and first["Agent Info"] == "query-1"
    assert (first["Database"], first["Table"], first["Partition"]) == (
        "mydb",
        "mytable",
        "mypartition=myvalue",
    )
    assert second["Transaction ID"] is None and second["State"] == "WAITING"
    assert second["Blocked By"] == "1.1" and second["User"] == "bob"
    assert second["Last Heartbeat"] == int(clock.now * 1000)


# --------------------------------------------------------------------------- expiry in the lock check


def test_a_lock_blocked_by_a_timed_out_txn_aborts_it_and_proceeds(
    url: str, clock: FakeClock
) -> None:
    """Issue 13 item 1: a killed client's EXCL_WRITE no longer holds the table past its
    time-out; the next request aborts the silent txn itself (no housekeeper needed)."""
    with Metastore(url, txn_timeout_s=10, clock=clock) as ms:
        dead = ms.open_txn()
        blocker = ms.lock(dead, [comp(X)]).lock_id
        live = ms.open_txn()
        clock.advance(9)
        waiting = ms.lock(live, [comp(X)])
        assert waiting.state == LockState.WAITING  # not timed out yet: it waits
        clock.advance(2)
        assert ms.check_lock(waiting.lock_id).state == LockState.ACQUIRED
        assert ms.get_txn_state(dead).value == "aborted"
        assert f"{blocker}.1" not in {r["Lock ID"] for r in ms.show_locks()}
        with pytest.raises(TxnAbortedError):
            ms.commit_txn(dead)
        ms.commit_txn(live)


def test_a_fresh_request_and_a_wait_both_reap_a_dead_blocker(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=10, clock=clock) as ms:
        dead = ms.open_txn()
        ms.lock(dead, [comp(E, partition=None)])
        ms.lock(None, [comp(X, table="other")])  # a txn-less lock nobody heartbeats
        clock.advance(11)
        first = ms.open_txn()
        assert ms.lock(first, [comp(X)], wait_s=0).state == LockState.ACQUIRED
        ms.heartbeat(txn_id=first)
        second = ms.open_txn()
        assert ms.lock(second, [comp(X, table="other")], wait_s=5).acquired
        assert ms.get_txn_state(dead).value == "aborted"


def test_a_live_blocker_is_not_reaped(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=10, clock=clock) as ms:
        holder = ms.open_txn()
        ms.lock(holder, [comp(X)])
        for _ in range(3):
            clock.advance(8)
            ms.heartbeat(txn_id=holder)
        waiter = ms.open_txn()
        with pytest.raises(LockTimeoutError, match="blocked by lock"):
            ms.lock(waiter, [comp(X)], wait_s=0.05)
        assert ms.get_txn_state(holder).value == "open"
