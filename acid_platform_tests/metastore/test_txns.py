"""Transactions: ids, states, typed errors, heartbeats, the time-out reaper, snapshots."""

from __future__ import annotations

import pytest

from acid_platform.errors import (
    NoSuchLockError,
    NoSuchTxnError,
    TooManyOpenTxnsError,
    TxnAbortedError,
)
from acid_platform.metastore import (
    SHOW_TRANSACTIONS_COLUMNS,
    LockComponent,
    LockType,
    Metastore,
)
from acid_platform_tests.helpers import make_table

from .conftest import FakeClock


def test_txn_ids_start_at_one_and_are_consecutive(ms: Metastore) -> None:
    assert ms.open_txn() == 1
    assert ms.open_txns(5) == [2, 3, 4, 5, 6]
    assert ms.open_txn() == 7
    with pytest.raises(ValueError):
        ms.open_txns(0)


def test_commit_and_abort_change_state(ms: Metastore) -> None:
    a, b, c = ms.open_txns(3)
    ms.commit_txn(a)
    ms.abort_txn(b)
    assert [ms.get_txn_state(t) for t in (a, b, c)] == ["committed", "aborted", "open"]
    ms.abort_txn(b)  # aborting an aborted txn is a no-op, as in Hive 4


def test_bad_txn_ids_and_state_changes_raise_typed_errors(ms: Metastore) -> None:
    a, b = ms.open_txns(2)
    ms.commit_txn(a)
    ms.abort_txn(b)
    with pytest.raises(NoSuchTxnError, match="already committed"):
        ms.commit_txn(a)  # double commit
    with pytest.raises(TxnAbortedError, match="already aborted"):
        ms.commit_txn(b)  # commit after abort
    with pytest.raises(TxnAbortedError):
        ms.heartbeat(b)  # heartbeat of an aborted txn
    with pytest.raises(NoSuchTxnError):
        ms.heartbeat(a)
    with pytest.raises(NoSuchTxnError):
        ms.abort_txn(a)  # committed
    for bad in (99, 0, -1):
        with pytest.raises(NoSuchTxnError):
            ms.commit_txn(bad)
        with pytest.raises(NoSuchTxnError):
            ms.heartbeat(bad)
        with pytest.raises(NoSuchTxnError):
            ms.get_txn_state(bad)
    for wrong_type in ("1", 1.0, True, None):
        with pytest.raises(NoSuchTxnError):
            ms.commit_txn(wrong_type)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ms.heartbeat()


def test_abort_txns_is_all_or_nothing(ms: Metastore) -> None:
    a, b = ms.open_txns(2)
    with pytest.raises(NoSuchTxnError):
        ms.abort_txns([a, b, 42])
    assert ms.get_txn_state(a) == ms.get_txn_state(b) == "open"
    ms.abort_txns([a, b])
    assert ms.get_txn_state(a) == ms.get_txn_state(b) == "aborted"


def test_abort_transactions_reports_what_it_aborted(ms: Metastore) -> None:
    a, b, c = ms.open_txns(3)
    ms.abort_txn(a)
    assert ms.abort_transactions([a, b, c]) == [b, c]


def test_valid_txns_is_hives_snapshot(ms: Metastore) -> None:
    assert str(ms.valid_txns()) == "0:9223372036854775807::"
    make_table(ms)
    a, b, c = ms.open_txns(3)
    ms.allocate_write_id(b, "db", "t")  # it wrote: its abort stays on record
    ms.abort_txn(b)
    ms.commit_txn(c)
    snap = ms.valid_txns()
    assert str(snap) == "3:1:1:2"
    assert not snap.is_txn_valid(a) and not snap.is_txn_valid(b) and snap.is_txn_valid(c)


def test_a_txn_sees_itself_and_nothing_newer(ms: Metastore) -> None:
    make_table(ms)
    a, b, c, d = ms.open_txns(4)
    ms.allocate_write_id(a, "db", "t")
    ms.abort_txn(a)
    ms.commit_txn(d)
    mine = ms.valid_txns(c)
    assert str(mine) == "3:2:2:1"  # hwm = c itself; b open, a aborted; d (newer) invisible
    assert mine.is_txn_valid(c) and not mine.is_txn_valid(d)
    with pytest.raises(NoSuchTxnError):
        ms.valid_txns(77)


def test_read_only_txns_are_not_exceptions(ms: Metastore) -> None:
    ro = ms.open_txn(read_only=True)
    rw = ms.open_txn()
    assert str(ms.valid_txns()) == "2:2:2:"
    make_table(ms)
    with pytest.raises(Exception, match="read-only"):
        ms.allocate_write_id(ro, "db", "t")
    ms.commit_txn(ro)
    ms.commit_txn(rw)


def test_open_txn_cap(url: str) -> None:
    with Metastore(url, max_open_txns=3) as ms:
        first = ms.open_txns(3)
        with pytest.raises(TooManyOpenTxnsError, match="3"):
            ms.open_txn()
        ms.commit_txn(first[0])
        assert ms.open_txn() == 4


def test_heartbeat_keeps_a_txn_alive_and_the_reaper_aborts_the_silent(
    url: str, clock: FakeClock
) -> None:
    with Metastore(url, txn_timeout_s=300, clock=clock) as ms:
        make_table(ms)
        quiet, busy, done = ms.open_txns(3)
        ms.lock(quiet, [LockComponent(LockType.EXCLUSIVE, "db", "t")])
        ms.commit_txn(done)
        clock.advance(200)
        ms.heartbeat(busy)
        assert ms.reap_timed_out() == []
        clock.advance(200)  # quiet: 400 s silent; busy: 200 s
        assert ms.reap_timed_out() == [quiet]
        assert ms.get_txn_state(quiet) == "aborted"
        assert ms.get_txn_state(busy) == "open"
        assert ms.get_txn_state(done) == "committed"
        assert ms.show_locks() == []
        with pytest.raises(TxnAbortedError):
            ms.heartbeat(quiet)
        with pytest.raises(TxnAbortedError):
            ms.commit_txn(quiet)


def test_short_timeout_reaps_txns_and_txnless_locks(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=1, clock=clock) as ms:
        make_table(ms)
        txn = ms.open_txn()
        lock = ms.lock(None, [LockComponent(LockType.SHARED_READ, "db", "t")]).lock_id
        clock.advance(0.5)
        ms.heartbeat(lock_id=lock)
        clock.advance(0.7)
        assert ms.reap_timed_out() == [txn]
        assert len(ms.show_locks()) == 1  # heartbeated 0.7 s ago
        clock.advance(1.5)
        ms.reap_timed_out()
        assert ms.show_locks() == []
        with pytest.raises(NoSuchLockError):
            ms.heartbeat(lock_id=lock)


def test_heartbeat_txn_range_reports_aborted_and_unknown(ms: Metastore) -> None:
    ids = ms.open_txns(5)
    ms.abort_txn(ids[1])
    ms.commit_txn(ids[3])
    aborted, nosuch = ms.heartbeat_txn_range(ids[0], ids[-1] + 2)
    assert aborted == [ids[1]]
    assert nosuch == [ids[3], ids[-1] + 1, ids[-1] + 2]


def test_show_transactions_lists_open_and_aborted(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms)
    a, b, c = ms.open_txns(3, user="alice", host="h1")
    ms.allocate_write_id(b, "db", "t")
    ms.abort_txn(b)
    ms.commit_txn(c)
    rows = ms.show_transactions()
    assert [tuple(r) for r in rows] == [SHOW_TRANSACTIONS_COLUMNS] * 2
    assert [(r["Transaction ID"], r["Transaction State"]) for r in rows] == [
        (a, "OPEN"),
        (b, "ABORTED"),
    ]
    assert rows[0]["User"] == "alice" and rows[0]["Hostname"] == "h1"
    assert rows[0]["Started Time"] == int(clock.now * 1000)


def test_open_txns_by_agent_finds_a_writers_open_txns_only(ms: Metastore) -> None:
    tag = "acid_platform spark stream db.t " + "x" * 120  # stored clipped to 128 characters
    first, other, second, done = (ms.open_txn(agent_info=a) for a in (tag, "other", tag, tag))
    ms.commit_txn(done)
    assert ms.open_txns_by_agent(tag) == [first, second]
    ms.abort_txn(first)
    assert ms.open_txns_by_agent(tag) == [second]
    assert ms.open_txns_by_agent("other") == [other] and ms.open_txns_by_agent("none") == []


def test_purge_keeps_answers_and_drops_dead_rows(ms: Metastore) -> None:
    make_table(ms)
    writer = ms.open_txn()
    ms.add_write_components(writer, "db", "t", [None], "update")
    ms.commit_txn(writer)
    empty = ms.open_txn()
    ms.abort_txn(empty)  # purged by the abort itself
    counts = ms.purge_txn_history()
    assert counts == {"committed_txns": 1, "write_set": 1, "empty_aborted_txns": 0}
    assert ms.get_txn_state(writer) == "committed"  # known from its completed components
    assert ms.get_txn_state(empty) == "aborted"  # handed out, no row, no writes
    assert str(ms.valid_txns()) == "2:9223372036854775807::"
    assert ms.show_transactions() == []


def _txn_rows(ms: Metastore) -> list[tuple[int, str]]:
    return [(r["Transaction ID"], r["Transaction State"]) for r in ms.show_transactions()]


def test_an_abort_of_a_txn_that_wrote_nothing_purges_it_at_once(ms: Metastore) -> None:
    """Issue 13 item 3: empty aborts leave no history, so snapshots stay small."""
    make_table(ms)
    wrote, empty, locked_only, still_open = ms.open_txns(4)
    ms.allocate_write_id(wrote, "db", "t")
    ms.lock(locked_only, [LockComponent(LockType.SHARED_READ, "db", "t")])
    ms.abort_txns([wrote, empty, locked_only])
    assert _txn_rows(ms) == [(wrote, "ABORTED"), (still_open, "OPEN")]
    snap = ms.valid_txns()
    assert list(snap.aborted_txns) == [wrote] and list(snap.open_txns) == [still_open]
    assert snap.is_txn_valid(empty) and snap.is_txn_valid(locked_only)  # nothing to hide
    assert not snap.is_txn_valid(wrote) and not snap.is_txn_valid(still_open)
    # The write id lists are unchanged: only the txn that wrote is an aborted write.
    write_ids = ms.valid_write_ids(None, "db", "t")
    assert list(write_ids.aborted_write_ids) == [1] and write_ids.high_watermark == 1
    assert ms.show_locks() == []
    # A purged txn still answers as aborted: a repeated abort is a no-op, the rest refuse.
    assert ms.get_txn_state(empty) == "aborted"
    ms.abort_txn(empty)
    with pytest.raises(TxnAbortedError, match="already aborted"):
        ms.commit_txn(empty)
    with pytest.raises(TxnAbortedError):
        ms.heartbeat(locked_only)
    with pytest.raises(TxnAbortedError):
        ms.allocate_write_id(empty, "db", "t")
    with pytest.raises(TxnAbortedError):
        ms.lock(empty, [LockComponent(LockType.SHARED_READ, "db", "t")])
    assert ms.heartbeat_txn_range(wrote, still_open) == ([wrote, empty, locked_only], [])
    with pytest.raises(NoSuchTxnError):
        ms.get_txn_state(still_open + 1)  # never handed out
    ms.commit_txn(still_open)
    assert ms.purge_txn_history()["empty_aborted_txns"] == 0


def test_many_empty_aborts_leave_the_snapshot_small(ms: Metastore, clock: FakeClock) -> None:
    """1,000 aborted empty txns (a client that opens and gives up), explicit and reaped."""
    ids = ms.open_txns(1000)
    ms.abort_txns(ids[:500])
    clock.advance(3600)
    assert sorted(ms.reap_timed_out(timeout_s=60)) == ids[500:]
    assert ms.show_transactions() == []
    assert str(ms.valid_txns()) == f"{ids[-1]}:9223372036854775807::"
