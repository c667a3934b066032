"""Soak (issue 13): 8 writer processes doing random DML, a compactor and a cleaner running,
and random ``kill -9`` of any of them (each is started again). At the end the table equals the
writers' oracle, fewer than 5% of the statements failed (each with a retryable error), no lock is held past the transaction time-out, the aborted history is
bounded, and one cleaner pass leaves no obsolete or aborted directory.

Half a minute of soak per metastore backend once every writer has started (``ACID_SOAK_S``
changes it; a run kills about ten processes), about a minute and a half each in all. Kills
land at random moments: each writer process reads its keys back when it starts and adopts the
outcome of the statement it was killed in (see :mod:`.soak_procs`), so every kill is
checked, not only some.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform.format import CleanerWriteIdList, acid_state, list_partition_dirs
from acid_platform_tests.helpers import open_warehouse, spawn_module

from .soak_procs import SOAK_CONF

pytestmark = pytest.mark.slow
WRITERS = 8
SOAK_S = float(os.environ.get("ACID_SOAK_S", "30"))
TIMEOUT_S = 3.0  # SOAK_CONF's hive.txn.timeout


def _spawn(args: list[object], log: Path) -> subprocess.Popen[bytes]:
    return spawn_module("acid_platform_tests.compaction.soak_procs", args, log.open("ab"))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_soak_random_dml_compaction_cleaning_and_kill_9(tmp_path: Path, backend: str) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    with open_warehouse(tmp_path, SOAK_CONF, backend) as wh:
        wh.create_table("t", [("k", "int"), ("v", "string")], partition_columns=[("p", "string")])
        url = "-" if backend == "sqlite" else wh.metastore.url
        stop = tmp_path / "stop"
        logs = tmp_path / "logs"
        logs.mkdir()

        def start(name: str) -> subprocess.Popen[bytes]:
            log = logs / f"{name}.log"
            if name.startswith("writer"):
                n = int(name[6:])
                oracle = tmp_path / f"oracle-{n}.json"
                args: list[object] = ["writer", wh.root, url, n, WRITERS]
                args += [rng.randrange(1 << 30), oracle, stop]
                return _spawn(args, log)
            return _spawn([name, wh.root, url, stop], log)

        names = [f"writer{n}" for n in range(WRITERS)] + ["compactor", "cleaner"]
        procs = {name: start(name) for name in names}
        kills: dict[str, int] = {}
        started = time.monotonic() + 180
        while not all((tmp_path / f"oracle-{n}.json").exists() for n in range(WRITERS)):
            assert time.monotonic() < started, "the writers never started"
            time.sleep(0.1)
        end = time.monotonic() + SOAK_S
        while time.monotonic() < end:
            time.sleep(rng.uniform(1.0, 5.0))  # the workload's pace, not a condition
            for name, proc in procs.items():
                if proc.poll() is not None:  # a process may only end by being killed
                    raise AssertionError(
                        f"{name} exited {proc.returncode} (seed {seed}):\n"
                        + (logs / f"{name}.log").read_text()[-3000:]
                    )
            victim = rng.choice(names)
            os.kill(procs[victim].pid, signal.SIGKILL)
            procs[victim].wait(timeout=30)
            kills[victim] = kills.get(victim, 0) + 1
            procs[victim] = start(victim)
        stop.write_text("stop")
        deadline = time.monotonic() + 120
        for name, proc in procs.items():
            try:
                code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                raise AssertionError(f"{name} did not stop (seed {seed})") from None
            err = (logs / f"{name}.log").read_text()
            assert code == 0, f"{name} failed (seed {seed}, kills {kills}):\n{err[-3000:]}"

        _check_final(wh, tmp_path, seed, kills)


def _check_final(wh: Warehouse, tmp_path: Path, seed: int, kills: dict[str, int]) -> None:
    ms = wh.metastore
    where = f"seed {seed}, kills {kills}"
    # The table equals the writers' oracles (each settled its last statement on exit).
    oracle: dict[int, str] = {}
    statements, failures = 0, Counter[str]()
    for n in range(WRITERS):
        state = json.loads((tmp_path / f"oracle-{n}.json").read_text())
        assert state["pending"] is None, where
        oracle.update({int(k): v for k, v in state["rows"].items()})
        statements += state["stats"]["statements"]
        failures.update(state["stats"]["failures"])
    # Contention (issue 29): 8 writers on one table queue for its lock; each failure is a
    # RetryableError (a writer process exits on any other) and fewer than 5% fail.
    rate = sum(failures.values()) / max(statements, 1)
    print(f"soak: {statements} statements, {dict(failures)} failed ({rate:.1%})")  # noqa: T201
    assert statements >= WRITERS, where
    assert rate < 0.05, f"{where}: {dict(failures)} of {statements} statements failed"
    rows = wh.table("t").scan(columns=["k", "v"]).to_arrow().to_pylist()
    got = {r["k"]: r["v"] for r in rows}
    assert len(got) == len(rows), f"{where}: a key appears twice"
    assert got == oracle, f"{where}: the table differs from the oracle"
    print(f"soak: {len(rows)} rows, {where}")  # noqa: T201 - shown with -s

    # No lock outlives the time-out: one pass of the cleaner (it reaps first) leaves only locks
    # of transactions heard from within it, and those go once their time-out passes.
    # Ages are taken as of the moment before the pass: its reaper runs after that moment, and
    # no process is left to heartbeat, so a lock it leaves was heard from within the time-out
    # of that moment (measured after the pass, its length would count against it).
    before = ms.now_ms()
    run_cleaner(wh)
    beats = {r["Transaction ID"]: r["Last Heartbeat Time"] for r in ms.show_transactions()}
    for lock in ms.show_locks():
        age = before - beats.get(lock["Transaction ID"], 0)
        assert age <= TIMEOUT_S * 1000, f"{where}: lock {lock} is {age} ms old"
    deadline = time.monotonic() + TIMEOUT_S + 30
    while ms.show_locks() or [
        r for r in ms.show_transactions() if r["Transaction State"] == "OPEN"
    ]:
        assert time.monotonic() < deadline, f"{where}: locks held past the time-out"
        ms.reap_timed_out()
        time.sleep(0.1)

    # Aborted history is bounded: compacting every partition and one cleaner pass retire every
    # aborted transaction (killed writers', killed workers').
    for part in ms.list_partitions("default", "t"):
        compact_table(wh, "t", partition=part, kind="major")
    run_cleaner(wh)
    aborted = ms.valid_txns().aborted_txns
    assert aborted == (), f"{where}: aborted history {aborted}"

    # No obsolete or aborted directory remains after that cleaner pass.
    spec = wh.table("t").spec
    txns = ms.valid_txns()
    ids = CleanerWriteIdList.from_reader(ms.valid_write_ids(None, "default", "t", valid_txns=txns))
    for _name, path in list_partition_dirs(spec.location, ["p"]):
        state = acid_state(path, ids, txns, ignore_empty_files=False)
        left = [d.path for d in (*state.obsolete, *state.aborted)]
        assert left == [], f"{where}: {left} left in {path}"
