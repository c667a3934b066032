"""Real OS processes (8 at a time) against one metastore, on SQLite and on PostgreSQL."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from multiprocessing.context import BaseContext
from multiprocessing.pool import Pool
from pathlib import Path

import pytest

from acid_platform.metastore import LockComponent, LockType, Metastore, TableSpec
from acid_platform_tests.helpers import fresh_namespace, make_table

from . import workers

PROCESSES = 8


@pytest.fixture(scope="module")
def ctx() -> BaseContext:
    # forkserver: children start from a clean preloaded process, never from the test process
    # with its open connections.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["acid_platform_tests.metastore.workers"])
    return context


@pytest.fixture(scope="module")
def pool(ctx: BaseContext) -> Iterator[Pool]:
    with ctx.Pool(PROCESSES) as p:  # type: ignore[attr-defined]
        yield p


def wait_for_file(path: Path, proc: multiprocessing.process.BaseProcess) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.is_alive(), "worker died before getting ready"
        assert time.monotonic() < deadline, "worker never got ready"
        time.sleep(0.01)


def test_concurrent_open_commit_abort(pool: Pool, ms: Metastore, url: str) -> None:
    results = pool.starmap(workers.open_commit_abort, [(url, w, 25) for w in range(PROCESSES)])
    outcomes = [item for chunk in results for item in chunk]
    ids = [txn for txn, _ in outcomes]
    assert len(ids) == len(set(ids))  # no id handed out twice
    assert sorted(ids) == list(range(1, len(ids) + 1))  # and none skipped
    for txn, state in outcomes:
        assert ms.get_txn_state(txn) == state
    assert all(r["Transaction State"] == "ABORTED" for r in ms.show_transactions())
    assert ms.valid_txns().high_watermark == len(ids)


def test_concurrent_write_id_allocation_has_no_gap_and_no_duplicate(
    pool: Pool, ms: Metastore, url: str
) -> None:
    make_table(ms)
    results = pool.starmap(workers.allocate_write_ids, [(url, w, 20) for w in range(PROCESSES)])
    pairs = [p for chunk in results for p in chunk]
    write_ids = sorted(w for _, w in pairs)
    assert write_ids == list(range(1, PROCESSES * 20 + 1))
    assert len({t for t, _ in pairs}) == len(pairs)
    snap = ms.valid_write_ids(None, "db", "t")
    assert snap.high_watermark == PROCESSES * 20
    assert len(snap.aborted_write_ids) == PROCESSES * 4 and snap.open_write_ids == ()


def test_exclusive_lock_queue_gives_mutual_exclusion(
    pool: Pool, ms: Metastore, url: str, tmp_path: Path
) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    pool.starmap(
        workers.exclusive_increments, [(url, w, 8, str(counter)) for w in range(PROCESSES)]
    )
    assert counter.read_text() == str(PROCESSES * 8)  # no lost update
    assert ms.show_locks() == []


def test_readers_share_and_exclusive_lockers_are_alone(pool: Pool, ms: Metastore, url: str) -> None:
    results = pool.starmap(
        workers.lock_queue_readers_writers, [(url, w, 6) for w in range(PROCESSES)]
    )
    spans = [s for chunk in results for s in chunk]
    exclusive = [s for s in spans if s[0] == "EXCLUSIVE"]
    assert len(exclusive) == PROCESSES // 2 * 6
    for kind, start, end in exclusive:
        for other in spans:
            if other == (kind, start, end):
                continue
            assert other[2] < start or other[1] > end, "an EXCLUSIVE lock was shared"


def test_transfers_keep_the_total(pool: Pool, ms: Metastore, url: str) -> None:
    accounts = 5
    ms.create_database("bank")
    for i in range(accounts):
        ms.create_table(
            TableSpec(
                "bank",
                f"acct_{i}",
                (("x", "int"),),
                location=f"/wh/bank/acct_{i}",
                properties={"balance": "100"},
            )
        )
    pool.starmap(workers.transfers, [(url, w, 8, accounts) for w in range(PROCESSES)])
    balances = [
        int(ms.get_table("bank", f"acct_{i}").properties["balance"]) for i in range(accounts)
    ]
    assert sum(balances) == 100 * accounts
    assert min(balances) >= 0
    assert ms.show_locks() == [] and ms.show_transactions() == []


def test_first_use_from_many_processes_creates_the_schema_once(
    pool: Pool, tmp_path: Path, backend: str
) -> None:
    url, cleanup = fresh_namespace(backend, tmp_path)
    try:
        results = pool.starmap(workers.first_use, [(url, w) for w in range(PROCESSES)])
        assert sorted(r["txn"] for r in results) == list(range(1, PROCESSES + 1))
    finally:
        cleanup()


def test_killed_process_txn_times_out_and_its_locks_go(
    ctx: BaseContext, url: str, tmp_path: Path
) -> None:
    with Metastore(url) as ms:
        make_table(ms)
        make_table(ms, name="u")
    ready = tmp_path / "ready"
    proc = ctx.Process(target=workers.hold_txn_until_killed, args=(url, str(ready)))  # type: ignore[attr-defined]
    proc.start()
    wait_for_file(ready, proc)
    txn = int(ready.read_text())
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert proc.exitcode == -signal.SIGKILL
    with Metastore(url) as now:
        assert now.get_txn_state(txn) == "open"
        assert now.reap_timed_out() == []  # not yet timed out
        assert now.lock(None, [LockComponent(LockType.EXCLUSIVE, "db", "t")]).state == "waiting"
    # Five minutes later (hive.txn.timeout): the reaper aborts the txn and expires its locks.
    with Metastore(url, clock=lambda: time.time() + 301) as later:
        assert later.reap_timed_out() == [txn]
        assert later.get_txn_state(txn) == "aborted"
        assert later.show_locks() == []
        assert later.valid_write_ids(None, "db", "t").aborted_write_ids == (1,)
        assert later.lock(None, [LockComponent(LockType.EXCLUSIVE, "db", "t")]).state == "acquired"


def test_process_killed_mid_operation_leaves_a_consistent_store(
    ctx: BaseContext, url: str, tmp_path: Path
) -> None:
    with Metastore(url) as ms:
        make_table(ms)
    ready = tmp_path / "ready"
    proc = ctx.Process(target=workers.churn_until_killed, args=(url, str(ready)))  # type: ignore[attr-defined]
    proc.start()
    wait_for_file(ready, proc)
    os.kill(proc.pid, signal.SIGKILL)  # somewhere inside some metastore operation
    proc.join()
    with Metastore(url, clock=lambda: time.time() + 301) as later:
        later.reap_timed_out()
        assert later.show_transactions() == [] or all(
            r["Transaction State"] == "ABORTED" for r in later.show_transactions()
        )
        assert later.show_locks() == []
        snap = later.valid_write_ids(None, "db", "t")
        txn = later.open_txn()
        assert later.allocate_write_id(txn, "db", "t") == snap.high_watermark + 1
        later.commit_txn(txn)
