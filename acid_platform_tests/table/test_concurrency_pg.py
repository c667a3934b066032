"""Eight OS processes moving money between rows of one ACID table, metastore on PostgreSQL.

Each transfer is one transaction of two UPDATEs (``BEGIN; UPDATE acct SET bal = bal - x WHERE
id = a; UPDATE acct SET bal = bal + x WHERE id = b; COMMIT``) under Hive 4's default exclusive write
locks, retried on write conflicts (and lock time-outs). Afterwards the money is all there, every committed
transfer — and only those — shows in the balances (no lost update, no partial transfer), and
ROW__IDs are unique. Half the processes speak HiveQL, half the Python API
(``with wh.transaction()``).

The metastore lives in a fresh PostgreSQL schema per test (``ACID_TEST_PG_URL``, default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``); an unreachable server fails the test.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from acid_platform import Warehouse
from acid_platform_tests.table import workers

PG_URL = os.environ.get("ACID_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
PROCESSES = 8
TRANSFERS = 3  # per process
ACCOUNTS = 10
OPENING_BALANCE = 1000
MAX_ATTEMPTS = 200


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A metastore URL on a new, empty PostgreSQL schema (dropped afterwards)."""
    schema = f"acid_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.fail(f"PostgreSQL at {PG_URL} is unreachable (set ACID_TEST_PG_URL): {exc}")
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


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
        rows = wh.table("acct").scan(with_row_id=True).to_pylist()
        assert wh.metastore.show_locks() == []
    balances = {r["id"]: r["bal"] for r in rows}
    assert len(rows) == ACCOUNTS  # no row lost or duplicated
    assert sum(balances.values()) == OPENING_BALANCE * ACCOUNTS
    assert balances == expected  # every committed transfer, and nothing else
    row_ids = [
        (r["row__id"]["writeid"], r["row__id"]["bucketid"], r["row__id"]["rowid"]) for r in rows
    ]
    assert len(set(row_ids)) == len(row_ids)
