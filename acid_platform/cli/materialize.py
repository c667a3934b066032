"""``acid platform materialize``: the example platform (:mod:`acid_platform.definitions`) end to
end, as ONE Dagster run of the ``acid_platform`` job over its days, then what happened: each
asset with its write ids and rows, each check, and the layout of one table partition.

The run goes to the Dagster instance of ``DAGSTER_HOME`` (so ``dagster dev`` on the same home
shows it), or to an ephemeral one when that is not set. Everything it prints goes to stdout;
Dagster's own log lines are kept to warnings and errors.
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import pyarrow as pa
import typer
from rich.markup import escape
from rich.rule import Rule

from acid_platform.cli.commands import app
from acid_platform.cli.output import layout_tree, out, print_table, user_errors
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from dagster import DagsterInstance, ExecuteInProcessResult

platform_app = typer.Typer(
    name="platform",
    help="The example Dagster platform (acid_platform/definitions.py).",
    no_args_is_help=True,
)
app.add_typer(platform_app)

#: The partition whose directories the summary shows: the day the restatement and the
#: right-to-be-forgotten DELETE wrote into after the overwrite.
SHOWN = ("retail.sales", "ds=2024-01-01")
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@platform_app.command("materialize")
def materialize_command(
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            "-w",
            envvar="ACID_WAREHOUSE",
            help="Warehouse (default: $DAGSTER_HOME/warehouse, else ./warehouse).",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            envvar="ACID_SPARK_MASTER",
            help="Spark for the Spark asset (default local[1]; 'none' leaves it out).",
        ),
    ] = None,
    start: Annotated[str | None, typer.Option("--from", help="First day (YYYY-MM-DD).")] = None,
    end: Annotated[str | None, typer.Option("--to", help="Last day (YYYY-MM-DD).")] = None,
) -> None:
    """Materialize the example platform in one run and print what happened."""
    from dagster import BetaWarning, DagsterInstance, PreviewWarning

    warnings.filterwarnings("ignore", category=BetaWarning)
    warnings.filterwarnings("ignore", category=PreviewWarning)
    from acid_platform.definitions import (
        NO_SPARK,
        PlatformSettings,
        materialize_platform,
        platform_definitions,
    )

    settings = PlatformSettings.from_env()
    settings = replace(settings, warehouse=warehouse or settings.warehouse)
    if spark_master:
        settings = replace(settings, spark_master=spark_master)
    elif shutil.which("java") is None:
        out.print("[yellow]no java on PATH: the Spark asset is left out[/]")
        settings = replace(settings, spark_master=NO_SPARK)
    home = os.environ.get("DAGSTER_HOME")
    out.print(Rule("acid platform materialize"))
    out.print(f"warehouse  {escape(settings.warehouse)}")
    out.print(
        f"dagster    {escape(home) if home else 'an ephemeral instance (DAGSTER_HOME unset)'}"
    )
    out.print(f"spark      {escape(settings.spark_master)}")
    with user_errors():
        definitions = platform_definitions(settings)
        with DagsterInstance.get() if home else DagsterInstance.ephemeral() as instance:
            began = time.monotonic()
            result = materialize_platform(
                definitions, instance, start=start, end=end, run_config=QUIET
            )
            took = time.monotonic() - began
            report(result, instance, took)
        if not result.success:
            raise typer.Exit(1)
        with Warehouse.open(settings.warehouse, settings.metastore_url, create=False) as wh:
            table, partition = SHOWN
            out.print(Rule(f"layout of {table} {partition}"))
            out.print(layout_tree(wh.table(table).location, partition))
    out.print(Rule("next"))
    out.print("the UI on this instance and warehouse:  bash scripts/platform dev  (dagster dev)")
    out.print(
        f"a query:  acid sql -w {escape(settings.warehouse)} -e 'SELECT * FROM mail.email_summary'"
    )


def report(result: ExecuteInProcessResult, instance: DagsterInstance, took: float) -> None:
    """The run, its assets and its checks."""
    state = "[green]SUCCESS[/]" if result.success else "[bold red]FAILURE[/]"
    out.print(f"run {result.run_id}: {state} in {took:.1f}s")
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error is not None:
            out.print(
                f"[red]{escape(event.step_key or '')}: {escape(event.step_failure_data.error.message)}[/]"
            )
    days = sorted({p for e in result.get_asset_materialization_events() if (p := e.partition)})
    if days:
        out.print(f"days {days[0]} to {days[-1]} (one Hive partition each, ds=…)")
    print_table(assets_table(result), title="assets (rows + inserted, ~ updated, - deleted)")
    print_table(checks_table(result), title="checks")


def assets_table(result: ExecuteInProcessResult) -> pa.Table:
    """One row per asset: operation, write ids, rows inserted (+), updated (~) and deleted (-),
    and the table's rows after it."""
    by_asset: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        key = mat.asset_key.to_user_string()
        by_asset[key].append({k: v.value for k, v in mat.metadata.items()})
    rows = []
    for key, metas in by_asset.items():
        meta = metas[-1]
        rows.append(
            {
                "asset": key,
                "op": str(meta.get("operation", "sql")),
                "write id": ",".join(str(v) for k, v in meta.items() if k.endswith("write_id")),
                "+ ~ -": " ".join(
                    f"{sign}{total(meta, f'rows_{what}')}"
                    for sign, what in (("+", "inserted"), ("~", "updated"), ("-", "deleted"))
                ),
                "rows": meta.get("dagster/row_count"),
            }
        )
    return pa.Table.from_pylist(rows)


def total(meta: dict[str, Any], suffix: str) -> int:
    return sum(v for k, v in meta.items() if k.endswith(suffix) and isinstance(v, int))


def checks_table(result: ExecuteInProcessResult) -> pa.Table:
    """One row per asset: checks passed, and those that did not with their severity."""
    passed: dict[str, int] = defaultdict(int)
    failed: dict[str, list[str]] = defaultdict(list)
    for check in result.get_asset_check_evaluations():
        key = check.asset_key.to_user_string()
        if check.passed:
            passed[key] += 1
        else:
            failed[key].append(f"{check.check_name} ({check.severity.value})")
    return pa.Table.from_pylist(
        [
            {
                "asset": key,
                "passed": passed[key],
                "not passed": ", ".join(failed[key]) or "-",
            }
            for key in sorted(set(passed) | set(failed))
        ]
    )


__all__ = ["assets_table", "checks_table", "materialize_command", "platform_app"]
