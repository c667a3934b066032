"""Code run in separate OS processes by the housekeeping and services tests.

    python -m acid_platform_tests.orchestration.procs hold-lock <warehouse> <table> <txn timeout s>

opens a transaction (heartbeated by its thread), takes an EXCLUSIVE lock on the table, prints
``ready <txn id>`` and waits to be killed.
"""

from __future__ import annotations

import signal
import sys

from acid_platform import Warehouse
from acid_platform.metastore import LockComponent, LockType
from acid_platform.table.transaction import ledger_of


def hold_lock(root: str, table: str, timeout_s: float) -> None:
    wh = Warehouse.open(root, create=False, txn_timeout_s=timeout_s)
    txn = wh.transaction()
    ledger_of(txn).lock([LockComponent(LockType.EXCLUSIVE, "default", table)])
    print(f"ready {txn.id}", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    if sys.argv[1] == "hold-lock":
        hold_lock(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")
