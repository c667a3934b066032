"""One local SparkSession for the whole test run (a JVM start costs 10–30 s here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from acid_platform.engines.spark import SparkEngine
from acid_platform_tests.helpers import warehouse_fixture


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[2] session on loopback, UI off, few shuffle partitions."""
    # Spark starts the data source's planning workers with PYSPARK_PYTHON, not the conf.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
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
def engine(spark: SparkSession) -> SparkEngine:
    """The Spark engine on the shared session."""
    return SparkEngine(spark)


#: A fresh warehouse registered as the ``acid`` source.
wh = warehouse_fixture(spark=True)


def rows_of(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    """Rows as dicts sorted by ``key`` (order-free comparison)."""
    return sorted(table.to_pylist(), key=lambda r: (r[key] is None, r[key]))
