"""The Spark path on a real standalone cluster: a master and two workers on 127.0.0.1.

Tables by name (``CREATE TABLE … USING acid``, ``INSERT``, ``SELECT``) run there too.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acid_platform.engines.spark import LocalCluster
from acid_platform.engines.spark.launch import check_master
from acid_platform.errors import EngineError
from acid_platform_tests.helpers import fresh_namespace
from acid_platform_tests.s3_server import S3Server

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A master and two one-core workers on 127.0.0.1, shared by this module's tests."""
    work = tmp_path_factory.mktemp("cluster")
    with LocalCluster(workers=2, cores=1, memory="1g", work_dir=work) as running:
        yield running


def run_driver(cluster: LocalCluster, out: Path, *args: str) -> dict[str, Any]:
    """Run the cluster driver program against ``cluster``; its result. No AWS_* variable
    reaches it or the executors: an object store's settings travel only as arguments and,
    from the driver, with the plan. Nor does ``PYSPARK_PYTHON`` or ``SPARK_LOCAL_IP``: the
    project's session takes its interpreter and loopback from its settings alone."""
    unset = ("AWS_", "PYSPARK_", "SPARK_LOCAL_IP")
    env = {k: v for k, v in os.environ.items() if not k.startswith(unset)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acid_platform_tests.engines.spark.cluster_driver",
            cluster.master_url,
            *args[:1],
            str(out),
            *args[1:],
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.mark.slow
def test_a_standalone_master_passes_the_rpc_check_of_the_worker_command(
    cluster: LocalCluster,
) -> None:
    check_master(cluster.master_url)  # it answers the empty RPC request: no error
    web_ui = f"spark://127.0.0.1:{cluster.webui_port}"  # HTTP, not Spark's RPC protocol
    with pytest.raises(EngineError, match="does not speak Spark's RPC protocol"):
        check_master(web_ui)


@pytest.mark.slow
def test_reads_and_writes_run_on_executors_of_a_standalone_cluster(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    result = run_driver(cluster, tmp_path / "result.json", str(tmp_path / "wh"))
    check_ran_on_executors(result)


@pytest.mark.slow
def test_an_s3_warehouse_with_a_postgresql_metastore_on_a_standalone_cluster(
    cluster: LocalCluster, s3: S3Server, tmp_path: Path
) -> None:
    url, cleanup = fresh_namespace("postgresql", tmp_path)
    try:
        root = f"s3://{s3.new_bucket()}/wh"
        start = s3.log_offset()
        result = run_driver(cluster, tmp_path / "result.json", root, url, s3.options().to_json())
        check_ran_on_executors(result)
        # the executors' files are in the bucket, written through the S3 server
        puts = {r.path for r in s3.requests_since(start) if r.method == "PUT"}
        assert any("/wh/c/p=1/" in p and "bucket_" in p for p in puts)
        assert any("/base_" in p for p in puts)  # the major compaction's output
    finally:
        cleanup()


def check_ran_on_executors(result: dict[str, Any]) -> None:
    """Every write, DML and compaction ran on executors; Spark and the embedded reader agree."""
    driver = result["driver_pid"]
    assert result["environment_written"] == []  # the session, the warehouse, the engine

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

    # CREATE TABLE … USING acid, INSERT … SELECT and SELECT by name, on the cluster
    assert result["sql_rows"] == result["sql_embedded_rows"]
    assert [r[0] for r in result["sql_rows"]] == list(range(50))
    assert result["sql_p1_count"] == len(range(1, 50, 3))
    # Spark SQL DELETE / UPDATE / MERGE on the cluster
    dml = result["sql_dml_rows"]
    assert dml == result["sql_dml_embedded_rows"]
    assert [r[0] for r in dml] == [i for i in range(50) if i not in (1, 4)] + [99]
    assert {r[0]: r[1] for r in dml if r[0] in (2, 3, 99)} == {2: "u", 3: "m", 99: "n"}
    # Spark SQL statements joining wh.transaction() on the cluster: they see its own insert,
    # nothing is visible outside before its commit, and it commits them with it
    joined = sorted([r for r in dml if r[0] != 5] + [[101, "w", 2]])  # JSON: lists
    assert result["txn_inside_rows"] == joined
    assert result["txn_outside_count"] == len(dml)
    assert result["txn_rows"] == joined
