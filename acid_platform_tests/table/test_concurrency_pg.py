"""Eight OS processes moving money between rows of one ACID table, metastore on PostgreSQL.

Each transfer is one transaction of two UPDATEs (``BEGIN; UPDATE acct SET bal = bal - x WHERE
id = a; UPDATE acct SET bal = bal + x WHERE id = b; COMMIT``) under Hive 4's default exclusive write
locks, retried on write conflicts (and lock time-outs). Afterwards the money is all there, every committed
transfer — and only those — shows in the balances (no lost update, no partial transfer), and
ROW__IDs are unique. Half the processes speak HiveQL, half the Python API
(``with wh.transaction()``).

The metastore lives in a fresh PostgreSQL schema per test (the server at ``ACID_TEST_PG_URL``);
an unreachable server fails the test.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.table import workers

PROCESSES = 8
TRANSFERS = 3  # per process
ACCOUNTS = 10
OPENING_BALANCE = 1000
MAX_ATTEMPTS = 200


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    """A metastore URL on a new, empty PostgreSQL schema (dropped afterwards)."""
    url, cleanup = fresh_namespace("postgresql", tmp_path)
    try:
        yield url
    finally:
        cleanup()


@pytest.mark.slow
def test_concurrent_transfers_lose_no_update(tmp_path: Path, pg_url: str) -> None:
    root = str(tmp_path / "wh")
    # Hive 4's defaults: UPDATE takes EXCL_WRITE, so writers queue for the table; a transaction's
    # second UPDATE never queues behind them for the lock it already holds, and a transaction
    # whose snapshot predates a commit it waited for conflicts at its own commit and retries.
    conf = {"acid.lock.wait.timeout.s": "5"}
    with Warehouse.open(root, metastore_url=pg_url, conf=conf) as wh:
        t = wh.create_table("acct", [("id", "int"), ("bal", "bigint")])
        t.insert([{"id": i, "bal": OPENING_BALANCE} for i in range(ACCOUNTS)])

    ctx = multiprocessing.get_context("spawn")
    args = [(root, pg_url, w, TRANSFERS, ACCOUNTS, MAX_ATTEMPTS, conf) for w in range(PROCESSES)]
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(workers.transfer_money, args)

    committed = [tr for done, _ in results for tr in done]
    retries = Counter[str]()
    for _, r in results:
        retries.update(r)
    assert retries["gave_up"] == 0, retries
    assert len(committed) == PROCESSES * TRANSFERS
    assert len({(w, seq) for w, seq, *_ in committed}) == len(committed)

    expected = dict.fromkeys(range(ACCOUNTS), OPENING_BALANCE)
    for _, _, a, b, amount in committed:
        expected[a] -= amount
        expected[b] += amount
    with Warehouse.open(root, metastore_url=pg_url) as wh:
        rows = wh.table("acct").scan(with_row_id=True).to_arrow().to_pylist()
        assert wh.metastore.show_locks() == []
    balances = {r["id"]: r["bal"] for r in rows}
    assert len(rows) == ACCOUNTS  # no row lost or duplicated
    assert sum(balances.values()) == OPENING_BALANCE * ACCOUNTS
    assert balances == expected  # every committed transfer, and nothing else
    row_ids = [
        (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in rows
    ]
    assert len(set(row_ids)) == len(row_ids)
