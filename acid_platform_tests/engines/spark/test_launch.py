"""Starting Spark for a command: the master checked before any JVM, Spark built only on use."""

from __future__ import annotations

import socket

import pytest

from acid_platform.compaction import EmbeddedExecutor, ExecutorRouter, LazyExecutor
from acid_platform.engines.spark.launch import check_master, java_cause
from acid_platform.errors import EngineError


def test_a_master_list_passes_when_one_of_its_hosts_answers() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_master(f"spark://127.0.0.1:1,127.0.0.1:{port}")
        check_master("local[2]")
    with pytest.raises(EngineError, match=r"'127\.0\.0\.1' is not host:port"):
        check_master("spark://127.0.0.1")


def test_java_cause_is_the_innermost_caused_by() -> None:
    text = (
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n"
        "\tat org.apache.spark.SparkContext.assertNotStopped(SparkContext.scala:122)\n"
        "Caused by: org.apache.spark.SparkException: Exception thrown in awaitResult:\n"
        "Caused by: java.net.UnknownHostException: unreachable\n"
        "\tat java.base/java.net.InetAddress.getAllByName0(InetAddress.java:1)\n"
    )
    assert java_cause(RuntimeError(text)) == "UnknownHostException: unreachable"
    assert java_cause(RuntimeError("plain failure\nmore")) == "plain failure"


def test_a_lazy_executor_is_built_only_for_a_partition_that_needs_it() -> None:
    built: list[str] = []

    def factory() -> EmbeddedExecutor:
        built.append("spark")
        return EmbeddedExecutor()

    lazy = LazyExecutor("spark", factory)
    router = ExecutorRouter(100, EmbeddedExecutor(), lazy)
    assert router.choose(10).name == "embedded"
    assert router.choose(1000) is lazy
    assert not lazy.started and built == []  # choosing builds nothing; executing does
