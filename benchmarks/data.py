"""Benchmark data: TPC-DS store_sales generated offline with DuckDB's tpcds extension.

The extension ships in the PyPI package ``duckdb-ext-tpcds`` (installed with ``.[bench]``) and is
loaded by path (:mod:`acid_platform_tests.tpcds`). Generated tables are cached as Parquet under
``benchmarks/data/``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from acid_platform_tests.tpcds import tpcds_tables

DATA = Path(__file__).resolve().parent / "data"


def store_sales(scale: float = 1.0) -> pa.Table:
    """TPC-DS store_sales at ``scale`` (SF1 = 2,880,404 rows, 23 columns), cached as Parquet."""
    DATA.mkdir(parents=True, exist_ok=True)
    cache = DATA / f"store_sales_sf{scale:g}.parquet"
    if not cache.exists():
        table = tpcds_tables(scale, ["store_sales"])["store_sales"]
        pq.write_table(table, cache)
    return pq.read_table(cache)


def platform_rows(n: int = 1_000_000) -> pa.Table:
    """``n`` rows of store_sales (SF1) with the column mix of an asset a data engineer writes:
    its 11 bigint keys and 12 decimal amounts, plus a date, a timestamp, two strings (a store id
    and a low-cardinality channel) and a boolean derived from them (28 columns)."""
    import pyarrow.compute as pc

    rows = store_sales(1.0).slice(0, n).combine_chunks()
    date_sk = pc.fill_null(rows.column("ss_sold_date_sk"), 2451545)
    days = pc.subtract(date_sk, 2440588)  # Julian day number -> days since 1970-01-01
    sold_date = pc.cast(pc.cast(days, pa.int32()), pa.date32())
    seconds = pc.add(pc.multiply(days, 86400), pc.fill_null(rows.column("ss_sold_time_sk"), 0))
    sold_at = pc.cast(pc.multiply(seconds, 1_000_000), pa.timestamp("us"))
    store = pc.cast(pc.fill_null(rows.column("ss_store_sk"), 0), pa.string())
    store_id = pc.binary_join_element_wise("STORE", pc.utf8_lpad(store, 6, "0"), "")
    channels = pa.array(["store", "web", "catalog", "phone"])
    promo = pc.fill_null(rows.column("ss_promo_sk"), 0)
    channel = channels.take(pc.cast(pc.bit_wise_and(promo, 3), pa.int32()))
    returned = pc.equal(pc.bit_wise_and(rows.column("ss_ticket_number"), 15), 0)
    return (
        rows.append_column("ss_sold_date", sold_date)
        .append_column("ss_sold_at", sold_at)
        .append_column("ss_store_id", store_id)
        .append_column("ss_channel", channel)
        .append_column("ss_returned", returned)
    )
