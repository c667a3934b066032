"""The Spark engine and a registered warehouse on the test run's one SparkSession (the
``spark`` fixture of ``acid_platform_tests/conftest.py``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from acid_platform.engines.spark import SparkEngine
from acid_platform_tests.helpers import warehouse_fixture


@pytest.fixture(scope="session")
def engine(spark: SparkSession) -> SparkEngine:
    """The Spark engine on the shared session."""
    return SparkEngine(spark)


#: A fresh warehouse registered as the ``acid`` source.
wh = warehouse_fixture(spark=True)


def rows_of(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    """Rows as dicts sorted by ``key`` (order-free comparison)."""
    return sorted(table.to_pylist(), key=lambda r: (r[key] is None, r[key]))
