"""Spark SQL DML speed (issue 32) on TPC-DS store_sales: ``spark.sql("DELETE / UPDATE / MERGE …")``
on the acid table by name (Spark's row-level plan, :mod:`acid_platform.engines.spark.row_level`)
against the same statements through ``wh.table(…)`` on Spark
(:class:`~acid_platform.engines.spark.SparkEngine`) and a native full rewrite of plain ORC, in the
same run and session, interleaved a round at a time. Medians of several runs; each run changes a
fresh slice of rows. Writes ``benchmarks/out/spark_sql_dml.json``.

    python -m benchmarks.bench_spark_sql_dml [--scale 1] [--runs 3] [--cores 2]

DELETE 1% of rows, UPDATE 0.1%, MERGE of a 3% source (half updates of existing keys, half new
keys) — bench_spark's statements.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.bench_spark import DATA, KEYS, OUT, TASKS, NativeRewrite, interleaved


def run(scale: float, runs: int, cores: int) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812

    from acid_platform import Warehouse
    from acid_platform.engines.spark import SparkEngine
    from benchmarks.common import local_spark
    from benchmarks.data import store_sales

    rows = store_sales(scale)
    parquet = DATA / f"store_sales_sf{scale:g}.parquet"
    spark = local_spark(
        "bench_spark_sql_dml",
        cores,
        **{"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": str(TASKS)},
    )
    work = Path(tempfile.mkdtemp(prefix="acid-bench-sqldml-"))
    results: dict[str, Any] = {"rows": rows.num_rows, "runs": runs, "cores": cores}
    try:
        wh = Warehouse.open(work / "wh")
        wh.register_spark(spark)
        engine = SparkEngine(spark)
        table = wh.create_table("store_sales", rows.schema, properties={"orc.compress": "SNAPPY"})
        source = spark.read.parquet(str(parquet)).repartition(TASKS)
        source.write.format("acid").mode("append").save("store_sales")
        plain = str(work / "plain_orc")
        source.write.mode("overwrite").orc(plain)
        snapshot = str(work / "plain_snapshot")
        shutil.copytree(plain, snapshot)
        rewrite = NativeRewrite(plain)

        # each variant changes its own slice: run i of variant k uses slice 3 * i + k
        def delete(k: int) -> list[Any]:
            def sql(i: int) -> None:
                spark.sql(
                    f"DELETE FROM default.store_sales WHERE ss_ticket_number % 100 = {3 * i + k}"
                )

            def api(i: int) -> None:
                engine.delete(table, f"ss_ticket_number % 100 = {3 * i + k}")

            def native(i: int) -> None:
                df = spark.read.orc(plain)
                rewrite(df.where(~(F.col("ss_ticket_number") % 100 == 3 * i + k)))

            return [sql, api, native]

        def update(k: int) -> list[Any]:
            def sql(i: int) -> None:
                spark.sql(
                    "UPDATE default.store_sales SET ss_quantity = ss_quantity + 1 "
                    f"WHERE ss_ticket_number % 1000 = {500 + 3 * i + k}"
                )

            def api(i: int) -> None:
                engine.update(
                    table,
                    {"ss_quantity": "ss_quantity + 1"},
                    f"ss_ticket_number % 1000 = {500 + 3 * i + k}",
                )

            def native(i: int) -> None:
                df = spark.read.orc(plain)
                hit = F.col("ss_ticket_number") % 1000 == 500 + 3 * i + k
                rewrite(
                    df.withColumn(
                        "ss_quantity",
                        F.when(hit, F.col("ss_quantity") + 1).otherwise(F.col("ss_quantity")),
                    )
                )

            return [sql, api, native]

        def merge_source(i: int) -> Any:
            base = 60 + 9 * i
            frame = spark.read.orc(snapshot)
            slice_ = frame.where((F.col("ss_ticket_number") % 200).isin(base, base + 1, base + 2))
            changed = slice_.withColumn("ss_quantity", F.col("ss_quantity") + 1000)
            new = slice_.withColumn(
                "ss_ticket_number", F.col("ss_ticket_number") + 10_000_000 * (i + 1)
            )
            return changed.unionByName(new)

        on = " AND ".join(f"t.{c} = s.{c}" for c in KEYS)

        def merge(k: int) -> list[Any]:
            def sql(i: int) -> None:
                merge_source(3 * i + k).createOrReplaceTempView("merge_src")
                spark.sql(
                    f"MERGE INTO default.store_sales t USING merge_src s ON {on} "
                    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                )

            def api(i: int) -> None:
                src = merge_source(3 * i + k)
                engine.merge(
                    table, src, on
                ).when_matched_update_all().when_not_matched_insert_all().execute()

            def native(i: int) -> None:
                df = spark.read.orc(plain)
                src = merge_source(3 * i + k)
                rewrite(df.join(src.select(*KEYS), list(KEYS), "left_anti").unionByName(src))

            return [sql, api, native]

        for name, make in (
            ("delete_1pct", delete),
            ("update_0_1pct", update),
            ("merge_3pct", merge),
        ):
            fns = [make(0)[0], make(1)[1], make(2)[2]]
            sql_t, api_t, native_t = interleaved(fns, runs)
            s, a, n = (statistics.median(t) for t in (sql_t, api_t, native_t))
            results[name] = {
                "spark_sql_s": s,
                "wh_table_spark_s": a,
                "native_rewrite_s": n,
                "sql_vs_api": s / a,
                "sql_vs_native": s / n,
                "all_s": {"spark_sql": sql_t, "wh_table": api_t, "native": native_t},
            }
        wh.close()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    results = run(args.scale, args.runs, args.cores)
    OUT.mkdir(exist_ok=True)
    (OUT / "spark_sql_dml.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
