"""Spark SQL writes into bucketed tables by name: Spark clusters the rows by (partition, Hive
bucket) with the session catalog's ``acid_bucket`` (:file:`jvm/AcidBuckets.java`), so INSERT
OVERWRITE writes each ``base_w/bucket_N`` once and an append one statement id (issue 34 item 5)."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from acid_platform import Warehouse

pytestmark = pytest.mark.slow


@pytest.fixture
def many_tasks(spark: SparkSession) -> Iterator[None]:
    """Eight writing tasks, not coalesced: a bucket split over two tasks would lose rows."""
    keys = ("spark.sql.adaptive.coalescePartitions.enabled", "spark.sql.shuffle.partitions")
    old = {k: spark.conf.get(k, None) for k in keys}
    spark.conf.set(keys[0], "false")
    spark.conf.set(keys[1], "8")
    yield
    for k, v in old.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


def _dirs(location: str) -> list[str]:
    return sorted(p.name for p in Path(location).rglob("*") if p.is_dir() and "_" in p.name)


@pytest.mark.parametrize("version", [1, 2])
def test_insert_overwrite_of_a_bucketed_table_writes_each_bucket_once(
    spark: SparkSession, wh: Warehouse, many_tasks: None, version: int
) -> None:
    wh.create_database("db")
    spark.sql(
        "CREATE TABLE db.b (i INT, l BIGINT, s STRING, d DATE, m DECIMAL(9,2), f DOUBLE, "
        "t SMALLINT, ds STRING) USING acid PARTITIONED BY (ds) "
        f"CLUSTERED BY (i, l, s, d, m, f, t) INTO 5 BUCKETS "
        f"TBLPROPERTIES ('bucketing_version' = '{version}')"
    )
    rng = random.Random(version)
    rows: list[tuple[object, ...]] = [
        (
            rng.randint(-(2**31), 2**31 - 1),
            rng.randint(-(2**63), 2**63 - 1),
            rng.choice(["", "a", "héllo", "x" * rng.randint(0, 9), "日本"]),
            dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-9999, 30000)),
            decimal.Decimal(rng.randint(-(10**9) + 1, 10**9 - 1)) / 100,
            rng.choice([0.0, -0.0, 1.5, -2.25e10, rng.random()]),
            rng.randint(-(2**15), 2**15 - 1),
            rng.choice(["p", "q"]),
        )
        for _ in range(400)
    ]
    rows += [(None, None, None, None, None, None, None, "p")]
    schema = "i INT, l BIGINT, s STRING, d DATE, m DECIMAL(9,2), f DOUBLE, t SMALLINT, ds STRING"
    spark.createDataFrame(rows, schema).createOrReplaceTempView("src")
    spark.sql("INSERT INTO db.b SELECT * FROM src")
    spark.sql("INSERT OVERWRITE db.b SELECT * FROM src")  # every partition replaced
    spark.sql("INSERT OVERWRITE db.b PARTITION (ds = 'p') SELECT i, l, s, d, m, f, t FROM src")
    want = sorted(
        [r for r in rows if r[-1] == "q"] + [(*r[:-1], "p") for r in rows],
        key=repr,
    )
    got = sorted((tuple(r.values()) for r in wh.query("SELECT * FROM db.b").to_pylist()), key=repr)
    assert got == want
    location = wh.table("db.b").spec.location
    bases = [d for d in _dirs(location) if d.startswith("base_")]
    assert bases and not [
        d
        for d in _dirs(location)
        if d.startswith("delta_") and d.count("_") > 2 and not d.endswith("_0000")
    ]
