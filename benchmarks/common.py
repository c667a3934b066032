"""Helpers shared by the benchmarks: timing, and the raw-ORC limit a scan is measured against."""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Timing:
    """Medians of wall time and of process CPU time (all threads) over the runs."""

    wall_s: float
    cpu_s: float

    def as_dict(self) -> dict[str, float]:
        return {"wall_s": self.wall_s, "cpu_s": self.cpu_s}


def timed(fn: Callable[[Any], Any], runs: int, setup: Callable[[], Any]) -> Timing:
    """Medians of ``fn(setup())`` over ``runs`` runs; ``setup`` is not timed."""
    walls, cpus = [], []
    for _ in range(runs):
        arg = setup()
        c0, t0 = time.process_time(), time.perf_counter()
        fn(arg)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return Timing(statistics.median(walls), statistics.median(cpus))


def interleaved(
    fns: dict[str, Callable[..., Any]], runs: int, setup: Callable[[], Any] | None = None
) -> dict[str, list[Timing]]:
    """Wall and process CPU time of each of ``fns``, run in turn round after round (``runs``
    rounds): a ratio of two of them taken round by round sees the same machine state on both
    sides, so drifts in the machine's speed between phases of a run cancel out. With ``setup``,
    each call is ``fn(setup())`` and ``setup`` is not timed; without, ``fn()``."""
    out: dict[str, list[Timing]] = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            if setup is None:
                out[k].append(timed(lambda _, fn=fn: fn(), 1, lambda: None))
            else:
                out[k].append(timed(fn, 1, setup))
    return out


def median_timing(timings: list[Timing]) -> Timing:
    """Medians of wall and CPU time of one :func:`interleaved` series."""
    return Timing(
        statistics.median(t.wall_s for t in timings), statistics.median(t.cpu_s for t in timings)
    )


def median_walls(rounds: dict[str, list[Timing]]) -> list[float]:
    """The median wall time of each :func:`interleaved` series, in the series' order."""
    return [median_timing(series).wall_s for series in rounds.values()]


def median_ratio(num: list[Timing], den: list[Timing]) -> float:
    """Median of the round-by-round wall-time ratios of two :func:`interleaved` series."""
    return statistics.median(a.wall_s / b.wall_s for a, b in zip(num, den, strict=True))


def median_time(fn: Callable[[], Any], runs: int, reset: Callable[[], None] | None = None) -> float:
    """Median wall time of ``runs`` calls; ``reset`` runs between calls (not after the last)."""
    times = []
    for i in range(runs):
        if i and reset is not None:
            reset()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def local_spark(app: str, cores: int, **conf: str) -> Any:
    """A local SparkSession bound to loopback, UI off, Python workers on this interpreter."""
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.pyspark.python", sys.executable)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def raw_orc_limit(rows: pa.Table, codec: str, runs: int) -> dict[str, float]:
    """The raw-ORC limit: the same rows as plain (flat, non-ACID) ORC files with the same codec
    and stripe size, one file per read thread, read by pyarrow on that many threads."""
    import pyarrow.orc as orc

    from acid_platform.format.parallel import read_threads, run_parallel
    from acid_platform.format.writer import DEFAULT_STRIPE_SIZE

    work = Path(tempfile.mkdtemp(prefix="acid-bench-raw-orc-"))
    try:
        n = read_threads()
        step = -(-rows.num_rows // n)
        paths = []
        for i in range(n):
            path = work / f"part-{i}.orc"
            orc.write_table(
                rows.slice(i * step, step),
                path,
                compression=codec.lower(),
                stripe_size=DEFAULT_STRIPE_SIZE,
            )
            paths.append(path)
        tasks = [lambda p=p: orc.read_table(p) for p in paths]
        return timed(lambda _: run_parallel(tasks), runs, lambda: None).as_dict()
    finally:
        shutil.rmtree(work, ignore_errors=True)
