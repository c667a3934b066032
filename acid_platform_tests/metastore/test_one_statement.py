"""One statement per open and per commit on PostgreSQL: the one-statement commit
(``commit_fast``) against the full path, and the open's ``CALL`` (migration 0004).

Read-only, lock-only and insert-only txns commit in one autocommit statement on PostgreSQL and
must leave exactly what the full path leaves; every other txn (update/delete, sources,
compactor) and every txn that is not open falls back to the full path and its typed errors.
``Metastore.commit_and_lock`` commits through the full path on every backend, so the two are
compared on the same database; SQLite runs the full path for both (the same assertions hold).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, select

from acid_platform.errors import (
    DuplicateSourceError,
    NoSuchTxnError,
    TxnAbortedError,
    WriteConflictError,
)
from acid_platform.metastore import LockComponent, LockType, Metastore, Source
from acid_platform.metastore.schema import (
    completed_txn_components,
    hive_locks,
    txn_components,
    txns,
    write_set,
)
from acid_platform_tests.helpers import SentStatements, make_table

from .conftest import FakeClock

READ = LockComponent(LockType.SHARED_READ, "db", "t")
WRITE = LockComponent(LockType.SHARED_WRITE, "db", "t", "p=1")


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    eng = create_engine(url)
    try:
        yield eng
    finally:
        eng.dispose()


def end_state(engine: Engine, txn_id: int) -> dict[str, Any]:
    """What the metastore holds about ``txn_id``, with its write id replaced by ``"W"`` (so
    two txns compare)."""
    with engine.connect() as conn:
        txn = conn.execute(
            select(txns.c.txn_state, txns.c.txn_last_heartbeat, txns.c.txn_type).where(
                txns.c.txn_id == txn_id
            )
        ).first()
        ctc = completed_txn_components
        completed = conn.execute(select(ctc).where(ctc.c.ctc_txnid == txn_id)).all()
        pending = conn.execute(
            select(txn_components.c.tc_partition, txn_components.c.tc_operation_type).where(
                txn_components.c.tc_txnid == txn_id
            )
        ).all()
        locks = conn.execute(
            select(hive_locks.c.hl_lock_ext_id).where(hive_locks.c.hl_txnid == txn_id)
        ).all()
        written = conn.execute(select(write_set.c.ws_txnid).where(write_set.c.ws_txnid == txn_id))
        return {
            "txn": None if txn is None else tuple(txn),
            "completed": sorted(
                (r.ctc_database, r.ctc_table, r.ctc_partition, r.ctc_timestamp)
                + ("W" if r.ctc_writeid is not None else None, r.ctc_update_delete)
                for r in completed
            ),
            "pending": sorted(tuple(r) for r in pending),
            "locks": len(locks),
            "write_set": len(written.all()),
        }


def _read_only_locked(ms: Metastore) -> int:
    txn = ms.open_txn(read_only=True)
    ms.lock(txn, [READ])
    return txn


def _lock_only(ms: Metastore) -> int:
    txn = ms.open_txn()
    ms.lock(txn, [READ])
    return txn


def _insert(ms: Metastore) -> int:
    txn = ms.open_txn()
    ms.lock(txn, [WRITE])
    ms.add_write_components(txn, "db", "t", ["p=1", "p=2"], "insert")
    return txn


def _empty(ms: Metastore) -> int:
    return ms.open_txn()


SHAPES: dict[str, Callable[[Metastore], int]] = {
    "read-only": _read_only_locked,
    "lock-only": _lock_only,
    "insert": _insert,
    "empty": _empty,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_txn_whose_commit_checks_nothing_ends_as_the_full_path_leaves_it(
    ms: Metastore, engine: Engine, clock: FakeClock, shape: str
) -> None:
    make_table(ms, partitioned=True)
    quick = SHAPES[shape](ms)
    full = SHAPES[shape](ms)
    clock.advance(7)
    now_ms = int(clock.now * 1000)
    ms.commit_txn(quick)  # one statement on PostgreSQL
    ms.commit_and_lock(full, db="db", table="t")  # the full path, on every backend
    state = end_state(engine, quick)
    assert state == end_state(engine, full)
    kind = 2 if shape == "read-only" else 0  # Hive's TXN_TYPE: READ_ONLY = 2
    assert state["txn"] == ("c", now_ms, kind)
    assert state["pending"] == [] and state["locks"] == 0 and state["write_set"] == 0
    inserted = [("db", "t", p, now_ms, "W", "N") for p in ("p=1", "p=2")]
    assert state["completed"] == (inserted if shape == "insert" else [])
    assert ms.get_txn_state(quick) == "committed" and ms.show_locks() == []
    assert ms.valid_write_ids(None, "db", "t").is_write_id_valid(1) == (shape == "insert")


def test_update_and_delete_take_the_full_path_and_its_conflict_check(
    ms: Metastore, engine: Engine
) -> None:
    make_table(ms, partitioned=True)
    older, younger = ms.open_txns(2)
    for txn in (older, younger):
        ms.lock(txn, [WRITE])
        ms.add_write_components(txn, "db", "t", ["p=1"], "insert")
        ms.add_write_components(txn, "db", "t", ["p=1"], "delete")
    ms.commit_txn(younger)
    assert end_state(engine, younger)["write_set"] == 1  # the full path published its write set
    assert {r[-1] for r in end_state(engine, younger)["completed"]} == {"Y"}
    with pytest.raises(WriteConflictError):
        ms.commit_txn(older)
    state = end_state(engine, older)
    assert state["txn"] is not None and state["txn"][0] == "a"
    assert state["completed"] == [] and state["locks"] == 0
    assert state["pending"] == [("p=1", "d"), ("p=1", "i")]  # an abort keeps its components


def test_a_txn_with_a_source_takes_the_full_path(ms: Metastore) -> None:
    make_table(ms)
    source = Source("file:///landing/a.csv|size=1|mtime_ns=1", {})
    first, second = ms.open_txns(2)
    for txn in (first, second):
        ms.add_write_components(txn, "db", "t", [None], "insert")
        ms.record_source(txn, "db", "t", source)
    ms.commit_txn(first)
    found = ms.committed_source("db", "t", source.key)
    assert found is not None and found.txn_id == first
    with pytest.raises(DuplicateSourceError, match="already committed"):
        ms.commit_txn(second)
    assert ms.get_txn_state(second) == "aborted"


@pytest.mark.parametrize("how", ["aborted", "reaped", "committed", "unknown"])
def test_a_txn_that_is_not_open_gets_the_full_paths_error_and_nothing_changes(
    ms: Metastore, engine: Engine, clock: FakeClock, how: str
) -> None:
    make_table(ms, partitioned=True)
    txn = _insert(ms) if how != "unknown" else 42
    if how == "aborted":
        ms.abort_txn(txn)
    elif how == "reaped":
        clock.advance(3600)
        assert ms.reap_timed_out() == [txn]
    elif how == "committed":
        ms.commit_txn(txn)
    before = end_state(engine, txn)
    error = TxnAbortedError if how in ("aborted", "reaped") else NoSuchTxnError
    match = {"committed": "already committed", "unknown": "No such transaction"}.get(how, "abort")
    with pytest.raises(error, match=match):
        ms.commit_txn(txn)
    assert end_state(engine, txn) == before


def race(ms: Metastore, reaper: Metastore, batch: list[int]) -> tuple[list[int], ...]:
    """Commit ``batch`` in order while one reaper pass runs; (committed, refused, reaped)."""
    committed: list[int] = []
    refused: list[int] = []
    reaped: list[int] = []
    start = threading.Barrier(2)

    def commit_all() -> None:
        start.wait()
        for txn in batch:
            try:
                ms.commit_txn(txn)
                committed.append(txn)
            except TxnAbortedError:
                refused.append(txn)

    def reap() -> None:
        start.wait()
        reaped.extend(reaper.reap_timed_out(timeout_s=60))

    threads = [threading.Thread(target=commit_all), threading.Thread(target=reap)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return committed, refused, reaped


def test_a_txn_reaped_while_it_commits_is_never_both(url: str, clock: FakeClock) -> None:
    """The reaper and the commits race: each txn ends committed (its writes completed, never
    reported reaped) or aborted (reported reaped, the commit refused, nothing completed)."""
    with Metastore(url, clock=clock) as ms, Metastore(url, clock=clock) as reaper:
        make_table(ms, partitioned=True)
        write_id_of: dict[int, int] = {}
        for _ in range(15):
            batch = []
            for _ in range(8):
                txn = ms.open_txn()
                ms.lock(txn, [WRITE])
                write_id_of[txn] = ms.add_write_components(txn, "db", "t", ["p=1"], "insert")
                batch.append(txn)
            clock.advance(3600)  # every one of them is past the time-out now
            committed, refused, reaped = race(ms, reaper, batch)
            assert sorted(refused) == sorted(reaped)
            assert sorted(committed + reaped) == batch
            for txn in committed:
                assert ms.get_txn_state(txn) == "committed"
            for txn in reaped:
                assert ms.get_txn_state(txn) == "aborted"
            write_ids = ms.valid_write_ids(None, "db", "t")
            assert all(write_ids.is_write_id_valid(write_id_of[t]) for t in committed)
            assert not any(write_ids.is_write_id_valid(write_id_of[t]) for t in reaped)
        assert ms.show_locks() == []


def test_a_commit_that_checks_nothing_is_one_statement_on_postgresql(
    ms: Metastore, backend: str
) -> None:
    make_table(ms, partitioned=True)
    ms.commit_txn(ms.open_txn())  # warm: connections and statement caches
    txns_by_shape = {shape: make(ms) for shape, make in SHAPES.items()}
    counts = {}
    for shape, txn in txns_by_shape.items():
        with SentStatements() as sent:
            ms.commit_txn(txn)
        counts[shape] = sent.total
    assert all(ms.get_txn_state(t) == "committed" for t in txns_by_shape.values())
    if backend == "postgresql":
        assert counts == dict.fromkeys(SHAPES, 1)
    else:  # SQLite: BEGIN IMMEDIATE, the probe, the writes, COMMIT, in process
        assert all(n >= 4 for n in counts.values())


def test_an_open_is_one_statement_on_postgresql(ms: Metastore, backend: str) -> None:
    ms.commit_txn(ms.open_txn())  # warm; the open-txn count is fresh (the clock stands still)
    with SentStatements() as one:
        first = ms.open_txn()
    with SentStatements() as batch:
        ids = ms.open_txns(3)
    assert ids == [first + 1, first + 2, first + 3]
    assert [ms.get_txn_state(t) for t in (first, *ids)] == ["open"] * 4
    assert ms.valid_txns().open_txns == (first, *ids)
    if backend == "postgresql":
        assert (one.total, batch.total) == (1, 1)
    else:  # SQLite: BEGIN IMMEDIATE, the allocation, the rows, COMMIT, in process
        assert one.total >= 4 and batch.total >= 4
