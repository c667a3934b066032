"""Fixtures every package of the tests may use."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from acid_platform_tests.helpers import HIVE_FIXTURES
from acid_platform_tests.s3_server import S3Server, s3_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use the local Spark session — by name, or (``warehouse_fixture(spark=True)``)
    through ``request.getfixturevalue`` in the Spark engine's tests — are marked ``spark``: the
    fast lane (``-m "not slow and not spark"``) starts no JVM."""
    spark_dir = Path(__file__).parent / "engines" / "spark"
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) or item.path.is_relative_to(spark_dir):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def hive_fixtures() -> Path:
    """The Hive- and Trino-written tables in ``acid_platform_tests/fixtures/hive_written``."""
    assert HIVE_FIXTURES.is_dir(), f"fixtures missing at {HIVE_FIXTURES}"
    return HIVE_FIXTURES


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local[2] SparkSession for the whole test run (a JVM start costs 10–30 s here), on
    loopback, UI off, few shuffle partitions; PySpark is imported only by tests that ask."""
    from pyspark.sql import SparkSession

    from acid_platform.engines.spark.extensions import extension_conf
    from acid_platform.runtime import spark_executor_env

    # Spark starts the data source's planning workers with PYSPARK_PYTHON, not the conf.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    # as every session the project starts: executors' memory settings, Hive's statements
    for key, value in (spark_executor_env() | extension_conf()).items():
        builder = builder.config(key, value)
    session = (
        builder.master("local[2]")
        .appName("acid_platform tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3 server (moto's server mode) on a free loopback port for the whole test run."""
    with s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server
