"""pyarrow's allocator keeps freed pages for reuse in processes that import acid_platform first
(``acid_platform/__init__.py``): the next stripe of a scan reuses them instead of faulting in
and zeroing fresh pages. A user's own MIMALLOC_PURGE_DELAY wins."""

from __future__ import annotations

import os
import subprocess
import sys

from pyspark.sql import SparkSession

# Ten rounds of allocating and freeing 64 MB through pyarrow's default pool; prints the setting
# and the minor page faults of the rounds after the first.
ROUNDS = """
import os, resource
import acid_platform  # first, as the CLI, Dagster code and Spark's workers import it
import numpy as np, pyarrow as pa, pyarrow.compute as pc
a = pa.array(np.arange(8_000_000))
pc.add(a, 1)  # the first round allocates
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    out = pc.add(a, 1)
    del out
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(os.environ["MIMALLOC_PURGE_DELAY"], after - before)
"""


def _rounds(**env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k != "MIMALLOC_PURGE_DELAY"}
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS], env={**base, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    setting, faults = out.stdout.split()
    return setting, int(faults)


def test_freed_pages_are_reused_not_faulted_in_again() -> None:
    setting, faults = _rounds()
    assert setting == "-1"
    assert faults < 32  # 640 MB allocated in all: the first round's pages, reused


def test_the_users_setting_wins_and_is_what_pyarrow_obeys() -> None:
    setting, faults = _rounds(MIMALLOC_PURGE_DELAY="0")  # give pages back at once
    assert setting == "0"
    # every round faults its 64 MB in again: at least 32 faults a round (2 MB huge pages)
    assert faults >= 10 * 32 * 0.9


def test_spark_python_workers_inherit_it(spark: SparkSession) -> None:
    got = (
        spark.sparkContext.parallelize([0], 1)
        .map(lambda _: __import__("os").environ.get("MIMALLOC_PURGE_DELAY"))
        .collect()
    )
    assert got == ["-1"]
