"""Issue 13 items 1 and 7: a killed writer never holds its table past ``hive.txn.timeout``, and
a client whose clock is wrong cannot lose its files to the cleaner. On SQLite and PostgreSQL.

The killed process stops by itself at a chosen point and says so through a marker file; only
then is it killed, so the kill lands exactly there. Nothing waits on time to pass: each wait is
for a condition, with a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acid_platform import Warehouse
from acid_platform.compaction import compact_table, run_cleaner
from acid_platform_tests.helpers import acid_dirs, fresh_namespace, spawn_module

pytestmark = pytest.mark.slow
TIMEOUT_S = 2.0  # hive.txn.timeout of the killed writer and of the new one
HEARTBEAT_S = TIMEOUT_S / 2


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(warehouse directory, metastore URL or ``-`` for the warehouse's own SQLite file)."""
    if request.param == "sqlite":
        yield tmp_path / "wh", "-"
        return
    url, cleanup = fresh_namespace("postgresql", tmp_path)
    try:
        yield tmp_path / "wh", url
    finally:
        cleanup()


def _open(where: tuple[Path, str], conf: dict[str, str] | None = None) -> Warehouse:
    root, url = where
    return Warehouse.open(root, None if url == "-" else url, conf=conf)


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    return spawn_module("acid_platform_tests.table.crash_procs", args)


def _wait_for(marker: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"{what} exited ({proc.returncode}) early: {err}")
        assert time.monotonic() < deadline, f"{what} never got there"
        time.sleep(0.01)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def test_a_writer_killed_inside_update_frees_the_table_within_its_timeout(
    where: tuple[Path, str], tmp_path: Path
) -> None:
    with _open(where) as wh:
        t = wh.create_table("t", [("k", "int"), ("v", "string")])
        t.insert([{"k": k, "v": "a"} for k in range(10)])
    marker = tmp_path / "halted"
    proc = _spawn(["update", str(where[0]), where[1], str(marker), f"{TIMEOUT_S}s"])
    try:
        _wait_for(marker, proc, "the UPDATE")
    finally:
        _kill(proc)
    # The new writer waits for its lock at most hive.txn.timeout plus one heartbeat interval:
    # the dead txn's last heartbeat is at most that old when it times out.
    conf = {"acid.lock.wait.timeout.s": str(TIMEOUT_S + HEARTBEAT_S)}
    with _open(where, conf | {"hive.txn.timeout": f"{TIMEOUT_S}s"}) as wh:
        t = wh.table("t")
        assert t.update({"v": "'b'"}, "k < 5").rows_affected == 5
        t.delete("k = 9")
        assert sorted((r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist()) == [
            *((k, "b") for k in range(5)),
            *((k, "a") for k in range(5, 9)),
        ]
        dead = [r for r in wh.metastore.show_transactions() if r["Transaction State"] == "OPEN"]
        assert dead == []
        # Compaction and cleaning go on (the dead txn's delta is aborted, then removed).
        compact_table(wh, "t", kind="major")
        run_cleaner(wh)
        assert [d for d in acid_dirs(t.spec.location) if d.startswith("delta")] == []
        assert len(t.scan().to_arrow()) == 9


def test_a_killed_writer_stops_neither_compaction_nor_cleaning_past_its_timeout(
    where: tuple[Path, str], tmp_path: Path
) -> None:
    """Issue 13 item 1: the dead txn's open write id no longer caps compaction, nor its open txn
    the cleaner, once it times out: compaction and cleaning reap before they decide."""
    with _open(where) as wh:
        t = wh.create_table("t", [("k", "int"), ("v", "string")])
        for k in range(4):
            t.insert([{"k": k, "v": "a"}])
    marker = tmp_path / "halted"
    proc = _spawn(["update", str(where[0]), where[1], str(marker), f"{TIMEOUT_S}s"])
    try:
        _wait_for(marker, proc, "the UPDATE")
    finally:
        _kill(proc)
    with _open(where, {"hive.txn.timeout": f"{TIMEOUT_S}s"}) as wh:
        t = wh.table("t")
        for k in range(4, 8):
            t.insert([{"k": k, "v": "b"}])  # inserts are not blocked by the dead EXCL_WRITE
        deadline = time.monotonic() + TIMEOUT_S + HEARTBEAT_S + 60
        while True:  # until the dead txn has timed out: a condition, with a deadline
            (info,) = compact_table(wh, "t", kind="major")
            run_cleaner(wh)
            deltas = [d for d in acid_dirs(t.spec.location) if d.startswith("delta")]
            if not deltas:
                break
            assert time.monotonic() < deadline, f"still {deltas} after the time-out"
            time.sleep(0.2)
        assert info.highest_write_id == 9  # past the dead txn's write id 5
        assert sorted(r["k"] for r in t.scan().to_arrow().to_pylist()) == list(range(8))


def test_set_hive_txn_timeout_reaches_the_metastore(where: tuple[Path, str]) -> None:
    with _open(where) as wh:
        wh.sql("SET hive.txn.timeout=7s")
        assert wh.metastore.txn_timeout_s == 7.0
        wh.sql("SET hive.txn.timeout=2m")
        assert wh.metastore.txn_timeout_s == 120.0
        with pytest.raises(ValueError, match="hive.txn.timeout"):
            wh.sql("SET hive.txn.timeout=soon")
        assert wh.metastore.txn_timeout_s == 120.0
    with _open(where, {"hive.txn.timeout": "45"}) as wh:
        assert wh.metastore.txn_timeout_s == 45.0


def test_the_cleaner_keeps_the_files_of_a_reader_whose_clock_is_600s_behind(
    where: tuple[Path, str], tmp_path: Path
) -> None:
    """Issue 13 item 7: lease and heartbeat times come from the database server's clock, so a
    reader whose own clock is 600 s behind (past the 300 s lease time-to-live) still holds
    the snapshot it reads."""
    with _open(where) as wh:
        t = wh.create_table("t", [("k", "int"), ("v", "string")])
        for start in range(0, 100, 25):
            t.insert([{"k": k, "v": "a"} for k in range(start, start + 25)])
        before = acid_dirs(t.spec.location)
    marker, go, out = tmp_path / "leased", tmp_path / "go", tmp_path / "rows"
    proc = _spawn(["reader", str(where[0]), where[1], str(marker), str(go), str(out)])
    try:
        _wait_for(marker, proc, "the reader")
        with _open(where) as wh:
            compact_table(wh, "t", kind="major")
            report = run_cleaner(wh)
            assert report.removed == ()  # the reader's lease holds the deltas it reads
            assert set(before) <= set(acid_dirs(wh.table("t").spec.location))
        go.write_text("read now")
        assert proc.wait(timeout=120) == 0, proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            _kill(proc)
    assert out.read_text() == "100"
    with _open(where) as wh:  # the lease is closed: now the cleaner removes them
        assert run_cleaner(wh).removed != ()
