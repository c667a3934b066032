"""The Spark engine and a registered warehouse on the test run's one SparkSession (the
``spark`` fixture of ``acid_platform_tests/conftest.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

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


#: How long a streaming query of a test may take to process what is available.
STREAM_DEADLINE_S = 120


def start_stream(df: DataFrame, checkpoint: Path, table: str, **trigger: Any) -> StreamingQuery:
    """``df`` streamed into the ACID table ``table`` (``trigger``: Spark's; default
    ``availableNow``), checkpointed at ``checkpoint``."""
    return (
        df.writeStream.format("acid")
        .option("checkpointLocation", str(checkpoint))
        .trigger(**(trigger or {"availableNow": True}))
        .start(table)
    )


def finish(query: StreamingQuery) -> StreamingQuery:
    """Wait for an ``availableNow`` query to end, and check it ended well."""
    query.awaitTermination(STREAM_DEADLINE_S)
    assert not query.isActive, "the availableNow query did not finish"
    assert query.exception() is None, query.exception()
    return query
