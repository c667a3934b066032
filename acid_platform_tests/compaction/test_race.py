"""Writers, a compactor (initiator + worker), a cleaner and a reader as real OS processes on one
partitioned table, for several randomized rounds; after every round the table must equal the
writers' oracle (each writer owns its own keys), with unique ROW__IDs."""

from __future__ import annotations

import json
import random
import subprocess
import time
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import run_cleaner, run_worker
from acid_platform_tests.helpers import spawn_module

from .conftest import table_rows

pytestmark = pytest.mark.slow
WRITERS = 2
ROUNDS = 3


def _spawn(args: list[object]) -> subprocess.Popen[bytes]:
    return spawn_module("acid_platform_tests.compaction.procs", args)


def _oracle(tmp: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    for w in range(WRITERS):
        path = tmp / f"oracle-{w}.json"
        if path.exists():
            out.update({int(k): v for k, v in json.loads(path.read_text()).items()})
    return out


def _check(wh: Warehouse, tmp: Path, where: str) -> None:
    rows = table_rows(wh, "t")
    row_ids = [r[:3] for r in rows]
    assert len(row_ids) == len(set(row_ids)), f"{where}: duplicate ROW__IDs"
    got = {r[3]: r[4] for r in rows}
    assert len(got) == len(rows), f"{where}: a key appears twice"
    assert got == _oracle(tmp), f"{where}: table differs from the writers' oracle"


def test_writers_compactor_cleaner_and_readers_race(wh: Warehouse, tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    t = wh.create_table("t", [("k", "int"), ("v", "string")], partition_columns=[("p", "string")])
    t.insert([{"k": -1, "v": "seed", "p": "p0"}, {"k": -2, "v": "seed", "p": "p1"}])
    t.delete("k < 0")
    url = wh.metastore.url
    for r in range(ROUNDS):
        procs = [
            _spawn(
                [
                    "race_writer",
                    wh.root,
                    url,
                    w,
                    8,
                    rng.randrange(1 << 30),
                    tmp_path / f"oracle-{w}.json",
                ]
            )
            for w in range(WRITERS)
        ]
        procs.append(_spawn(["race_compactor", url, 4, rng.randrange(1 << 30)]))
        procs.append(_spawn(["race_cleaner", url, 15]))
        procs.append(_spawn(["race_reader", url, 10, tmp_path / f"reads-{r}.json"]))
        deadline = time.monotonic() + 240
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
            err = p.stderr.read().decode() if p.stderr else ""
            if p.stderr:
                p.stderr.close()
            assert p.returncode == 0, f"round {r} (seed {seed}): {p.args!r} failed:\n{err}"
        _check(wh, tmp_path, f"round {r} (seed {seed})")
        assert json.loads((tmp_path / f"reads-{r}.json").read_text()), "the reader read nothing"
    run_worker(wh)
    run_cleaner(wh)
    _check(wh, tmp_path, f"after the last clean (seed {seed})")
    states = {r["State"] for r in wh.metastore.show_compactions()}
    assert "succeeded" in states and "failed" not in states, states
