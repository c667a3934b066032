"""Spark writes refuse text that is not UTF-8 (issue 29). A JVM string is UTF-8 unless made
from bytes: Spark's ``CAST(binary AS STRING)`` keeps them unchecked (``is_valid_utf8`` says
false), and the Arrow batches reaching the executors' Python writers carry them as they are.
The executors' conversion to the table's types checks every string, so the write fails with
``InvalidUtf8Error`` naming the column and the row within the Spark task; its transaction is
aborted and nothing becomes visible."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse
from acid_platform.engines.spark import SparkEngine
from acid_platform.errors import InvalidUtf8Error


@pytest.mark.slow
def test_a_spark_write_with_latin1_text_fails_typed_and_leaves_nothing_visible(
    spark: SparkSession, wh: Warehouse, engine: SparkEngine
) -> None:
    t = wh.create_table("u", [("id", "int"), ("v", "string")])
    t.insert([{"id": 0, "v": "kept"}])
    bad = spark.sql("SELECT 1 AS id, CAST(X'636166E9' AS STRING) AS v").coalesce(1)
    assert bad.selectExpr("is_valid_utf8(v) AS ok").first()["ok"] is False  # type: ignore[index]
    with pytest.raises(InvalidUtf8Error, match=r"Spark task 0's column 'v', row 0: 'caf\\xe9'"):
        engine.write(bad, t)
    with pytest.raises(Exception, match="InvalidUtf8Error"):
        bad.write.format("acid").mode("append").save("u")
    assert t.scan().to_arrow().to_pylist() == [{"id": 0, "v": "kept"}]
    good = spark.sql("SELECT 2 AS id, 'café 日本' AS v")
    engine.write(good, t)
    assert sorted(r["v"] for r in t.scan().to_arrow().to_pylist()) == ["café 日本", "kept"]
