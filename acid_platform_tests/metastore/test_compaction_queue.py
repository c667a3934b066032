"""Compaction queue: states, dedup, workers, the ready-to-clean rule, cleanup and history."""

from __future__ import annotations

import pytest

from acid_platform.errors import MetastoreError, NoSuchObjectError
from acid_platform.metastore import (
    SHOW_COMPACTIONS_COLUMNS,
    CompactionInfo,
    CompactionState,
    Metastore,
    TxnState,
)
from acid_platform_tests.helpers import make_table

from .conftest import FakeClock


def run_to_ready(ms: Metastore, cq_id: int, highest_write_id: int) -> CompactionInfo:
    info = ms.claim_compaction("host1-worker7")
    assert info is not None and info.id == cq_id
    return ms.mark_compacted(cq_id, highest_write_id)


def committed_write(ms: Metastore, partition: str | None, op: str = "insert") -> int:
    txn = ms.open_txn()
    write_id = ms.add_write_components(txn, "db", "t", [partition], op)
    ms.commit_txn(txn)
    return write_id


def aborted_write(ms: Metastore, partitions: list[str | None]) -> int:
    txn = ms.open_txn()
    write_id = ms.add_write_components(txn, "db", "t", partitions, "insert")
    ms.abort_txn(txn)
    return write_id


def test_enqueue_deduplicates_while_initiated_or_working(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    first = ms.enqueue_compaction("db", "t", "p=1", "minor", initiator_id="h-init")
    assert first is not None
    assert ms.enqueue_compaction("db", "t", "p=1", "major") is None
    assert ms.enqueue_compaction("db", "t", "p=2", "major") is not None  # other partition
    assert ms.get_compaction(first).state == CompactionState.INITIATED
    ms.claim_compaction("h-w1")
    assert ms.enqueue_compaction("db", "t", "p=1", "major") is None  # working
    ms.mark_compacted(first, 0)
    assert ms.enqueue_compaction("db", "t", "p=1", "major") is not None  # ready for cleaning


def test_enqueue_is_validated(ms: Metastore) -> None:
    make_table(ms)
    with pytest.raises(NoSuchObjectError):
        ms.enqueue_compaction("db", "nope", None, "major")
    with pytest.raises(MetastoreError, match="not partitioned"):
        ms.enqueue_compaction("db", "t", "p=1", "major")
    with pytest.raises(ValueError):
        ms.enqueue_compaction("db", "t", None, "medium")


def test_claim_validates_the_worker_and_takes_the_oldest(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms, partitioned=True)
    a = ms.enqueue_compaction("db", "t", "p=1", "major", properties={"k": "v"}, run_as="etl")
    b = ms.enqueue_compaction("db", "t", "p=2", "minor")
    with pytest.raises(ValueError):
        ms.claim_compaction("")
    first = ms.claim_compaction("host1-worker7")
    assert first is not None
    assert (first.id, first.state, first.worker_id) == (a, CompactionState.WORKING, "host1-worker7")
    assert first.start == int(clock.now * 1000) and dict(first.properties) == {"k": "v"}
    assert first.txn_id is not None and ms.get_txn_state(first.txn_id) == "open"
    second = ms.claim_compaction("host1-worker8")
    assert second is not None and second.id == b
    assert ms.claim_compaction("host1-worker9") is None
    # a compactor txn is open: it is an exception in snapshots, its output stays invisible
    assert not ms.valid_txns().is_txn_valid(first.txn_id)


def test_mark_compacted_commits_the_txn_and_records_next_txn_id(ms: Metastore) -> None:
    make_table(ms)
    committed_write(ms, None)
    cq = ms.enqueue_compaction("db", "t", None, "major")
    assert cq is not None
    info = run_to_ready(ms, cq, 1)
    assert info.state == CompactionState.READY_FOR_CLEANING
    assert info.highest_write_id == 1
    assert info.txn_id is not None and ms.get_txn_state(info.txn_id) == "committed"
    assert info.next_txn_id == ms.open_txn()  # the next txn id at the compactor's commit
    with pytest.raises(MetastoreError, match="not working"):
        ms.mark_compacted(cq, 1)
    with pytest.raises(NoSuchObjectError):
        ms.mark_compacted(999, 1)


def test_ready_to_clean_waits_for_older_open_txns(ms: Metastore) -> None:
    make_table(ms)
    committed_write(ms, None)
    reader = ms.open_txn()  # opened before the compaction commits: may read the old files
    cq = ms.enqueue_compaction("db", "t", None, "minor")
    assert cq is not None
    run_to_ready(ms, cq, 1)
    newer = ms.open_txn()  # opened after: sees the compacted result, does not block
    assert ms.find_ready_to_clean() == []
    ms.commit_txn(reader)
    assert [c.id for c in ms.find_ready_to_clean()] == [cq]
    ms.abort_txn(newer)


def test_reader_leases_hold_the_cleaner_until_closed_or_expired(url: str, clock: FakeClock) -> None:
    with Metastore(url, txn_timeout_s=60, clock=clock) as ms:
        make_table(ms)
        committed_write(ms, None)
        snapshot = ms.valid_txns()
        lease = ms.open_read_lease(snapshot, ttl_s=30)
        ms.open_read_lease(snapshot, ttl_s=30)  # a reader that will crash (never heartbeats)
        cq = ms.enqueue_compaction("db", "t", None, "major")
        assert cq is not None
        run_to_ready(ms, cq, 1)
        after = ms.open_read_lease(ms.valid_txns(), ttl_s=30)  # newer snapshot: no hold
        assert ms.find_ready_to_clean() == []
        ms.close_read_lease(lease)
        assert ms.find_ready_to_clean() == []  # the crashed reader's lease still holds
        clock.advance(20)
        ms.heartbeat_read_lease(after)
        clock.advance(20)  # crashed: 40 s without heartbeat > 30 s ttl
        assert [c.id for c in ms.find_ready_to_clean()] == [cq]
        ms.close_read_lease(after)


def test_mark_cleaned_forgets_aborted_writes_up_to_the_compacted_write_id(ms: Metastore) -> None:
    make_table(ms)
    w1 = aborted_write(ms, [None])
    w2 = committed_write(ms, None)
    assert ms.valid_write_ids(None, "db", "t").aborted_write_ids == (w1,)
    cq = ms.enqueue_compaction("db", "t", None, "major")
    assert cq is not None
    run_to_ready(ms, cq, w2)
    w3 = aborted_write(ms, [None])  # after the compaction: must stay remembered
    assert ms.write_activity()[0].aborted_txns == 2
    ms.mark_cleaned(cq)
    snap = ms.valid_write_ids(None, "db", "t")
    assert snap.aborted_write_ids == (w3,)
    assert snap.is_write_id_valid(w1) and snap.is_write_id_valid(w2)  # w1's files are gone
    assert ms.get_compaction(cq).state == CompactionState.SUCCEEDED
    assert [a.aborted_txns for a in ms.write_activity()] == [1]
    with pytest.raises(MetastoreError, match="already finished"):
        ms.mark_cleaned(cq)


def test_partitioned_aborted_writes_are_forgotten_partition_by_partition(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    w1 = aborted_write(ms, ["p=1", "p=2"])
    for part in ("p=1", "p=2"):
        cq = ms.enqueue_compaction("db", "t", part, "minor")
        assert cq is not None
        run_to_ready(ms, cq, w1)
        ms.mark_cleaned(cq)
        still_aborted = ms.valid_write_ids(None, "db", "t").is_write_id_aborted(w1)
        assert still_aborted == (part == "p=1")  # p=2 still holds the aborted files


def test_failed_compaction_aborts_its_txn(ms: Metastore) -> None:
    make_table(ms)
    cq = ms.enqueue_compaction("db", "t", None, "major")
    assert cq is not None
    info = ms.claim_compaction("h-w")
    assert info is not None and info.txn_id is not None
    ms.mark_failed(cq, "out of memory")
    assert ms.get_txn_state(info.txn_id) == "aborted"
    done = ms.get_compaction(cq)
    assert done.state == CompactionState.FAILED and done.error_message == "out of memory"
    assert done.end is not None
    assert ms.enqueue_compaction("db", "t", None, "major") is not None


def test_timed_out_workers_are_revoked(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms)
    cq = ms.enqueue_compaction("db", "t", None, "major")
    assert cq is not None
    stuck = ms.claim_compaction("h-w1")
    assert stuck is not None and stuck.txn_id is not None
    clock.advance(3600)
    assert ms.revoke_timed_out_workers(timeout_s=7200) == []
    clock.advance(3601)
    assert ms.revoke_timed_out_workers(timeout_s=7200) == [cq]
    assert ms.get_txn_state(stuck.txn_id) == "aborted"
    with pytest.raises(MetastoreError, match="not working"):
        ms.mark_compacted(cq, 0)
    again = ms.claim_compaction("h-w2")
    assert again is not None and again.id == cq and again.txn_id != stuck.txn_id


def test_a_dead_workers_entry_returns_to_initiated_once_its_txn_times_out(
    url: str, clock: FakeClock
) -> None:
    """Issue 13 item 2: the worker died (no heartbeats); once its compactor txn times out the
    reaper aborts it and the entry goes back to the queue (not 24 h of ``working``); the dead
    worker, were it to come back, can no longer finish it."""
    with Metastore(url, txn_timeout_s=60, clock=clock) as ms:
        make_table(ms)
        cq = ms.enqueue_compaction("db", "t", None, "major")
        assert cq is not None
        dead = ms.claim_compaction("h-w")
        assert dead is not None and dead.txn_id is not None
        clock.advance(30)
        assert ms.reap_timed_out() == []
        assert ms.get_compaction(cq).state == CompactionState.WORKING
        clock.advance(31)
        assert ms.reap_timed_out() == [dead.txn_id]
        back = ms.get_compaction(cq)
        assert (back.state, back.worker_id, back.txn_id) == (CompactionState.INITIATED, None, None)
        assert ms.get_txn_state(dead.txn_id) == TxnState.ABORTED
        with pytest.raises(MetastoreError, match="not working"):
            ms.mark_compacted(cq, 0)
        again = ms.claim_compaction("h-w2")
        assert again is not None and again.id == cq and again.txn_id != dead.txn_id


def test_only_the_lowest_write_id_entry_per_partition_is_ready(ms: Metastore) -> None:
    make_table(ms)
    first = ms.enqueue_compaction("db", "t", None, "minor")
    assert first is not None
    run_to_ready(ms, first, 5)
    second = ms.enqueue_compaction("db", "t", None, "major")
    assert second is not None
    run_to_ready(ms, second, 9)
    assert [c.id for c in ms.find_ready_to_clean()] == [first]
    ms.mark_cleaned(first)
    assert [c.id for c in ms.find_ready_to_clean()] == [second]


def test_history_is_trimmed_per_partition(ms: Metastore) -> None:
    make_table(ms, partitioned=True)
    for part in ("p=1", "p=2"):
        for _ in range(5):
            cq = ms.enqueue_compaction("db", "t", part, "minor")
            assert cq is not None
            run_to_ready(ms, cq, 0)
            ms.mark_cleaned(cq)
        for _ in range(5):
            cq = ms.enqueue_compaction("db", "t", part, "minor")
            assert cq is not None
            ms.claim_compaction("h-w")
            ms.mark_failed(cq, "boom")
        for _ in range(4):
            ms.mark_did_not_initiate("db", "t", part, "too many failures")
    deleted = ms.purge_history()
    assert deleted == 2 * (2 + 2 + 2)
    for part in ("p=1", "p=2"):
        states = [c.state.value for c in ms.compaction_history("db", "t", part)]
        assert states.count("succeeded") == 3
        assert states.count("failed") == 3
        assert states.count("did not initiate") == 2


def test_too_many_failed_compactions(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms)

    def fail_once() -> None:
        cq = ms.enqueue_compaction("db", "t", None, "major")
        assert cq is not None
        ms.claim_compaction("h-w")
        ms.mark_failed(cq, "boom")

    assert not ms.too_many_failed_compactions("db", "t")
    fail_once()
    assert not ms.too_many_failed_compactions("db", "t")
    fail_once()
    ms.mark_did_not_initiate("db", "t", None, "skipped")  # ignored by the check
    assert ms.too_many_failed_compactions("db", "t")
    clock.advance(8 * 86_400)  # long ago: try again
    assert not ms.too_many_failed_compactions("db", "t")


def test_write_activity_feeds_the_initiator(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms, partitioned=True)
    committed_write(ms, "p=1")
    start = int(clock.now * 1000)
    clock.advance(1)
    committed_write(ms, "p=1")
    committed_write(ms, "p=2", op="update")
    aborted_write(ms, ["p=3"])
    act = {a.partition: a for a in ms.write_activity()}
    assert (act["p=1"].committed_txns, act["p=1"].has_update_delete) == (2, False)
    assert (act["p=2"].committed_txns, act["p=2"].has_update_delete) == (1, True)
    assert (act["p=3"].committed_txns, act["p=3"].aborted_txns) == (0, 1)
    recent = {a.partition: a.committed_txns for a in ms.write_activity(since_ms=start)}
    assert recent == {"p=1": 1, "p=2": 1, "p=3": 0}


def test_show_compactions_has_hives_columns(ms: Metastore, clock: FakeClock) -> None:
    make_table(ms, partitioned=True)
    done = ms.enqueue_compaction("db", "t", "p=1", "major", initiator_id="ihost-17")
    assert done is not None
    assert ms.claim_compaction("host1-worker7") is not None
    clock.advance(0.25)  # the compaction takes 0.25 s ...
    ms.mark_compacted(done, 3)
    clock.advance(137.5)  # ... and the cleaner comes by minutes later
    ms.mark_cleaned(done)
    queued = ms.enqueue_compaction("db", "t", "p=2", "minor")
    rows = ms.show_compactions()
    assert all(tuple(r) == SHOW_COMPACTIONS_COLUMNS for r in rows)
    q, h = rows
    assert (q["CompactionId"], q["Type"], q["State"], q["Partition"]) == (
        queued,
        "MINOR",
        "initiated",
        "p=2",
    )
    assert q["Worker"] is None and q["Duration(ms)"] is None
    assert (h["CompactionId"], h["Type"], h["State"]) == (done, "MAJOR", "succeeded")
    assert (h["Worker host"], h["Worker"]) == ("host1", "worker7")
    assert (h["Initiator host"], h["Initiator"]) == ("ihost", "17")
    # Duration(ms): start to commit, not start to cleaned (Hive's CC_END - CC_START)
    assert h["Duration(ms)"] == 250 == h["Commit Time"] - h["Start Time"]
    assert h["Highest WriteId"] == 3
    assert h["Next TxnId"] is not None and h["TxnId"] is not None


def test_a_dead_workers_txn_is_retired_once_a_later_compaction_there_is_cleaned(
    url: str, clock: FakeClock
) -> None:
    """Its partial output is aborted (swept by the cleaner); the txn stays "aborted" in every
    snapshot until a later compaction of the same partition is cleaned, then it is purged."""
    with Metastore(url, txn_timeout_s=60, clock=clock) as ms:
        make_table(ms)
        committed_write(ms, None)
        cq = ms.enqueue_compaction("db", "t", None, "major")
        assert cq is not None
        dead = ms.claim_compaction("h-w")
        assert dead is not None and dead.txn_id is not None
        clock.advance(61)
        assert ms.reap_timed_out() == [dead.txn_id]
        activity = {(a.table, a.partition): a.aborted_txns for a in ms.write_activity()}
        assert activity[("t", None)] == 1  # the cleaner's sweep looks at this partition
        run_to_ready(ms, cq, 1)
        assert dead.txn_id in ms.valid_txns().aborted_txns
        ms.mark_cleaned(cq)
        assert dead.txn_id not in ms.valid_txns().aborted_txns
        assert ms.get_txn_state(dead.txn_id) == "aborted"  # purged: no row, no writes
        assert [a for a in ms.write_activity() if a.aborted_txns] == []
