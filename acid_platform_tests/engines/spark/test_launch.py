"""Starting Spark for a command: the master checked before any JVM, Spark built only on use."""

from __future__ import annotations

import socket
import threading

import pytest

from acid_platform.compaction import EmbeddedExecutor, ExecutorRouter, LazyExecutor
from acid_platform.engines.spark.launch import check_master, java_cause
from acid_platform.errors import EngineError


def test_a_port_that_does_not_speak_spark_rpc_fails_at_once_with_what_it_is() -> None:
    with socket.socket() as silent, socket.socket() as chatty:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        chatty.bind(("127.0.0.1", 0))
        chatty.listen()
        port, other = silent.getsockname()[1], chatty.getsockname()[1]

        def banner() -> None:  # e.g. an SSH server: speaks first, not Spark
            conn, _ = chatty.accept()
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                conn.recv(100)

        thread = threading.Thread(target=banner, daemon=True)
        thread.start()
        with pytest.raises(EngineError, match=rf"127\.0\.0\.1:{other} does not speak Spark's RPC"):
            check_master(f"spark://127.0.0.1:{other}", timeout_s=5)
        thread.join(10)
        with pytest.raises(
            EngineError, match=rf"127\.0\.0\.1:{port} accepts connections but does not answer"
        ):
            check_master(f"spark://127.0.0.1:{port}", timeout_s=1)
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
