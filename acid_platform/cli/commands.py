"""The ``acid`` commands (typer): ``sql``, ``show``, ``compact``, ``clean``, ``initiate``,
``worker``, ``init`` and ``demo``. Printing lives in :mod:`.output`, the demo in :mod:`.demo`."""

from __future__ import annotations

import enum
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from acid_platform.cli.demo import run_demo
from acid_platform.cli.options import (
    FormatOption,
    MetastoreOption,
    WarehouseOption,
    open_warehouse,
)
from acid_platform.cli.output import OutputFormat, err, print_result, user_errors
from acid_platform.table.catalog_ops import warehouse_exists

app = typer.Typer(
    name="acid",
    help="Hive ACID v2 transactional tables: HiveQL, transactions, compaction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class ShowWhat(enum.StrEnum):
    """What ``acid show`` lists."""

    transactions = "transactions"
    locks = "locks"
    compactions = "compactions"


@app.command("sql")
def sql_command(
    warehouse: WarehouseOption,
    execute: Annotated[
        str | None, typer.Option("--execute", "-e", help="Statement(s) to run.")
    ] = None,
    file: Annotated[
        str | None, typer.Option("--file", "-f", help="Script to run ('-' reads stdin).")
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
    database: Annotated[
        str | None, typer.Option("--database", "-d", help="Run USE DATABASE first.")
    ] = None,
) -> None:
    """Run HiveQL statements (one, or a script) on a warehouse."""
    if (execute is None) == (file is None):
        raise typer.BadParameter("give exactly one of --execute/-e and --file/-f")
    text = execute if execute is not None else _read_script(file or "-")
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        session = wh.sql_session
        if database:
            session.execute(f"USE `{database}`")
        session.execute_script(text, on_result=lambda r: print_result(r, output), stream=True)
        if wh.in_transaction:
            err.print("[yellow]note:[/] the script left a transaction open; it was rolled back")


@app.command("show")
def show_command(
    what: Annotated[ShowWhat, typer.Argument(help="transactions, locks or compactions")],
    warehouse: WarehouseOption,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """SHOW TRANSACTIONS / LOCKS / COMPACTIONS of a warehouse's metastore."""
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        wh.sql_session.execute_script(
            f"SHOW {what.value.upper()}", on_result=lambda r: print_result(r, output)
        )


@app.command("compact")
def compact_command(
    table: Annotated[str, typer.Argument(help="Table name (db.table).")],
    warehouse: WarehouseOption,
    major: Annotated[
        bool, typer.Option("--major/--minor", help="Major (base) or minor (delta) compaction.")
    ] = False,
    partition: Annotated[
        str | None,
        typer.Option("--partition", "-p", help="Partition spec, e.g. \"ds='2024-01-01'\"."),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait for the compaction to finish.")
    ] = False,
    metastore_url: MetastoreOption = None,
) -> None:
    """ALTER TABLE … COMPACT 'minor'|'major' [AND WAIT]."""
    spec = f" PARTITION ({partition})" if partition else ""
    statement = f"ALTER TABLE {table}{spec} COMPACT '{'major' if major else 'minor'}'{' AND WAIT' if wait else ''}"
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        wh.sql_session.execute_script(
            statement, on_result=lambda r: print_result(r, OutputFormat.table)
        )


@app.command("clean")
def clean_command(warehouse: WarehouseOption, metastore_url: MetastoreOption = None) -> None:
    """Run the cleaner: delete directories no snapshot can still read."""
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        report = wh.clean()
        for entry in report.entries:
            where = f"{entry.db}.{entry.table}" + (f" {entry.partition}" if entry.partition else "")
            state = "cleaned" if entry.cleaned else "not cleaned yet"
            err.print(
                f"[green]OK[/] compaction {entry.id} of {escape(where)}: {state}, "
                f"{escape(entry.message or f'removed {len(entry.removed)} path(s)')}"
            )
            for path in entry.removed:
                err.print(f"   [dim]removed {escape(path)}[/]")
        for path in report.aborted_removed:
            err.print(f"[green]OK[/] removed aborted {escape(path)}")
        if not report.entries and not report.aborted_removed:
            err.print("[green]OK[/] nothing to clean")


@app.command("initiate")
def initiate_command(warehouse: WarehouseOption, metastore_url: MetastoreOption = None) -> None:
    """One pass of the compaction initiator: queue what Hive's thresholds say needs compacting."""
    from acid_platform.compaction import run_initiator

    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        decisions = run_initiator(wh)
        for d in decisions:
            where = f"{d.db}.{d.table}" + (f" {d.partition}" if d.partition else "")
            if d.type is not None and d.cq_id is not None:
                what = f"queued {d.type} compaction {d.cq_id}"
            else:
                what = "nothing queued"
            err.print(f"[green]OK[/] {escape(where)}: {what} ({escape(d.reason)})")
        if not decisions:
            err.print("[green]OK[/] no table has new write activity")


@app.command("worker")
def worker_command(
    warehouse: WarehouseOption,
    max_entries: Annotated[
        int | None, typer.Option("--max", help="Stop after this many entries.")
    ] = None,
    metastore_url: MetastoreOption = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            envvar="ACID_SPARK_MASTER",
            help="Start a SparkSession on this master (spark://host:port, local[N], …) and "
            "rewrite large partitions on it.",
        ),
    ] = None,
    large_partition_bytes: Annotated[
        int | None,
        typer.Option(
            "--large-partition-bytes",
            min=0,
            help="With --spark-master: partitions above this size go to Spark "
            "(default: acid.compactor.large.partition.bytes, 1 GiB).",
        ),
    ] = None,
) -> None:
    """Run the compaction worker over the queued entries (embedded; large partitions on Spark
    with --spark-master)."""
    from acid_platform.compaction import run_worker

    with (
        user_errors(),
        open_warehouse(warehouse, metastore_url) as wh,
        _spark(spark_master) as spark,
    ):
        executor = None
        if spark is not None:
            from acid_platform.engines.spark.compaction import compaction_router

            executor = compaction_router(spark, wh.conf, threshold_bytes=large_partition_bytes)
        result = run_worker(wh, max_entries=max_entries, executor=executor)
        err.print(f"[green]OK[/] {len(result)} compaction(s)")
        for o in result:
            where = f"{o.db}.{o.table}" + (f"/{o.partition}" if o.partition else "")
            ran = f" on {o.executor}" if o.executor else ""
            err.print(escape(f"  {o.id} {where} {o.type}: {o.state.value}{ran}; {o.message}"))


@app.command("init")
def init_command(
    path: Annotated[str, typer.Argument(help="Directory (or URI) of the new warehouse.")],
    metastore_url: MetastoreOption = None,
) -> None:
    """Create a warehouse at PATH (its metastore: SQLite in PATH unless --metastore-url);
    nothing to do when one is there already."""
    with user_errors():
        if warehouse_exists(path, metastore_url):
            err.print(f"[green]OK[/] a warehouse already exists at {escape(path)}")
            return
        with open_warehouse(path, metastore_url, create=True) as wh:
            where = wh.root
        err.print(f"[green]OK[/] warehouse created at {escape(where)}")


@app.command("demo")
def demo_command(
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse", "-w", help="Warehouse to use (default: a new temporary directory)."
        ),
    ] = None,
    metastore_url: MetastoreOption = None,
) -> None:
    """The seed example end to end: CREATE, INSERT, UPDATE, MERGE; layout and two snapshots."""
    path = warehouse or tempfile.mkdtemp(prefix="acid-demo-")
    with user_errors():
        run_demo(path, metastore_url)


def main() -> None:
    """Console-script entry point (``acid``)."""
    app()


# --------------------------------------------------------------------------- helpers
@contextmanager
def _spark(master: str | None) -> Iterator[Any]:
    """A SparkSession on ``master`` for this command (``None``: no Spark); stopped at the end
    unless it was already running in this process."""
    if master is None:
        yield None
        return
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    running = SparkSession.getActiveSession()
    builder = SparkSession.builder.master(master).appName("acid compaction worker")
    spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    try:
        yield spark
    finally:
        if running is None:
            spark.stop()


def _read_script(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {file}: {exc.strerror}") from None


__all__ = ["app", "main"]
