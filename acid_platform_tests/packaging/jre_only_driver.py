"""The driver of the JRE-only test (its own process, started with no ``javac`` on its ``PATH``):

    python -m acid_platform_tests.packaging.jre_only_driver WAREHOUSE OUT_JSON

Creates a table in Spark SQL (``CREATE TABLE … USING acid``), inserts into it and reads it back
by name (``spark.table``), and records which catalog jar the session uses.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import acid_platform
from acid_platform import Warehouse
from acid_platform.engines.spark.catalog_install import catalog_jar


def main(warehouse: str, out: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("jre only")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        with Warehouse.open(warehouse, create=True) as wh:
            wh.register_spark(spark)
            spark.sql("CREATE DATABASE IF NOT EXISTS db")
            spark.sql("CREATE TABLE db.t (id INT, name STRING) USING acid")
            spark.sql("INSERT INTO db.t VALUES (1, 'a'), (2, 'b')")
            rows = sorted(tuple(r) for r in spark.table("db.t").collect())
            names = [r.tableName for r in spark.sql("SHOW TABLES IN db").collect()]
        result = {
            "rows": rows,
            "tables": names,
            "package": acid_platform.__file__,
            "jar": str(catalog_jar(spark.version)),
            "javac": shutil.which("javac"),
        }
    finally:
        spark.stop()
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
