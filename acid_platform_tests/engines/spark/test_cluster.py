"""The Spark path on a real standalone cluster: a master and two workers on 127.0.0.1.

The driver runs in a subprocess (a process holds one SparkContext, and this one holds the local
test session). The test proves that event files — of writes, DML and a major compaction — were
written by executors: every task that wrote reports a pid that is neither the driver's nor this
process's, running under an executor JVM (``CoarseGrainedExecutorBackend``) that a worker
started; and the tables read back the same through Spark and through the embedded reader.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acid_platform.engines.spark import LocalCluster

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_reads_and_writes_run_on_executors_of_a_standalone_cluster(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    with LocalCluster(workers=2, cores=1, memory="1g", work_dir=tmp_path / "cluster") as cluster:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "acid_platform_tests.engines.spark.cluster_driver",
                cluster.master_url,
                str(tmp_path / "wh"),
                str(out),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    driver = result["driver_pid"]

    write = result["write"]
    assert write["committed"] and write["rows_inserted"] == 200
    assert {t["partition_id"] for t in write["tasks"]} == {0, 1}
    assert write["committed_by"]["pid"] != driver
    for key in ("update", "merge"):
        assert result[key]["tasks"], f"{key}: no task wrote"
    assert result["update"]["rows_updated"] == 20
    assert result["merge"]["rows_updated"] == 1
    assert result["merge"]["rows_inserted"] == 1

    compaction = result["compaction"]
    assert compaction["states"] == ["ready for cleaning"] * 3  # one per partition
    assert compaction["executors"] == ["spark"] * 3 and compaction["same_rows"]
    assert compaction["tasks"]

    task_pids = {t["pid"] for k in ("update", "merge", "compaction") for t in result[k]["tasks"]}
    task_pids |= {t["pid"] for t in write["tasks"]}
    assert driver not in task_pids and os.getpid() not in task_pids
    assert len({t["pid"] for t in write["tasks"]}) == 2  # two executors, one core each
    for pid, chain in result["ancestry"].items():
        assert any("CoarseGrainedExecutorBackend" in c for c in chain), (pid, chain)
        assert any("deploy.worker.Worker" in c for c in chain), (pid, chain)

    assert result["spark_rows"] == result["embedded_rows"]
    assert len(result["spark_rows"]) == 201
