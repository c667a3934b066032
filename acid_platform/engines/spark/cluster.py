"""A real Spark standalone cluster on this machine: one master and N workers on 127.0.0.1.

The pip ``pyspark`` package ships ``bin/spark-class`` (not the ``sbin`` scripts), which starts the
master and the workers. Everything binds to loopback (the master's and workers' processes get
``SPARK_LOCAL_IP=127.0.0.1``, else a worker advertises another address; a session's driver gets
``spark.driver.host``). Tasks of a session on this cluster run in executor JVMs (and their
Python workers) started by the workers — separate processes from the driver.

>>> # with LocalCluster(workers=2) as cluster:
>>> #     spark = cluster.session("my-app")
>>> #     ...
>>> #     spark.stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pyspark import find_spark_home
from pyspark.sql import SparkSession

from acid_platform.engines.spark.extensions import extension_conf
from acid_platform.engines.spark.python_workers import use_driver_python
from acid_platform.runtime import spark_executor_env

LOOPBACK = "127.0.0.1"


class LocalCluster:
    """Start/stop a standalone master and ``workers`` workers (each ``cores`` cores)."""

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        work_dir: str | os.PathLike[str] | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout_s = start_timeout_s
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="acid-spark-cluster-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.webui_port = _free_port()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``."""
        return f"spark://{LOOPBACK}:{self.port}"

    @property
    def pids(self) -> list[int]:
        """Process ids of the master and workers."""
        return [p.pid for p in self._procs]

    def start(self) -> LocalCluster:
        """Start the master, then the workers; return once every worker has registered."""
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            ["--host", LOOPBACK, "--port", str(self.port), "--webui-port", str(self.webui_port)],
        )
        for i in range(self.workers):
            work = self.work_dir / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                [
                    "--host",
                    LOOPBACK,
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(work),
                    self.master_url,
                ],
            )
        try:
            self._wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def session(self, app_name: str = "acid_platform", **conf: str) -> SparkSession:
        """A SparkSession on this cluster (see :func:`cluster_session`); stop it before
        stopping the cluster."""
        return cluster_session(
            self.master_url, app_name, executors=self.workers, cores=self.cores, **conf
        )

    def stop(self) -> None:
        """Stop workers, then the master (SIGTERM, then SIGKILL after 15 s); remove the work
        directory if the cluster made it."""
        for proc in reversed(self._procs):
            _terminate(proc)
        self._procs.clear()
        for log in self._logs:
            log.close()
        self._logs.clear()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ helpers
    def _spawn(self, name: str, main_class: str, args: list[str]) -> None:
        spark_home = find_spark_home._find_spark_home()
        env = dict(os.environ)
        env.update(
            SPARK_HOME=spark_home,
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOG_DIR=str(self.work_dir),
            PYSPARK_PYTHON=sys.executable,
        )
        log = open(self.work_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        cmd = [os.path.join(spark_home, "bin", "spark-class"), main_class, *args]
        # own session: stopping the process group also stops the executors a worker started
        self._procs.append(
            subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        )

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        url = f"http://{LOOPBACK}:{self.webui_port}/json/"
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            dead = [p for p in self._procs if p.poll() is not None]
            if dead:
                raise RuntimeError(
                    f"Spark {'master' if dead[0] is self._procs[0] else 'worker'} exited with "
                    f"{dead[0].returncode}; see logs in {self.work_dir}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    state = json.loads(response.read())
                if int(state.get("aliveworkers", 0)) >= self.workers:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(
            f"Spark cluster at {self.master_url}: {state.get('aliveworkers', 0)} of {self.workers} "
            f"workers registered within {self.start_timeout_s:.0f} s; see logs in {self.work_dir}"
        )


def cluster_session(
    master_url: str,
    app_name: str = "acid_platform",
    *,
    executors: int = 2,
    cores: int = 1,
    **conf: str,
) -> SparkSession:
    """A SparkSession on a standalone cluster: driver on loopback (``spark.driver.host``,
    ``spark.driver.bindAddress``), UI off, this Python on the driver and the executors
    (``spark.pyspark.python``, applied to the session's ``SparkContext``: PySpark takes its
    workers' interpreter from ``PYSPARK_PYTHON`` only), with the memory settings of
    :mod:`acid_platform.runtime`, Hive's maintenance statements in Spark SQL
    (:func:`~.extensions.extension_conf`), and the first job held back until all ``executors``
    have registered. Sets no environment variable."""
    settings = {
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executor.cores": str(cores),
        "spark.cores.max": str(executors * cores),
        "spark.executor.memory": "768m",
        "spark.sql.shuffle.partitions": str(executors * cores),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        **spark_executor_env(),
    }
    settings.update(conf)
    settings |= extension_conf(settings)
    builder = SparkSession.builder.master(master_url).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    use_driver_python(session)  # SparkContext.pythonExec from spark.pyspark.python
    return session


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
