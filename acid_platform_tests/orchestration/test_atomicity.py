"""An overwrite of a partition killed halfway (kill -9 of the step process after its new files
are written, before the commit) leaves the old partition fully visible; once the housekeeper
reaps the dead transaction the partition is written again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction.housekeeper import run_housekeeping
from acid_platform_tests.helpers import acid_dirs
from acid_platform_tests.orchestration.halting_writer import ROWS, materialize_region


def versions(wh: Warehouse) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    rows = wh.table("customers").scan(columns=["region", "v"]).to_arrow().to_pylist()
    for row in rows:
        out.setdefault(row["region"], set()).add(row["v"])
    assert len(rows) == 2 * ROWS
    return out


@pytest.mark.slow
def test_an_overwrite_killed_before_its_commit_changes_nothing(
    wh: Warehouse, tmp_path: Path
) -> None:
    for region in ("us", "eu"):
        assert materialize_region(wh.root, region, 1)
    marker = tmp_path / "halted"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acid_platform_tests.orchestration.halting_writer",
            wh.root,
            str(marker),
            "2",
        ],
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, "the writer ended before it halted"
            assert time.monotonic() < deadline, "the writer never wrote its files"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    partition = f"{wh.table('customers').spec.location}/region=us"
    assert acid_dirs(partition) == ["base_0000001", "base_0000003"]  # written, never committed
    assert versions(wh) == {"us": {1}, "eu": {1}}
    deadline = time.monotonic() + 60  # the dead writer's txn and lock, once silent for 0.5 s
    while not run_housekeeping(wh, timeout_s=0.5).aborted_txns:
        assert time.monotonic() < deadline, "the killed writer's transaction was never reaped"
        time.sleep(0.1)
    assert versions(wh) == {"us": {1}, "eu": {1}}
    assert materialize_region(wh.root, "us", 3)
    assert versions(wh) == {"us": {3}, "eu": {1}}
