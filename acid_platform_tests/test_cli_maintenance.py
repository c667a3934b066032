"""``acid housekeep`` and ``acid services``: the maintenance without Dagster."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from acid_platform import Warehouse
from acid_platform.cli import app
from acid_platform.metastore import Metastore
from acid_platform_tests.helpers import acid_dirs

REPO = Path(__file__).resolve().parent.parent


def test_housekeep_aborts_a_silent_transaction(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "wh") as wh:
        root = wh.root
    with Metastore.for_warehouse(root) as ms:  # a client that never heartbeats
        txn = ms.open_txn()
        runner = CliRunner()
        deadline = time.monotonic() + 60
        while True:
            result = runner.invoke(app, ["housekeep", "-w", root, "-c", "hive.txn.timeout=0.2s"])
            assert result.exit_code == 0, result.output
            if "aborted 1 timed-out transaction(s)" in result.stderr:
                break
            assert "no transaction silent for 0.2s" in result.stderr
            assert time.monotonic() < deadline, "the silent transaction was never reaped"
            time.sleep(0.05)
        assert f"[{txn}]" in result.stderr
        assert not [r for r in ms.show_transactions() if r["Transaction State"] == "OPEN"]


def test_services_compact_and_clean_a_table_and_stop_on_sigterm(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "wh") as wh:
        t = wh.create_table("t", [("id", "int")])
        for i in range(11):
            t.insert([{"id": i}])
        root = wh.root
    log = tmp_path / "services.log"
    with open(log, "w") as err:
        services = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "acid_platform.cli",
                "services",
                "-w",
                root,
                "-c",
                "hive.compactor.check.interval=0.1s",
                "-c",
                "hive.compactor.cleaner.run.interval=100",
                "-c",
                "hive.compactor.worker.sleep.time=100",
            ],
            stderr=err,
            stdout=subprocess.DEVNULL,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            table_dir = os.path.join(root, "t")
            deadline = time.monotonic() + 120
            while [d[:13] for d in acid_dirs(table_dir)] != ["base_0000011_"]:
                assert services.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        finally:
            services.send_signal(signal.SIGTERM)
            code = services.wait(timeout=60)
    text = log.read_text()
    assert code == 0, text
    assert "initiator: queued major compaction 1 of default.t" in text
    assert "worker: major compaction 1 of default.t: ready for cleaning" in text
    assert "cleaner: compaction 1 cleaned, 11 path(s) removed" in text
    assert "services stopped: 1 compaction(s), 11 path(s) cleaned" in text
    with Warehouse.open(root) as wh:
        assert sorted(r["id"] for r in wh.table("t").scan().to_arrow().to_pylist()) == list(
            range(11)
        )


@pytest.mark.slow
def test_worker_with_an_unreachable_spark_master_fails_with_the_cause_in_one_line(
    tmp_path: Path,
) -> None:
    """No JVM starts: the master's host is resolved, connected to and asked in Spark's RPC
    protocol first (a port where something else listens fails in seconds, not after the
    90 s start time-out)."""
    with Warehouse.open(tmp_path / "wh") as wh:
        root = wh.root
    runner = CliRunner()
    with socket.socket() as silent:  # accepts connections, never answers: not Spark
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        for master, cause in (
            ("spark://unreachable.invalid:7077", "cannot resolve host 'unreachable.invalid'"),
            ("spark://127.0.0.1:1", "cannot connect to 127.0.0.1:1 (Connection refused)"),
            ("sparc://host:7077", "'sparc://host:7077' is not a Spark master URL"),
            (
                f"spark://127.0.0.1:{port}",
                f"127.0.0.1:{port} accepts connections but does not answer Spark's RPC protocol",
            ),
        ):
            result = runner.invoke(app, ["worker", "-w", root, "--spark-master", master])
            assert result.exit_code == 1, result.output
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, result.stderr
            assert lines[0].startswith("error: EngineError: "), lines
            assert cause in lines[0], lines


@pytest.mark.slow
def test_worker_starts_spark_only_for_a_queued_entry_and_keeps_its_log_off_the_console(
    tmp_path: Path,
) -> None:
    with Warehouse.open(tmp_path / "wh") as wh:
        root = wh.root
        t = wh.create_table("t", [("id", "int")])
        t.insert({"id": [1, 2]})
        t.insert({"id": [3]})
    code = (
        "from typer.testing import CliRunner\n"
        "from pyspark import SparkContext\n"
        "from acid_platform.cli import app\n"
        f"r = CliRunner().invoke(app, ['worker', '-w', {root!r}, '--spark-master', 'local[2]'])\n"
        "print(r.exit_code, r.stderr.strip(), SparkContext._active_spark_context is None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 OK 0 compaction(s) True", done.stdout + done.stderr
    # one queued entry, large enough for Spark: Spark starts, its log goes to a file
    with Warehouse.open(root) as wh:
        wh.compact("t", kind="major")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acid_platform.cli",
            "worker",
            "-w",
            root,
            "--spark-master",
            "local[2]",
            "--large-partition-bytes",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "OK 1 compaction(s)", done.stderr  # no Spark or JVM line before it
    assert len(lines) == 2, done.stderr
    assert lines[1].startswith("  1 default.t major: ready for cleaning on spark;"), lines


def test_fsck_reports_and_repairs_a_missing_and_a_stray_file(tmp_path: Path) -> None:
    with Warehouse.open(tmp_path / "wh") as wh:
        t = wh.create_table("t", [("id", "int")])
        for i in range(3):
            t.insert([{"id": i}])
        root, location = wh.root, Path(t.spec.location)
    delta1, delta2 = (location / d for d in acid_dirs(location)[:2])
    os.remove(delta1 / "bucket_00000")
    (delta2 / "bucket_00001").write_bytes((delta2 / "bucket_00000").read_bytes())
    runner = CliRunner()

    result = runner.invoke(app, ["fsck", "-w", root])
    assert result.exit_code == 1, result.output
    assert f"missing {delta1 / 'bucket_00000'}" in " ".join(result.stderr.split())
    assert "FAILED default.t: 2 problem(s)" in result.stderr

    result = runner.invoke(app, ["fsck", "default.t", "-w", root, "--repair"])
    assert result.exit_code == 0, result.output
    assert "OK default.t, 2 repaired" in result.stderr
    assert not (delta2 / "bucket_00001").exists()
    assert list((location / "_fsck_quarantine").rglob("bucket_00001"))
    with Warehouse.open(root) as wh:
        assert sorted(r["id"] for r in wh.table("t").scan().to_arrow().to_pylist()) == [1, 2]
    assert runner.invoke(app, ["fsck", "-w", root]).exit_code == 0
