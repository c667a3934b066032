"""The maintenance commands: ``acid initiate``, ``worker``, ``clean``, ``housekeep`` (one pass
each), ``acid fsck`` (files against what their commits recorded; ``--repair``) and
``acid services`` (all four, until SIGTERM or Ctrl-C), for warehouses run without
Dagster. Hive's settings (``hive.compactor.*``, ``hive.txn.timeout``) are given with
``--conf KEY=VALUE``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from acid_platform.cli.commands import app
from acid_platform.cli.options import MetastoreOption, WarehouseOption, open_warehouse

if TYPE_CHECKING:  # imported by the commands' bodies, when they run (acid --help stays light)
    from acid_platform.compaction import ServiceConf
    from acid_platform.warehouse import Warehouse

SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        "--spark-master",
        envvar="ACID_SPARK_MASTER",
        metavar="URL",
        help="Start a SparkSession on this master (spark://host:port, local[N], …) and "
        "rewrite large partitions on it.",
    ),
]
LargePartitionOption = Annotated[
    int | None,
    typer.Option(
        "--large-partition-bytes",
        min=0,
        metavar="BYTES",
        help="With --spark-master: partitions above this size go to Spark "
        "(default: acid.compactor.large.partition.bytes, 1 GiB).",
    ),
]
ConfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--conf",
        "-c",
        metavar="KEY=VALUE",
        help="A Hive setting KEY=VALUE (hive.txn.timeout, hive.compactor.check.interval, "
        "hive.compactor.worker.threads, hive.compactor.initiator.on, hive.compactor.*); repeat.",
    ),
]


@app.command("initiate", short_help="Queue what needs compacting (one initiator pass).")
def initiate_command(warehouse: WarehouseOption, metastore_url: MetastoreOption = None) -> None:
    """One pass of the compaction initiator: queue what Hive's thresholds say needs compacting."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
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


@app.command("worker", short_help="Compact the queued entries.")
def worker_command(
    warehouse: WarehouseOption,
    max_entries: Annotated[
        int | None, typer.Option("--max", metavar="N", help="Stop after this many entries.")
    ] = None,
    metastore_url: MetastoreOption = None,
    spark_master: SparkMasterOption = None,
    large_partition_bytes: LargePartitionOption = None,
) -> None:
    """Run the compaction worker over the queued entries (embedded; large partitions on Spark
    with --spark-master)."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.compaction import run_worker

    with (
        user_errors(),
        open_warehouse(warehouse, metastore_url) as wh,
        _spark(spark_master) as spark,
    ):
        executor = _executor(wh, spark, large_partition_bytes)
        result = run_worker(wh, max_entries=max_entries, executor=executor)
        err.print(f"[green]OK[/] {len(result)} compaction(s)")
        for o in result:
            where = f"{o.db}.{o.table}" + (f"/{o.partition}" if o.partition else "")
            ran = f" on {o.executor}" if o.executor else ""
            err.print(escape(f"  {o.id} {where} {o.type}: {o.state.value}{ran}; {o.message}"))


@app.command("clean", short_help="Delete directories no snapshot can still read.")
def clean_command(warehouse: WarehouseOption, metastore_url: MetastoreOption = None) -> None:
    """Run the cleaner: delete directories no snapshot can still read."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.compaction import run_cleaner

    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        report = run_cleaner(wh)
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


@app.command("fsck", short_help="Check tables' files against their commits.")
def fsck_command(
    warehouse: WarehouseOption,
    tables: Annotated[
        list[str] | None,
        typer.Argument(metavar="TABLE", help="Tables (db.table) to check; default: every table."),
    ] = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Move stray and resized files into <table>/_fsck_quarantine/ and forget the "
            "record of missing ones (acknowledging the loss), so the table reads again.",
        ),
    ] = False,
    metastore_url: MetastoreOption = None,
) -> None:
    """Check each table's files against what its commits recorded (missing, stray or resized
    files); exit 1 when a problem is left."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.table.fsck import fsck_table

    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        names = tables or [f"{db}.{t}" for db in wh.list_databases() for t in wh.list_tables(db)]
        bad = 0
        for name in names:
            report = fsck_table(wh, name, repair=repair)
            for problem in report.problems:
                err.print(
                    f"[red]{problem.kind}[/] {escape(problem.path)}: {escape(problem.detail)}"
                )
            for done in report.repaired:
                err.print(f"   [yellow]repaired[/] {escape(done)}")
            if report.ok:
                fixed = f", {len(report.repaired)} repaired" if report.repaired else ""
                err.print(f"[green]OK[/] {escape(report.table)}{fixed}")
            else:
                bad += 1
                left = report.remaining if report.repaired else report.problems
                err.print(
                    f"[bold red]FAILED[/] {escape(report.table)}: {len(left)} problem(s)"
                    + ("" if repair else " (acid fsck --repair fixes them)")
                )
    if bad:
        raise typer.Exit(1)


@app.command("housekeep", short_help="Abort timed-out transactions, purge history.")
def housekeep_command(
    warehouse: WarehouseOption, metastore_url: MetastoreOption = None, conf: ConfOption = None
) -> None:
    """One housekeeping pass: abort transactions silent for hive.txn.timeout (their locks go
    with them), expire silent locks and reader leases, purge history."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.compaction import ServiceConf, run_housekeeping

    with user_errors():
        settings = ServiceConf.from_conf(_conf(conf))
        with open_warehouse(warehouse, metastore_url, txn_timeout_s=settings.txn_timeout_s) as wh:
            report = run_housekeeping(wh, settings.txn_timeout_s)
    if report.aborted_txns:
        err.print(
            f"[green]OK[/] aborted {len(report.aborted_txns)} timed-out transaction(s) "
            f"{list(report.aborted_txns)}; freed lock(s) {list(report.freed_locks)}"
        )
    else:
        err.print(f"[green]OK[/] no transaction silent for {settings.txn_timeout_s:g}s")
    purged = {k: v for k, v in report.purged.items() if v}
    if purged:
        err.print(f"[green]OK[/] purged {escape(str(purged))}")


@app.command("services", short_help="Run all the compaction services until stopped.")
def services_command(
    warehouse: WarehouseOption,
    metastore_url: MetastoreOption = None,
    conf: ConfOption = None,
    spark_master: SparkMasterOption = None,
    large_partition_bytes: LargePartitionOption = None,
) -> None:
    """Run the initiator, the compaction workers, the cleaner and the housekeeper until SIGTERM
    or Ctrl-C (each finishes the pass it is in; a second signal stops at once), on Hive's
    settings (--conf)."""
    import signal

    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.compaction import ServiceConf, Services

    with user_errors():
        settings = ServiceConf.from_conf(_conf(conf))
        with (
            open_warehouse(warehouse, metastore_url, txn_timeout_s=settings.txn_timeout_s) as wh,
            _spark(spark_master) as spark,
        ):
            wh.conf.update(_conf(conf))  # hive.compactor.* thresholds for the compactor
            services = Services(
                wh,
                settings,
                executor=_executor(wh, spark, large_partition_bytes),
                on_event=lambda line: err.print(escape(line)),
            )
            signals = (signal.SIGTERM, signal.SIGINT)

            def stop(*_: object) -> None:  # a second signal kills at once
                services.request_stop()
                for sig in signals:
                    signal.signal(sig, signal.SIG_DFL)

            previous = {sig: signal.signal(sig, stop) for sig in signals}
            try:
                services.start()
                err.print(escape(_started(settings, wh.root)))
                services.wait()
            finally:
                services.stop()
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
            c = services.counts
            err.print(
                f"[green]OK[/] services stopped: {c.compactions} compaction(s), "
                f"{c.removed_paths} path(s) cleaned, {c.aborted_txns} txn(s) reaped"
            )


# --------------------------------------------------------------------------- helpers
def _started(s: ServiceConf, root: str) -> str:
    initiator = f"initiator every {s.check_interval_s:g}s" if s.initiator_on else "no initiator"
    return (
        f"acid services on {root}: {initiator}, {s.worker_threads} worker(s), cleaner every "
        f"{s.cleaner_interval_s:g}s, housekeeper every {s.housekeeping_interval_s:g}s "
        f"(hive.txn.timeout {s.txn_timeout_s:g}s); SIGTERM or Ctrl-C stops"
    )


def _conf(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise typer.BadParameter(f"--conf wants KEY=VALUE, not {item!r}")
        out[key.strip()] = value.strip()
    return out


def _executor(wh: Warehouse, spark: Any, threshold: int | None) -> Any:
    if spark is None:
        return None
    from acid_platform.engines.spark.compaction import compaction_router

    return compaction_router(spark.get, wh.conf, threshold_bytes=threshold)


@contextmanager
def _spark(master: str | None) -> Iterator[Any]:
    """A :class:`~acid_platform.engines.spark.launch.LazySession` on ``master`` for this command
    (``None``: no Spark): the master is checked now (an unreachable one fails in seconds, in one
    line); Spark starts only when a partition needs it, logs to a file, and stops at the end."""
    if master is None:
        yield None
        return
    from acid_platform.engines.spark.launch import LazySession, check_master

    check_master(master)
    with LazySession(master, "acid compaction worker") as lazy:
        yield lazy


__all__ = [
    "clean_command",
    "housekeep_command",
    "initiate_command",
    "services_command",
    "worker_command",
]
