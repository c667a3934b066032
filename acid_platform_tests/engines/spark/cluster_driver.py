"""The driver program of the standalone-cluster test (its own process: one SparkContext each).

    python -m acid_platform_tests.engines.spark.cluster_driver MASTER_URL WAREHOUSE OUT_JSON \
        [METASTORE_URL [STORAGE_JSON]]

Writes a table from a DataFrame through the ``acid`` source, updates and merges it with the
Spark engine, compacts it (major) with the Spark compaction executor, reads it back through Spark
and the embedded reader, creates, fills and reads a table by name in Spark SQL, and records who wrote each file: the driver's pid, each task's
pid/host/partition, and whether that pid descends from an executor JVM
(``CoarseGrainedExecutorBackend``) started by a worker.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from acid_platform import StorageOptions, Warehouse
from acid_platform.compaction import compact_table, run_worker
from acid_platform.engines.spark import SparkEngine
from acid_platform.engines.spark.cluster import cluster_session
from acid_platform.engines.spark.compaction import SparkCompactionExecutor
from acid_platform.table.statement import StatementMetrics


def executor_ancestry(pid: int) -> list[str]:
    """Command names of ``pid``'s ancestors (first word of each cmdline, Java main class)."""
    chain = []
    while pid > 1:
        proc = Path(f"/proc/{pid}")
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            stat = (proc / "stat").read_text()
        except OSError:
            break
        words = [w.decode(errors="replace") for w in cmdline if w]
        main = next(
            (w for w in words if w.startswith("org.apache.spark.")), words[0] if words else "?"
        )
        chain.append(main)
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return chain


#: What the project once set in the driver's environment (now: none of it, ever).
WATCHED = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP")


def main(master: str, root: str, out: str, metastore_url: str = "", storage_json: str = "") -> None:
    environment = {k: os.environ.get(k) for k in WATCHED}
    spark = cluster_session(master, "acid_platform cluster test", executors=2, cores=1)
    spark.sparkContext.setLogLevel("ERROR")
    result: dict[str, Any] = {"driver_pid": os.getpid()}
    try:
        storage = StorageOptions.from_json(storage_json) if storage_json else None
        wh = Warehouse.open(root, metastore_url or None, storage=storage)
        wh.register_spark(spark)
        table = wh.create_table(
            "c", [("id", "int"), ("v", "string")], partition_columns=[("p", "int")]
        )
        df = spark.createDataFrame(
            [(i, f"v{i}", i % 3) for i in range(200)], "id INT, v STRING, p INT"
        )
        metrics_path = Path(out).with_name("write_metrics.json")
        df.repartition(2).write.format("acid").option("metrics_path", str(metrics_path)).mode(
            "append"
        ).save("c")
        result["write"] = json.loads(metrics_path.read_text())
        engine = SparkEngine(spark)
        result["update"] = _with_tasks(engine.update(table, {"v": "concat(v, '!')"}, "id % 10 = 0"))
        source = spark.createDataFrame([(1, "m", 1), (500, "new", 2)], "id INT, v STRING, p INT")
        merge = engine.merge(table, source, "t.id = s.id AND t.p = s.p")
        result["merge"] = _with_tasks(
            merge.when_matched_update_all().when_not_matched_insert_all().execute()
        )
        before = sorted(str(r) for r in table.scan(with_row_id=True).to_arrow().to_pylist())
        compact_table(wh, "c", kind="major", wait=False)
        outcomes = run_worker(wh, executor=SparkCompactionExecutor(spark))
        result["compaction"] = {
            "states": [o.state.value for o in outcomes],
            "executors": [o.executor for o in outcomes],
            "tasks": [asdict(t) for o in outcomes for t in getattr(o.result, "tasks", ())],
            "same_rows": before
            == sorted(str(r) for r in table.scan(with_row_id=True).to_arrow().to_pylist()),
        }
        result["spark_rows"] = sorted(
            (r.id, r.v, r.p) for r in spark.read.format("acid").load("c").collect()
        )
        result["embedded_rows"] = sorted(
            (r["id"], r["v"], r["p"]) for r in table.scan().to_arrow().to_pylist()
        )
        # tables by name (the session catalog extension): CREATE, INSERT … SELECT, SELECT
        spark.sql("CREATE TABLE default.sq (id INT, v STRING, p INT) USING acid PARTITIONED BY (p)")
        spark.sql("INSERT INTO default.sq SELECT id, v, p FROM default.c WHERE id < 50")
        result["sql_rows"] = sorted(
            tuple(r) for r in spark.sql("SELECT id, v, p FROM default.sq").collect()
        )
        result["sql_embedded_rows"] = sorted(
            (r["id"], r["v"], r["p"]) for r in wh.table("sq").scan().to_arrow().to_pylist()
        )
        result["sql_p1_count"] = (
            spark.sql("SELECT count(*) AS n FROM default.sq WHERE p = 1").collect()[0].n
        )
        # Spark SQL row-level DML on the table by name, written by the executors
        spark.createDataFrame([(1,), (4,)], "k INT").createOrReplaceTempView("gone")
        spark.sql("DELETE FROM default.sq WHERE id IN (SELECT k FROM gone)")
        spark.sql("UPDATE default.sq SET v = 'u' WHERE id = 2")
        spark.sql(
            "MERGE INTO default.sq t USING (SELECT 3 AS id, 'm' AS v, 0 AS p UNION ALL "
            "SELECT 99, 'n', 0) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        result["sql_dml_rows"] = sorted(
            tuple(r) for r in spark.sql("SELECT id, v, p FROM default.sq").collect()
        )
        result["sql_dml_embedded_rows"] = sorted(
            (r["id"], r["v"], r["p"]) for r in wh.table("sq").scan().to_arrow().to_pylist()
        )
        # Spark SQL joining wh.transaction(): one commit for the Python API's statements and its
        other = Warehouse.open(root, metastore_url or None, storage=storage)
        with wh.transaction():
            wh.table("sq").insert([{"id": 100, "v": "t", "p": 1}])
            spark.sql("DELETE FROM default.sq WHERE id IN (5, 100)")
            spark.sql("INSERT INTO default.sq VALUES (101, 'w', 2)")
            result["txn_inside_rows"] = sorted(
                tuple(r) for r in spark.sql("SELECT id, v, p FROM default.sq").collect()
            )
            result["txn_outside_count"] = other.table("sq").scan().to_arrow().num_rows
        other.close()
        result["txn_rows"] = sorted(
            (r["id"], r["v"], r["p"]) for r in wh.table("sq").scan().to_arrow().to_pylist()
        )
        pids = {t["pid"] for k in ("update", "merge", "compaction") for t in result[k]["tasks"]}
        pids |= {t["pid"] for t in result["write"]["tasks"]}
        result["ancestry"] = {str(pid): executor_ancestry(pid) for pid in pids}
        result["environment_written"] = [k for k in WATCHED if os.environ.get(k) != environment[k]]
        wh.close()
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(result, default=str))


def _with_tasks(metrics: StatementMetrics) -> dict[str, Any]:
    """A statement's metrics, with the tasks that wrote its files (JSON-ready)."""
    return {**metrics.as_dict(), "tasks": [asdict(t) for t in metrics.tasks]}


if __name__ == "__main__":
    main(*sys.argv[1:6])
