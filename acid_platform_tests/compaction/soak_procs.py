"""Processes of the soak test (issue 13), any of which may be killed with ``kill -9`` at any
moment and started again::

    python -m acid_platform_tests.compaction.soak_procs writer <wh> <url> <n> <of> <seed> <oracle> <stop>
    python -m acid_platform_tests.compaction.soak_procs compactor <wh> <url> <stop>
    python -m acid_platform_tests.compaction.soak_procs cleaner <wh> <url> <stop>

A writer owns the keys ``k % of == n`` and keeps its oracle in ``oracle`` (JSON, replaced
atomically): ``rows`` it knows committed and, while a statement runs, ``pending`` (the rows if
that statement commits). A kill leaves the outcome of the pending statement unknown; the next
writer process reads its keys back and adopts whichever of the two states the table holds (any
third state is a lost or phantom write: it exits with an error). Every process stops once the
file ``stop`` exists.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from acid_platform import Warehouse
from acid_platform.compaction import CompactorConf, run_cleaner, run_initiator, run_worker
from acid_platform.errors import RetryableError

#: Short time-outs: a killed process's transaction is reaped within seconds.
SOAK_CONF = {"hive.txn.timeout": "3s", "acid.lock.wait.timeout.s": "30"}
COMPACTOR_CONF = CompactorConf(
    delta_num_threshold=4, delta_pct_threshold=0.5, aborted_txn_threshold=4
)
CLEANER_INTERVAL_S = 0.5


def _save(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def _mine(wh: Warehouse, n: int, of: int) -> dict[str, str]:
    rows = wh.table("t").scan(columns=["k", "v"], where=f"k % {of} = {n}").to_arrow().to_pylist()
    return {str(r["k"]): r["v"] for r in rows}


def _settle(wh: Warehouse, n: int, of: int, state: dict[str, Any]) -> dict[str, Any]:
    """The oracle once the last statement's outcome is read back from the table."""
    now = _mine(wh, n, of)
    if now == state["rows"] or (state["pending"] is not None and now == state["pending"]):
        return {"rows": now, "pending": None, "next": state["next"]}
    raise AssertionError(
        f"writer {n}: the table holds {sorted(now.items())}, neither what was committed "
        f"{sorted(state['rows'].items())} nor the pending {state['pending']}"
    )


def writer(root: str, url: str, n: int, of: int, seed: int, oracle: str, stop: str) -> None:
    rng = random.Random(seed)
    path = Path(oracle)
    state: dict[str, Any] = (
        json.loads(path.read_text())
        if path.exists()
        else {"rows": {}, "pending": None, "next": n + of}
    )
    stats: dict[str, Any] = state.get("stats") or {"statements": 0, "failures": {}}
    with Warehouse.open(root, None if url == "-" else url, conf=SOAK_CONF) as wh:
        t = wh.table("t")
        state = {**_settle(wh, n, of, state), "stats": stats}
        _save(path, state)
        i = 0
        while not Path(stop).exists():
            i += 1
            rows: dict[str, str] = dict(state["rows"])
            op = rng.random()
            part = f"p{rng.randrange(2)}"
            run: Callable[[], object]
            if op < 0.4 or not rows:
                keys = [state["next"] + of * j for j in range(rng.randint(1, 3))]
                state["next"] = keys[-1] + of
                value = f"w{n}-{seed}-{i}"
                rows.update({str(k): value for k in keys})
                run = partial(t.insert, [{"k": k, "v": value, "p": part} for k in keys])
            elif op < 0.5:  # a rolled-back insert: nothing changes
                run = partial(_rolled_back, wh, {"k": state["next"], "v": "gone", "p": part})
            elif op < 0.8:
                k = rng.choice(sorted(rows, key=int))
                rows[k] = f"u{n}-{seed}-{i}"
                run = partial(t.update, {"v": f"'{rows[k]}'"}, where=f"k = {k}")
            else:
                k = rng.choice(sorted(rows, key=int))
                del rows[k]
                run = partial(t.delete, f"k = {k}")
            state["pending"] = rows
            _save(path, state)
            try:
                run()
                state = {"rows": rows, "pending": None, "next": state["next"]}
            except RetryableError as exc:  # a lock time-out, a conflict: read back what happened
                failures = stats["failures"]
                failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
                state = _settle(wh, n, of, state)
            stats["statements"] += 1
            state["stats"] = stats
            _save(path, state)


def _rolled_back(wh: Warehouse, row: dict[str, Any]) -> None:
    wh.transaction()
    wh.table("t").insert([row])
    wh.rollback()


def compactor(root: str, url: str, stop: str) -> None:
    with Warehouse.open(root, None if url == "-" else url, conf=SOAK_CONF) as wh:
        while not Path(stop).exists():
            run_initiator(wh, COMPACTOR_CONF)
            run_worker(wh, conf=COMPACTOR_CONF)
            time.sleep(0.2)


def cleaner(root: str, url: str, stop: str) -> None:
    with Warehouse.open(root, None if url == "-" else url, conf=SOAK_CONF) as wh:
        while not Path(stop).exists():
            run_cleaner(wh, COMPACTOR_CONF)
            time.sleep(CLEANER_INTERVAL_S)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "writer":
        writer(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), args[5], args[6])
    elif cmd == "compactor":
        compactor(*args[:3])
    elif cmd == "cleaner":
        cleaner(*args[:3])
    else:
        raise SystemExit(f"unknown process {cmd!r}")
