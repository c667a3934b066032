"""Code run in separate OS processes by the kill and race tests.

    python -m acid_platform_tests.compaction.procs worker <metastore url>
    python -m acid_platform_tests.compaction.procs cleaner <metastore url>

With ``ACID_TEST_PAUSE_AT`` set, the process stops at that step (a checkpoint of
:mod:`acid_platform.compaction.hooks`; :func:`acid_platform_tests.helpers.pause_if_asked`) and
waits to be killed.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from acid_platform import Warehouse
from acid_platform.compaction import (
    CompactorConf,
    run_cleaner,
    run_initiator,
    run_worker,
)
from acid_platform.errors import AcidError
from acid_platform.metastore import Metastore
from acid_platform.table.transaction import OutdatedSnapshot
from acid_platform_tests.helpers import pause_if_asked

#: Low thresholds so the race's small tables get compacted often.
RACE_CONF = CompactorConf(delta_num_threshold=3, delta_pct_threshold=0.5, aborted_txn_threshold=2)


def worker(url: str) -> None:
    with Metastore(url) as ms:
        run_worker(ms)


def cleaner(url: str) -> None:
    with Metastore(url) as ms:
        run_cleaner(ms)


def race_writer(root: str, url: str, writer: int, ops: int, seed: int, out: str) -> None:
    """Random inserts, updates and deletes on keys ``k % 10 == writer`` (disjoint per writer);
    writes the rows it believes committed (its oracle) to ``out`` as JSON."""
    rng = random.Random(seed)
    oracle_path = Path(out)
    oracle: dict[int, str] = (
        {int(k): v for k, v in json.loads(oracle_path.read_text()).items()}
        if oracle_path.exists()
        else {}
    )
    next_key = max([k for k in oracle] + [writer - 10]) + 10
    with Warehouse.open(root, url, conf={"acid.lock.wait.timeout.s": "30"}) as wh:
        t = wh.table("t")
        for i in range(ops):
            op = rng.random()
            part = f"p{rng.randrange(2)}"
            try:
                if op < 0.45 or not oracle:
                    keys = [next_key + 10 * j for j in range(rng.randint(1, 4))]
                    next_key = keys[-1] + 10
                    vals = {k: f"w{writer}-{i}" for k in keys}
                    if rng.random() < 0.15:  # an aborted statement
                        wh.transaction()
                        t.insert([{"k": k, "v": v, "p": part} for k, v in vals.items()])
                        wh.rollback()
                        continue
                    t.insert([{"k": k, "v": v, "p": part} for k, v in vals.items()])
                    oracle.update(vals)
                elif op < 0.8:
                    k = rng.choice(sorted(oracle))
                    t.update({"v": f"'u{writer}-{i}'"}, where=f"k = {k}")
                    oracle[k] = f"u{writer}-{i}"
                else:
                    k = rng.choice(sorted(oracle))
                    t.delete(f"k = {k}")
                    del oracle[k]
            except (AcidError, OutdatedSnapshot):  # conflict, lock time-out, too many
                continue  # re-runs: the statement committed nothing
            finally:
                oracle_path.write_text(json.dumps(oracle))
    oracle_path.write_text(json.dumps(oracle))


def race_compactor(url: str, rounds: int, seed: int) -> None:
    """Initiator + worker passes, and manual compactions of random kinds."""
    rng = random.Random(seed)
    with Metastore(url) as ms:
        for _ in range(rounds):
            run_initiator(ms, RACE_CONF)
            if rng.random() < 0.5:
                part = rng.choice([None, "p=p0", "p=p1"])
                kind = rng.choice(["major", "minor"])
                parts = ["p=p0", "p=p1"] if part is None else [part]
                for p in parts:
                    if p in ms.list_partitions("default", "t"):
                        ms.enqueue_compaction("default", "t", p, kind)
            run_worker(ms, conf=RACE_CONF)
            time.sleep(rng.random() * 0.05)


def race_cleaner(url: str, rounds: int) -> None:
    with Metastore(url) as ms:
        for _ in range(rounds):
            run_cleaner(ms)
            time.sleep(0.02)


def race_reader(url: str, rounds: int, out: str) -> None:
    """Snapshot reads (lease first, then snapshot) checking that no key appears twice and no
    file is missing; records the row counts it saw."""
    from acid_platform.format import list_partition_dirs, read_acid
    from acid_platform.table.schema import data_schema

    seen: list[Any] = []
    with Metastore(url) as ms:
        spec = ms.get_table("default", "t")
        for _ in range(rounds):
            lease = ms.open_read_lease(ms.valid_txns(), ttl_s=120)
            try:
                txns = ms.valid_txns()
                ids = ms.valid_write_ids(None, "default", "t", valid_txns=txns)
                keys: list[int] = []
                for _name, path in list_partition_dirs(spec.location, ["p"]):
                    rows = read_acid(path, ids, txns, columns=["k"], schema=data_schema(spec))
                    keys += rows.column("k").to_pylist()
                if len(keys) != len(set(keys)):
                    raise AssertionError(f"duplicate keys in one snapshot {txns}")
                seen.append(len(keys))
            finally:
                ms.close_read_lease(lease)
            time.sleep(0.01)
    Path(out).write_text(json.dumps(seen))


def main(argv: list[str]) -> None:
    cmd, *args = argv
    if cmd == "worker":
        worker(args[0])
    elif cmd == "cleaner":
        cleaner(args[0])
    elif cmd == "race_writer":
        race_writer(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), args[5])
    elif cmd == "race_compactor":
        race_compactor(args[0], int(args[1]), int(args[2]))
    elif cmd == "race_cleaner":
        race_cleaner(args[0], int(args[1]))
    elif cmd == "race_reader":
        race_reader(args[0], int(args[1]), args[2])
    else:
        raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    with pause_if_asked():
        main(sys.argv[1:])
