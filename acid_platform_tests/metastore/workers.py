"""Code that runs in separate OS processes for the concurrency tests (importable by children)."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from acid_platform.errors import LockTimeoutError
from acid_platform.metastore import LockComponent, LockType, Metastore


def open_commit_abort(url: str, worker: int, rounds: int) -> list[tuple[int, str]]:
    """Open txns (single and batches) and commit or abort them at random."""
    rng = random.Random(worker)
    done: list[tuple[int, str]] = []
    with Metastore(url) as ms:
        for _ in range(rounds):
            ids = ms.open_txns(rng.choice([1, 1, 3]), agent_info=f"worker-{worker}")
            for txn in ids:
                if rng.random() < 0.3:
                    ms.abort_txn(txn)
                    done.append((txn, "aborted"))
                else:
                    ms.commit_txn(txn)
                    done.append((txn, "committed"))
    return done


def allocate_write_ids(url: str, worker: int, rounds: int) -> list[tuple[int, int]]:
    """One write id per txn on db.t, committed; returns (txn, write id)."""
    got: list[tuple[int, int]] = []
    with Metastore(url) as ms:
        for i in range(rounds):
            txn = ms.open_txn()
            write_id = ms.allocate_write_id(txn, "db", "t")
            assert ms.allocate_write_id(txn, "db", "t") == write_id
            if i % 5 == 4:
                ms.abort_txn(txn)
            else:
                ms.commit_txn(txn)
            got.append((txn, write_id))
    return got


def exclusive_increments(url: str, worker: int, rounds: int, counter_path: str) -> int:
    """Read-modify-write a plain file under an EXCLUSIVE txn-less lock."""
    marker = counter_path + ".inside"
    with Metastore(url) as ms:
        for _ in range(rounds):
            lock = ms.lock(None, [LockComponent(LockType.EXCLUSIVE, "db", "t")], wait_s=120)
            # O_EXCL fails if another process is inside the critical section right now.
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            try:
                with open(counter_path) as f:
                    value = int(f.read())
                with open(counter_path, "w") as f:
                    f.write(str(value + 1))
            finally:
                os.close(fd)
                os.unlink(marker)
            ms.unlock(lock.lock_id)
    return rounds


def transfers(url: str, worker: int, rounds: int, accounts: int) -> int:
    """Move money between account tables inside txns that hold EXCL_WRITE on both."""
    rng = random.Random(1000 + worker)
    moved = 0
    with Metastore(url) as ms:
        for _ in range(rounds):
            a, b = rng.sample(range(accounts), 2)
            names = [f"acct_{a}", f"acct_{b}"]
            txn = ms.open_txn()
            try:
                ms.lock(
                    txn, [LockComponent(LockType.EXCL_WRITE, "bank", n) for n in names], wait_s=120
                )
            except LockTimeoutError:
                ms.abort_txn(txn)
                raise
            bal = [int(ms.get_table("bank", n).properties["balance"]) for n in names]
            amount = rng.randint(0, bal[0])
            ms.alter_table_properties("bank", names[0], {"balance": str(bal[0] - amount)})
            ms.alter_table_properties("bank", names[1], {"balance": str(bal[1] + amount)})
            ms.commit_txn(txn)
            moved += amount
    return moved


def lock_queue_readers_writers(
    url: str, worker: int, rounds: int
) -> list[tuple[str, float, float]]:
    """SHARED_READ (even workers) or EXCLUSIVE (odd) in txns; returns the held intervals."""
    held: list[tuple[str, float, float]] = []
    kind = LockType.EXCLUSIVE if worker % 2 else LockType.SHARED_READ
    with Metastore(url) as ms:
        for _ in range(rounds):
            txn = ms.open_txn()
            ms.lock(txn, [LockComponent(kind, "db", "t", "p=1")], wait_s=120)
            start = time.time()
            ms.heartbeat(txn)
            end = time.time()
            ms.commit_txn(txn)
            held.append((kind.value, start, end))
    return held


def hold_txn_until_killed(url: str, ready_path: str) -> None:
    """Open a txn, take locks (in and outside it), allocate a write id; then hang."""
    ms = Metastore(url)
    txn = ms.open_txn(agent_info="doomed")
    ms.lock(txn, [LockComponent(LockType.EXCL_WRITE, "db", "t")])
    ms.allocate_write_id(txn, "db", "t")
    ms.add_write_components(txn, "db", "t", [None], "update")
    ms.lock(None, [LockComponent(LockType.SHARED_READ, "db", "u")])
    with open(ready_path, "w") as f:
        f.write(str(txn))
    while True:
        time.sleep(1)


def churn_until_killed(url: str, ready_path: str) -> None:
    """Open/lock/commit as fast as possible until killed mid-flight."""
    with Metastore(url) as ms:
        n = 0
        while True:
            txn = ms.open_txn()
            ms.lock(txn, [LockComponent(LockType.SHARED_WRITE, "db", "t")])
            ms.allocate_write_id(txn, "db", "t")
            ms.commit_txn(txn)
            n += 1
            if n == 20:
                with open(ready_path, "w") as f:
                    f.write("churning")


def first_use(url: str, worker: int) -> dict[str, Any]:
    """Open a fresh metastore (racing the others to create the schema) and use it."""
    with Metastore(url) as ms:
        txn = ms.open_txn()
        ms.commit_txn(txn)
        return {"worker": worker, "txn": txn}
