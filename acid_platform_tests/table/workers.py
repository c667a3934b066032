"""Code that runs in separate OS processes for the table-level concurrency tests (importable by
spawned children)."""

from __future__ import annotations

import random
import time

from acid_platform import Warehouse
from acid_platform.errors import LockTimeoutError, WriteConflictError

#: One committed transfer: (worker, sequence number, from account, to account, amount).
Transfer = tuple[int, int, int, int, int]


def transfer_money(
    root: str,
    url: str,
    worker: int,
    transfers: int,
    accounts: int,
    max_attempts: int,
    conf: dict[str, str],
) -> tuple[list[Transfer], dict[str, int]]:
    """Make ``transfers`` transfers between random rows of ``acct``, each in one transaction of
    two UPDATEs, retried on write conflicts and lock time-outs (at most ``max_attempts`` times).

    Even workers speak HiveQL (``BEGIN; UPDATE …; UPDATE …; COMMIT``), odd ones the Python API
    (``with wh.transaction()``). Returns the transfers that committed and the retry counts.
    """
    rng = random.Random(7919 * worker + 1)
    done: list[Transfer] = []
    retries = {"write_conflict": 0, "lock_timeout": 0, "gave_up": 0}
    wh = Warehouse.open(root, metastore_url=url, conf=conf)
    try:
        table = wh.table("acct")
        sql = wh.sql_session
        for seq in range(transfers):
            a, b = rng.sample(range(accounts), 2)
            amount = rng.randint(1, 50)
            for attempt in range(max_attempts):
                try:
                    if worker % 2 == 0:
                        sql.execute(
                            f"BEGIN; UPDATE acct SET bal = bal - {amount} WHERE id = {a}; "
                            f"UPDATE acct SET bal = bal + {amount} WHERE id = {b}; COMMIT"
                        )
                    else:
                        with wh.transaction():
                            table.update({"bal": f"bal - {amount}"}, f"id = {a}")
                            table.update({"bal": f"bal + {amount}"}, f"id = {b}")
                except (WriteConflictError, LockTimeoutError) as exc:
                    key = (
                        "write_conflict" if isinstance(exc, WriteConflictError) else "lock_timeout"
                    )
                    retries[key] += 1
                    if wh.in_transaction:  # a failed statement aborted it: close it
                        wh.rollback()
                    # back off (randomly, growing) so the racers spread out
                    time.sleep(rng.uniform(0.0, 0.02 * 2 ** min(attempt, 4)))
                    continue
                done.append((worker, seq, a, b, amount))
                break
            else:
                retries["gave_up"] += 1
    finally:
        wh.close()
    return done, retries
