"""``acid platform materialize``: a platform project's main job end to end, as ONE Dagster run
over its days, then what happened: each asset with its write ids and rows, each check, and
(``--layout``) the directories of one table partition.

The project is the one in the current directory (``[tool.dg.project]`` or ``[tool.dagster]``
in its ``pyproject.toml``; ``--module`` names another code location), so it is the example
platform in this repository and your own in a project ``acid new`` made. The job is ``--job``
(default ``acid_platform`` when the project has one, else all its assets); assets of kind
``spark`` are left out when there is no ``java`` or ``ACID_SPARK_MASTER`` is ``none``.

The run goes to the Dagster instance of ``DAGSTER_HOME`` (so ``dagster dev`` on the same home
shows it), or to an ephemeral one when that is not set. Everything it prints goes to stdout;
Dagster's own log lines are kept to warnings and errors.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import time
import tomllib
import warnings
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import pyarrow as pa
import typer
from rich.markup import escape
from rich.rule import Rule

from acid_platform.cli.commands import app
from acid_platform.cli.output import layout_tree, out, print_table, user_errors
from acid_platform.runtime import require
from acid_platform.warehouse import Warehouse

if TYPE_CHECKING:
    from dagster import DagsterInstance, Definitions, ExecuteInProcessResult, JobDefinition

platform_app = typer.Typer(
    name="platform",
    help="Run a platform project's main Dagster job (the current directory's project).",
    no_args_is_help=True,
)
app.add_typer(platform_app)

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
#: The main job's name in a project that has one (the example's).
MAIN_JOB = "acid_platform"
#: Dagster's tags of a run over a range of partitions (a single-run backfill).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
NO_SPARK = "none"


def project_module(root: Path) -> str:
    """The code location module of the project in ``root``: ``[tool.dg.project]``'s
    ``code_location_target_module`` (or ``<root_module>.definitions``), else
    ``[tool.dagster]``'s ``module_name``."""
    path = root / "pyproject.toml"
    if not path.is_file():
        raise typer.BadParameter(f"no pyproject.toml in {root}: run it in a platform project")
    tool = tomllib.loads(path.read_text()).get("tool", {})
    project = tool.get("dg", {}).get("project", {})
    if project.get("code_location_target_module"):
        return str(project["code_location_target_module"])
    if project.get("root_module"):
        return f"{project['root_module']}.definitions"
    if tool.get("dagster", {}).get("module_name"):
        return str(tool["dagster"]["module_name"])
    raise typer.BadParameter(f"{path} names no Dagster code location ([tool.dg] or [tool.dagster])")


def load_definitions(module_name: str, root: Path) -> Definitions:
    """The ``Definitions`` of ``module_name``, importable from ``root`` (or its ``src``)."""
    from dagster import Definitions

    for where in (root / "src", root):
        if where.is_dir() and str(where) not in sys.path:
            sys.path.insert(0, str(where))
    module = importlib.import_module(module_name)
    found = [v for v in vars(module).values() if isinstance(v, Definitions)]
    lazy = [v for v in vars(module).values() if type(v).__name__ == "LazyDefinitions"]
    if found:
        return found[0]
    if lazy:
        return lazy[0]()
    raise typer.BadParameter(f"module {module_name} holds no Definitions")


def run_tags(job: JobDefinition) -> dict[str, str]:
    """ONE run over every partition of the job's (time-window) partitions."""
    partitions = job.partitions_def
    if partitions is None:
        return {}
    keys = partitions.get_partition_keys()
    return {RANGE_START: keys[0], RANGE_END: keys[-1]} if keys else {}


def materialize_job(
    definitions: Definitions,
    instance: DagsterInstance,
    *,
    job_name: str | None = None,
    without_kinds: frozenset[str] = frozenset(),
    run_config: dict[str, Any] | None = None,
    start: str | None = None,
    end: str | None = None,
) -> ExecuteInProcessResult:
    """Run ``job_name`` (default: :data:`MAIN_JOB`, else every asset) in this process, one run
    over its days ``start`` to ``end``, leaving out assets of ``without_kinds`` (a failure is
    in the result, not raised)."""
    names = {j.name for j in definitions.jobs or () if hasattr(j, "name")}
    name = job_name or (MAIN_JOB if MAIN_JOB in names else None)
    job = (
        definitions.resolve_job_def(name)
        if name
        else definitions.resolve_implicit_global_asset_job_def()
    )
    selection = None
    if without_kinds:
        specs = definitions.resolve_all_asset_specs()
        keys = {k for k in job.asset_layer.selected_asset_keys}
        selection = [s.key for s in specs if s.key in keys and not (s.kinds & without_kinds)]
    tags = run_tags(job)
    if tags and start:
        tags[RANGE_START] = start
    if tags and end:
        tags[RANGE_END] = end
    return job.execute_in_process(
        run_config=run_config,
        instance=instance,
        tags=tags,
        asset_selection=selection,
        raise_on_error=False,
    )


@platform_app.command("materialize")
def materialize_command(
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            "-w",
            help="Warehouse (sets ACID_WAREHOUSE, which the warehouse component reads).",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            envvar="ACID_SPARK_MASTER",
            help="Spark for the Spark assets (default: the project's; 'none' leaves them out).",
        ),
    ] = None,
    job: Annotated[
        str | None, typer.Option("--job", help=f"The job (default: {MAIN_JOB}, else all).")
    ] = None,
    module: Annotated[
        str | None, typer.Option("--module", "-m", help="The code location module.")
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option("--layout", help="Show this partition's directories: db.table:part=value."),
    ] = None,
    start: Annotated[str | None, typer.Option("--from", help="First day (YYYY-MM-DD).")] = None,
    end: Annotated[str | None, typer.Option("--to", help="Last day (YYYY-MM-DD).")] = None,
) -> None:
    """Materialize the project's main job in one run and print what happened."""
    with user_errors():
        require("dagster", "dagster", "acid platform materialize")
    from dagster import BetaWarning, DagsterInstance, PreviewWarning

    warnings.filterwarnings("ignore", category=BetaWarning)
    warnings.filterwarnings("ignore", category=PreviewWarning)
    # This process is the user's command: the settings it is given go where the project's
    # components read them.
    if warehouse:
        os.environ["ACID_WAREHOUSE"] = warehouse
    if spark_master:
        os.environ["ACID_SPARK_MASTER"] = spark_master
    without: frozenset[str] = frozenset()
    if (spark_master or "").lower() == NO_SPARK:
        without = frozenset({"spark"})
    elif shutil.which("java") is None:
        out.print("[yellow]no java on PATH: the Spark assets are left out[/]")
        without = frozenset({"spark"})
    root = Path.cwd()
    home = os.environ.get("DAGSTER_HOME")
    with user_errors():
        definitions = load_definitions(module or project_module(root), root)
        acid = (definitions.resources or {}).get("acid_warehouse")
        where = resolved(getattr(acid, "warehouse", None))
        out.print(Rule("acid platform materialize"))
        out.print(f"warehouse  {escape(str(where))}")
        out.print(
            f"dagster    {escape(home) if home else 'an ephemeral instance (DAGSTER_HOME unset)'}"
        )
        out.print(f"spark      {'left out' if without else escape(spark_master or 'the project')}")
        with DagsterInstance.get() if home else DagsterInstance.ephemeral() as instance:
            began = time.monotonic()
            result = materialize_job(
                definitions,
                instance,
                job_name=job,
                without_kinds=without,
                run_config=QUIET,
                start=start,
                end=end,
            )
            took = time.monotonic() - began
            report(result, instance, took)
        if not result.success:
            raise typer.Exit(1)
        if layout and where:
            table, _, partition = layout.partition(":")
            metastore = resolved(getattr(acid, "metastore_url", None))
            with Warehouse.open(str(where), metastore, create=False) as wh:
                out.print(Rule(f"layout of {table} {partition}"))
                out.print(layout_tree(wh.table(table).location, partition))
    out.print(Rule("next"))
    out.print("the UI on this instance and warehouse:  dg dev  (or bash scripts/platform dev)")
    if where:
        out.print(f"a query:  acid sql -w {escape(str(where))} -e 'SHOW TABLES'")


def resolved(value: Any) -> Any:
    """A resource setting's value: an ``EnvVar``'s from the environment."""
    from dagster import EnvVar

    return value.get_value() if isinstance(value, EnvVar) else value


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


__all__ = [
    "assets_table",
    "checks_table",
    "load_definitions",
    "materialize_command",
    "materialize_job",
    "platform_app",
    "project_module",
    "run_tags",
]
