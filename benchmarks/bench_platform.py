"""Dagster platform speed (issue 10): what ``AcidTableIOManager`` adds to a write and a load.

The same 1,000,000 rows (:func:`benchmarks.data.platform_rows`: store_sales with a date, a
timestamp, strings and a boolean, 28 columns) are written

* directly, ``Table.insert(rows)`` (``overwrite=True`` for the IO manager's ``overwrite``), and
* as an asset's output through the IO manager: ``materialize()`` of an asset returning the rows
  on a real (temporary) Dagster instance. Two figures: the whole ``materialize()`` call, and the
  IO manager's ``handle_output`` timed inside the run (conversion, checks, the write and the
  materialization metadata — row counts, column schema, delta counts, delete ratio, bytes).

Each run starts from an empty table in a fresh warehouse. Loads read the same table (one write)
with ``Table.scan`` (all columns, 3 columns; ``.to_pandas()``) against the IO manager's
``load_input`` of a downstream asset's input (pyarrow, pandas; with and without ``columns``),
again timed inside the run and as a whole ``materialize()``. Direct and IO-manager runs
alternate, so the machine's other load falls on both alike. Goal (issue 10): the IO manager
within 1.1x of the direct call. Medians of ``--runs``, wall and process CPU seconds. Writes
``benchmarks/out/platform.json`` and ``benchmarks/out/platform.md``.

    python -m benchmarks.bench_platform [--rows 1000000] [--runs 5]
"""

# no `from __future__ import annotations`: Dagster reads the assets' annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from dagster import (
    AssetIn,
    AssetsDefinition,
    DagsterInstance,
    DailyPartitionsDefinition,
    InitResourceContext,
    InputContext,
    IOManager,
    OutputContext,
    asset,
    instance_for_test,
    materialize,
    mem_io_manager,
)

from acid_platform import Warehouse
from acid_platform.orchestration import AcidTableIOManager, AcidWarehouseResource, table_health
from benchmarks.common import Timing
from benchmarks.data import platform_rows

OUT = Path(__file__).resolve().parent / "out"
GOAL = 1.1
TABLE = "sales"
LOAD_COLUMNS = ["ss_item_sk", "ss_net_paid", "ss_sold_date"]

#: ``(wall s, CPU s)`` of each run, by what was timed: direct, materialize, inside.
Samples = dict[str, list[tuple[float, float]]]

#: What the timed IO manager measured in the latest run: ``(what, wall s, CPU s)``.
INSIDE: list[tuple[str, float, float]] = []
#: Runs log to the console at WARNING (the event log is stored as always).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


# --------------------------------------------------------------------------- timing


@contextmanager
def clock(into: list[tuple[float, float]]) -> Iterator[None]:
    """Append ``(wall s, process CPU s)`` of the block to ``into``."""
    c0, t0 = time.process_time(), time.perf_counter()
    yield
    into.append((time.perf_counter() - t0, time.process_time() - c0))


def median(samples: list[tuple[float, float]]) -> Timing:
    return Timing(
        statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
    )


class TimedIOManager(IOManager):
    """The AcidTableIOManager's IO manager, its handle_output and load_input timed."""

    def __init__(self, inner: IOManager) -> None:
        self.inner = inner

    def handle_output(self, context: OutputContext, obj: object) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        self.inner.handle_output(context, obj)
        INSIDE.append(("handle_output", time.perf_counter() - t0, time.process_time() - c0))

    def load_input(self, context: InputContext) -> object:
        c0, t0 = time.process_time(), time.perf_counter()
        value = self.inner.load_input(context)
        INSIDE.append(("load_input", time.perf_counter() - t0, time.process_time() - c0))
        return value


class TimedAcidTableIOManager(AcidTableIOManager):
    def create_io_manager(self, context: InitResourceContext) -> TimedIOManager:  # type: ignore[override]
        return TimedIOManager(super().create_io_manager(context))


def resources(root: str) -> dict[str, Any]:
    acid = AcidWarehouseResource(warehouse=root)
    return {
        "acid_warehouse": acid,
        "io_manager": TimedAcidTableIOManager(acid_warehouse=acid),
        "mem": mem_io_manager,
    }


def inside(kind: str) -> tuple[float, float]:
    """The one ``kind`` timing the IO manager recorded in the run just ended."""
    found = [(w, c) for k, w, c in INSIDE if k == kind]
    assert len(found) == 1, INSIDE
    INSIDE.clear()
    return found[0]


# --------------------------------------------------------------------------- writes


def pandas_frame(rows: pa.Table) -> pd.DataFrame:
    """The rows as a pandas user holds them: amounts as float64 (not Python Decimals)."""
    schema = pa.schema(
        [f.with_type(pa.float64()) if pa.types.is_decimal(f.type) else f for f in rows.schema]
    )
    return rows.cast(schema).to_pandas()


@dataclass(frozen=True)
class WriteCase:
    """What one write benchmark writes: ``data`` into a fresh table of ``schema`` (partitioned
    by ``ds`` and holding ``other_partitions`` one-row days first, when ``partitioned``)."""

    data: pa.Table | pd.DataFrame
    schema: pa.Schema
    mode: str
    partitioned: bool = False
    other_partitions: int = 0

    def fresh_warehouse(self) -> str:
        """A new warehouse directory holding the table ``default.sales``."""
        root = tempfile.mkdtemp(prefix="acid-bench-platform-")
        with Warehouse.open(root) as wh:
            if not self.partitioned:
                wh.create_table(TABLE, self.schema)
                return root
            data = pa.schema([f for f in self.schema if f.name != "ds"])
            table = wh.create_table(TABLE, data, partition_columns=pa.schema([("ds", pa.date32())]))
            if self.other_partitions:
                table.insert(other_days(self.data, self.other_partitions))
        return root

    def asset(self) -> AssetsDefinition:
        data = self.data
        metadata: dict[str, str] = {"write_mode": self.mode}
        if self.partitioned:
            metadata["partition_expr"] = "ds"

        @asset(name=TABLE, metadata=metadata, partitions_def=DAYS if self.partitioned else None)
        def output():  # type: ignore[no-untyped-def]
            return data

        return output


#: The partitions of the partitioned case; its output is the day ``DAY``.
DAYS = DailyPartitionsDefinition(start_date="2020-01-01", end_date="2026-01-01")
DAY = dt.date(2024, 1, 1)


def with_day(rows: pa.Table) -> pa.Table:
    """The rows, all of the day ``DAY`` (a ``ds`` date column last)."""
    return rows.append_column("ds", pa.array([DAY] * rows.num_rows, pa.date32()))


def other_days(rows: pa.Table | pd.DataFrame, days: int) -> pa.Table:
    """One row on each of ``days`` days before ``DAY``."""
    arrow = rows if isinstance(rows, pa.Table) else pa.Table.from_pandas(rows, preserve_index=False)
    some = arrow.slice(0, days).drop_columns(["ds"])
    ds = [DAY - dt.timedelta(days=1 + i) for i in range(days)]
    return some.append_column("ds", pa.array(ds, pa.date32()))


def bench_write(case: WriteCase, runs: int, instance: DagsterInstance) -> Samples:
    """Direct ``Table.insert`` against the IO manager's write of the same rows; the two
    alternate which goes first."""
    overwrite = case.mode == "overwrite"
    output = case.asset()
    key = DAY.isoformat() if case.partitioned else None
    samples: Samples = {"direct": [], "materialize": [], "inside": [], "metadata": []}

    def direct() -> None:
        root = case.fresh_warehouse()
        try:
            with Warehouse.open(root) as wh:
                table = wh.table(TABLE)
                with clock(samples["direct"]):
                    table.insert(case.data, overwrite=overwrite)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def io_manager() -> None:
        root = case.fresh_warehouse()
        try:
            with clock(samples["materialize"]):
                result = materialize(
                    [output],
                    resources=resources(root),
                    instance=instance,
                    partition_key=key,
                    run_config=QUIET,
                )
            assert result.success
            samples["inside"].append(inside("handle_output"))
            with Warehouse.open(root) as wh:
                table = wh.table(TABLE)
                got = table.scan(["ss_item_sk"]).to_arrow().num_rows
                assert got == len(case.data) + case.other_partitions, got
                with clock(samples["metadata"]):  # what the write's metadata cost, alone
                    table_health(table, [f"ds={DAY}"] if case.partitioned else None)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    for i in range(runs):
        for step in (direct, io_manager) if i % 2 == 0 else (io_manager, direct):
            step()
    return samples


# --------------------------------------------------------------------------- loads


def bench_load(
    rows: pa.Table, kind: str, columns: list[str] | None, runs: int, instance: DagsterInstance
) -> Samples:
    """``Table.scan`` (``.to_pandas()`` for pandas) against the IO manager's ``load_input``."""
    typ: type = pa.Table if kind == "arrow" else pd.DataFrame

    @asset(name=TABLE)
    def upstream() -> pa.Table:
        return rows

    ins = {TABLE: AssetIn(metadata={"columns": columns})} if columns else {}

    @asset(ins=ins, io_manager_key="mem")
    def consumer(sales: typ) -> int:  # type: ignore[valid-type]
        return len(sales)

    root = tempfile.mkdtemp(prefix="acid-bench-platform-")
    samples: Samples = {"direct": [], "materialize": [], "inside": []}
    try:
        res = resources(root)
        assert materialize([upstream], resources=res, instance=instance, run_config=QUIET).success
        INSIDE.clear()
        with Warehouse.open(root) as wh:
            table = wh.table(TABLE)
            for _ in range(runs):
                with clock(samples["direct"]):
                    scan = table.scan(columns)
                    got = scan.to_pandas() if kind == "pandas" else scan.to_arrow()
                assert len(got) == rows.num_rows
                del got
                with clock(samples["materialize"]):
                    result = materialize(
                        [upstream, consumer],
                        selection=[consumer],
                        resources=res,
                        instance=instance,
                        run_config=QUIET,
                    )
                assert result.success and result.output_for_node("consumer") == rows.num_rows
                samples["inside"].append(inside("load_input"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return samples


# --------------------------------------------------------------------------- report


def paired(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> str:
    """The median over runs of ``a``'s time ÷ ``b``'s in the same run (wall, then CPU): the
    two ran back to back, so each ratio saw the same machine."""
    wall = statistics.median(x[0] / y[0] for x, y in zip(a, b, strict=True))
    cpu = statistics.median(x[1] / y[1] for x, y in zip(a, b, strict=True))
    return f"{wall:.2f}x / {cpu:.2f}x"


def row(label: str, direct_label: str, samples: Samples) -> str:
    t = {k: median(v) for k, v in samples.items()}
    d, m, i = t["direct"], t["materialize"], t["inside"]
    h = t.get("metadata")
    health = "—" if h is None else f"{h.wall_s:.3f} / {h.cpu_s:.3f}"
    return (
        f"| {label} | {direct_label} {d.wall_s:.2f} / {d.cpu_s:.2f} "
        f"| {i.wall_s:.2f} / {i.cpu_s:.2f} | {health} "
        f"| {paired(samples['inside'], samples['direct'])} "
        f"| {m.wall_s:.2f} / {m.cpu_s:.2f} "
        f"| {paired(samples['materialize'], samples['direct'])} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--other-partitions", type=int, default=1000)
    parser.add_argument("--only", default="", help="run the cases whose key contains this")
    args = parser.parse_args()
    rows = platform_rows(args.rows)
    frame = pandas_frame(rows)
    frame_schema = pa.Schema.from_pandas(frame, preserve_index=False)
    day = with_day(rows)
    cols = ", ".join(LOAD_COLUMNS)
    cases: list[tuple[str, str, str, Callable[[DagsterInstance], Samples]]] = [
        (
            "write arrow append",
            "write, pyarrow, append",
            "`Table.insert`",
            lambda i: bench_write(WriteCase(rows, rows.schema, "append"), args.runs, i),
        ),
        (
            "write arrow overwrite",
            "write, pyarrow, overwrite (the default mode)",
            "`Table.insert(overwrite=True)`",
            lambda i: bench_write(WriteCase(rows, rows.schema, "overwrite"), args.runs, i),
        ),
        (
            "write pandas overwrite",
            "write, pandas, overwrite",
            "`Table.insert(df, overwrite=True)`",
            lambda i: bench_write(WriteCase(frame, frame_schema, "overwrite"), args.runs, i),
        ),
        (
            "write arrow partition",
            f"write, pyarrow, overwrite of one daily partition (`ds` = {DAY}) of a table with "
            f"{args.other_partitions:,} other partitions",
            "`Table.insert(overwrite=True)`",
            lambda i: bench_write(
                WriteCase(day, day.schema, "overwrite", True, args.other_partitions), args.runs, i
            ),
        ),
        (
            "load arrow",
            "load, pyarrow, all columns",
            "`Table.scan().to_arrow()`",
            lambda i: bench_load(rows, "arrow", None, args.runs, i),
        ),
        (
            "load arrow columns",
            f"load, pyarrow, `columns` [{cols}]",
            "`Table.scan(columns).to_arrow()`",
            lambda i: bench_load(rows, "arrow", LOAD_COLUMNS, args.runs, i),
        ),
        (
            "load pandas",
            "load, pandas, all columns",
            "`Table.scan().to_pandas()`",
            lambda i: bench_load(rows, "pandas", None, args.runs, i),
        ),
    ]
    load0 = os.getloadavg()
    results: dict[str, Samples] = {}
    with instance_for_test() as instance:
        for key, _, _, run in cases:
            if args.only in key:
                results[key] = run(instance)
                print(key, json.dumps(results[key]), file=sys.stderr)
    load1 = os.getloadavg()
    OUT.mkdir(exist_ok=True)
    (OUT / "platform.json").write_text(json.dumps(results, indent=2))
    lines = [
        "## Dagster platform: the IO manager against the table API",
        "",
        f"{args.rows:,} rows × {rows.num_columns} columns (store_sales with a date, a timestamp, "
        "two strings and a boolean; pandas: amounts as float64), ZLIB, median of "
        f"{args.runs}; direct and IO-manager runs alternate. `handle_output` / `load_input` are "
        "the IO manager's calls timed inside the Dagster run (for a write: conversion, checks, "
        "the write and the materialization metadata, whose `table_health` — one listing per "
        "partition and the ORC footers — is also timed alone after the write); `materialize()` "
        "is the whole run on a "
        "temporary Dagster instance (event log, step, resources). Times are medians, wall / "
        "process CPU seconds; ratios are the median of each run's IO-manager time ÷ the direct "
        f"time of the same run, wall / CPU. Goal: the IO manager within {GOAL}x of the direct "
        f"call. 2 CPUs, load average {load0[0]:.1f} at start, {load1[0]:.1f} at end.",
        "",
        "| measure | direct, s | IO manager inside the run, s | of which the metadata "
        "(`table_health`), s | ÷ direct (goal ≤ 1.1x) | whole materialize(), s | ÷ direct |",
        "|---|---|---|---|---|---|---|",
        *(row(label, direct, results[key]) for key, label, direct, _ in cases if key in results),
        "",
    ]
    text = "\n".join(lines)
    (OUT / "platform.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
