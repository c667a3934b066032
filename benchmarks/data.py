"""Benchmark data: TPC-DS store_sales generated offline with DuckDB's tpcds extension.

The extension ships in the PyPI package ``duckdb-ext-tpcds`` (installed with ``.[bench]``) and is
loaded by path; it needs ``duckdb==1.4.x``. Generated tables are cached as Parquet under
``benchmarks/data/``.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"


def tpcds_extension() -> str:
    """Path of the tpcds.duckdb_extension file shipped by duckdb-ext-tpcds."""
    import duckdb

    version = duckdb.__version__
    roots = [Path(p) for p in sys.path if p and os.path.isdir(p)]
    for root in roots:
        hits = glob.glob(
            str(root / "duckdb_ext" / "extensions" / f"v{version}" / "*" / "tpcds.duckdb_extension")
        )
        if hits:
            return hits[0]
    raise RuntimeError(
        f"tpcds.duckdb_extension for duckdb {version} not found: pip install '.[bench]'"
    )


def store_sales(scale: float = 1.0) -> pa.Table:
    """TPC-DS store_sales at ``scale`` (SF1 = 2,880,404 rows, 23 columns), cached as Parquet."""
    DATA.mkdir(parents=True, exist_ok=True)
    cache = DATA / f"store_sales_sf{scale:g}.parquet"
    if not cache.exists():
        import duckdb

        con = duckdb.connect()
        con.execute(f"LOAD '{tpcds_extension()}'")
        con.execute(f"CALL dsdgen(sf={scale})")
        table = con.execute("SELECT * FROM store_sales").fetch_arrow_table()
        pq.write_table(table, cache)
    return pq.read_table(cache)
