"""``acid platform materialize``: a platform project's main job end to end, as ONE Dagster run
over its days, then what happened: each asset with its write ids and rows, each check, and
(``--layout``) the directories of one table partition.

The project is the one in the current directory: the code locations its ``workspace.yaml``
names (:mod:`.workspace`: what ``dagster dev -w workspace.yaml`` and ``bash scripts/platform
dev`` serve; ``--location`` picks one of several), else the one of its ``pyproject.toml``
(``[tool.dg.project]`` or ``[tool.dagster]``); ``--module`` names another. So it is the example
platform in this repository, and your own once your module is named there (or in a project
``acid new`` made). The job is ``--job``, else each location's ``acid_platform`` job when it has
one, else all its assets — several locations' in ONE run; assets of kind ``spark`` are left out
when there is no ``java`` or ``ACID_SPARK_MASTER`` is ``none``.

The run goes to the Dagster instance of ``DAGSTER_HOME`` (so ``dagster dev`` on the same home
shows it), or to an ephemeral one when that is not set. Everything it prints goes to stdout: a
line as each step starts and ends (:mod:`.progress`), then the summary. The process's standard
error — Dagster's log lines and the JVM's of a local Spark session (``WARN Utils: …``) — goes
to a log file while the run runs (``$DAGSTER_HOME/logs/materialize-<run id>.log``), which the
summary names. The closing hints — the UI on the same instance (``dagster dev -w workspace.yaml``
for a workspace's locations) and a query of a table the run wrote — name ``acid`` and
``dagster`` by their full path when a new shell would not find them, one line each, never
wrapped (a pipe gets whole command lines).
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import sys
import tempfile
import time
import tomllib
import uuid
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from acid_platform.cli.commands import app
from acid_platform.runtime import require

if TYPE_CHECKING:  # the command imports them when it runs (acid --help stays light)
    import pyarrow as pa
    from dagster import (
        AssetKey,
        DagsterInstance,
        Definitions,
        EventLogEntry,
        ExecuteInProcessResult,
        JobDefinition,
    )

platform_app = typer.Typer(
    name="platform",
    help="Run a platform project's main Dagster job (the current directory's project).",
    short_help="Run the current directory's platform project's main Dagster job.",
    no_args_is_help=True,
    rich_markup_mode=None,
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


@dataclass(frozen=True)
class MainJob:
    """What ``acid platform materialize`` runs: ``definitions``' job ``job_name`` (``None``:
    :data:`MAIN_JOB` when they have it, else every asset), of it the assets ``asset_keys``
    (``None``: all), where the definitions came from (``source``, for the header) and the
    command that serves them in the UI (``serve``: a program and its arguments)."""

    definitions: Definitions
    job_name: str | None
    asset_keys: list[AssetKey] | None
    source: str
    serve: tuple[str, ...] = ("dg", "dev")


def main_job(
    root: Path, *, module: str | None = None, location: str | None = None, job: str | None = None
) -> MainJob:
    """The main job of the project in ``root``: of ``module`` when given, else of the code
    locations its ``workspace.yaml`` names (``location``: only that one), else of the module
    its ``pyproject.toml`` names. Several locations run together: their definitions merged,
    each location's :data:`MAIN_JOB` assets when it has that job, else all its assets."""
    from dagster import DagsterInvalidDefinitionError, Definitions

    from acid_platform.cli.workspace import (
        WORKSPACE_FILE,
        WorkspaceError,
        load_location,
        workspace_locations,
    )

    workspace = root / WORKSPACE_FILE
    if module:
        src = ("-d", "src") if (root / "src").is_dir() else ()
        serve = ("dagster", "dev", "-m", module, *src)
        return MainJob(load_definitions(module, root), job, None, module, serve)
    if not workspace.is_file():
        name = project_module(root)
        return MainJob(load_definitions(name, root), job, None, f"{name} (pyproject.toml)")
    try:
        locations = workspace_locations(workspace)
        if location:
            chosen = [loc for loc in locations if loc.name == location]
            if not chosen:
                names = ", ".join(loc.name for loc in locations)
                raise WorkspaceError(
                    f"{workspace} names no code location {location} (it names {names})"
                )
            locations = chosen
        loaded = [load_location(loc) for loc in locations]
    except WorkspaceError as exc:
        raise typer.BadParameter(str(exc)) from None
    named = ", ".join(f"{loc.target} (location {loc.name})" for loc in locations)
    source = f"{named}, from {WORKSPACE_FILE}"
    serve = ("dagster", "dev", "-w", WORKSPACE_FILE)
    if len(loaded) == 1:
        return MainJob(loaded[0], job, None, source, serve)
    try:
        merged = Definitions.merge(*loaded)
    except DagsterInvalidDefinitionError as exc:
        raise typer.BadParameter(
            f"the code locations of {workspace} do not run together ({exc}): pick one with "
            "--location NAME"
        ) from None
    keys = None if job else [k for defs in loaded for k in main_keys(defs)]
    return MainJob(merged, job, keys, source, serve)


def job_names(definitions: Definitions) -> set[str]:
    return {j.name for j in definitions.jobs or () if hasattr(j, "name")}


def main_keys(definitions: Definitions) -> list[AssetKey]:
    """The assets of ``definitions``' :data:`MAIN_JOB`, else all of them."""
    job = (
        definitions.resolve_job_def(MAIN_JOB)
        if MAIN_JOB in job_names(definitions)
        else definitions.resolve_implicit_global_asset_job_def()
    )
    return sorted(job.asset_layer.selected_asset_keys)


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
    asset_keys: Sequence[AssetKey] | None = None,
    without_kinds: frozenset[str] = frozenset(),
    run_config: dict[str, Any] | None = None,
    start: str | None = None,
    end: str | None = None,
    run_id: str | None = None,
    on_event: Callable[[EventLogEntry], None] | None = None,
) -> ExecuteInProcessResult:
    """Run ``job_name`` (default: :data:`MAIN_JOB`, else every asset; with ``asset_keys``,
    those of it) in this process, one run over its days ``start`` to ``end``, leaving out
    assets of ``without_kinds`` (a failure is in the result, not raised). ``on_event`` hears
    each of the run's events as it happens (the run is ``run_id``, default a new one)."""
    name = job_name or (
        MAIN_JOB if MAIN_JOB in job_names(definitions) and asset_keys is None else None
    )
    job = (
        definitions.resolve_job_def(name)
        if name
        else definitions.resolve_implicit_global_asset_job_def()
    )
    selection = None
    if without_kinds or asset_keys is not None:
        specs = definitions.resolve_all_asset_specs()
        keys = set(job.asset_layer.selected_asset_keys)
        if asset_keys is not None:
            keys &= set(asset_keys)
        selection = [s.key for s in specs if s.key in keys and not (s.kinds & without_kinds)]
    tags = run_tags(job)
    if tags and start:
        tags[RANGE_START] = start
    if tags and end:
        tags[RANGE_END] = end
    run_id = run_id or str(uuid.uuid4())
    if on_event is not None:
        instance.add_event_listener(run_id, on_event)
    return job.execute_in_process(
        run_config=run_config,
        instance=instance,
        tags=tags,
        asset_selection=selection,
        raise_on_error=False,
        run_id=run_id,
    )


@platform_app.command(
    "materialize", short_help="Materialize the main job in one run; print what happened."
)
def materialize_command(
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            "-w",
            metavar="PATH",
            help="Warehouse (sets ACID_WAREHOUSE, which the warehouse component reads).",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            envvar="ACID_SPARK_MASTER",
            metavar="URL",
            help="Spark for the Spark assets (default: the project's; 'none' leaves them out).",
        ),
    ] = None,
    job: Annotated[
        str | None,
        typer.Option("--job", metavar="NAME", help=f"The job (default: {MAIN_JOB}, else all)."),
    ] = None,
    module: Annotated[
        str | None,
        typer.Option(
            "--module",
            "-m",
            metavar="MODULE",
            help="The code location module (default: those workspace.yaml names).",
        ),
    ] = None,
    location: Annotated[
        str | None,
        typer.Option(
            "--location",
            metavar="NAME",
            help="Only this code location of workspace.yaml (default: all it names).",
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            metavar="TABLE:PARTITION",
            help="Show this partition's directories: db.table:part=value.",
        ),
    ] = None,
    start: Annotated[
        str | None, typer.Option("--from", metavar="DAY", help="First day (YYYY-MM-DD).")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--to", metavar="DAY", help="Last day (YYYY-MM-DD).")
    ] = None,
) -> None:
    """Materialize the project's main job in one run and print what happened."""
    from rich.markup import escape
    from rich.rule import Rule

    from acid_platform.cli.output import layout_tree, out, user_errors
    from acid_platform.cli.progress import StepLines, stderr_to, steps_of
    from acid_platform.warehouse import Warehouse

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
        target = main_job(root, module=module, location=location, job=job)
        definitions = target.definitions
        acid = (definitions.resources or {}).get("acid_warehouse")
        where = resolved(getattr(acid, "warehouse", None))
        run_id = str(uuid.uuid4())
        log = log_path(home, run_id)
        out.print(Rule("acid platform materialize"))
        out.print(f"code       {escape(target.source)}", soft_wrap=True)
        out.print(f"warehouse  {escape(str(where))}", soft_wrap=True)
        out.print(
            f"dagster    {escape(home) if home else 'an ephemeral instance (DAGSTER_HOME unset)'}",
            soft_wrap=True,
        )
        out.print(f"spark      {'left out' if without else escape(spark_master or 'the project')}")
        out.print(
            f"log        {escape(str(log))}  (Spark's and Dagster's log lines)", soft_wrap=True
        )
        out.print(Rule(f"run {run_id}"))
        with DagsterInstance.get() if home else DagsterInstance.ephemeral() as instance:
            began = time.monotonic()
            with stderr_to(log):  # the JVM's and Dagster's lines: the console shows the steps
                result = materialize_job(
                    definitions,
                    instance,
                    job_name=target.job_name,
                    asset_keys=target.asset_keys,
                    without_kinds=without,
                    run_config=QUIET,
                    start=start,
                    end=end,
                    run_id=run_id,
                    on_event=StepLines(out, steps_of(definitions)),
                )
            took = time.monotonic() - began
            report(result, instance, took)
            out.print(
                f"[dim]Spark's and Dagster's log lines: {escape(str(log))}[/]", soft_wrap=True
            )
        if not result.success:
            raise typer.Exit(1)
        if layout and where:
            table, _, partition = layout.partition(":")
            metastore = resolved(getattr(acid, "metastore_url", None))
            with Warehouse.open(str(where), metastore, create=False) as wh:
                out.print(Rule(f"layout of {table} {partition}"))
                out.print(layout_tree(wh.table(table).location, partition))
    out.print(Rule("next"))  # each hint one line, never wrapped: a command to copy whole
    for line in next_commands(root, home, where, last_table(result), target.serve):
        out.print(escape(line), soft_wrap=True)


def log_path(home: str | None, run_id: str) -> Path:
    """Where a run's standard error goes: ``$DAGSTER_HOME/logs/``, else the temporary
    directory."""
    if home:
        return Path(home) / "logs" / f"materialize-{run_id}.log"
    return Path(tempfile.gettempdir()) / f"acid-platform-materialize-{run_id}.log"


def last_table(result: ExecuteInProcessResult) -> str | None:
    """The table the run's last materialization wrote (``dagster/table_name``), if any."""
    for event in reversed(result.get_asset_materialization_events()):
        name = event.materialization.metadata.get("dagster/table_name")
        if name is not None and isinstance(name.value, str):
            return name.value
    return None


def next_commands(
    root: Path,
    home: str | None,
    warehouse: Any,
    table: str | None = None,
    serve: Sequence[str] = ("dg", "dev"),
) -> list[str]:
    """The closing hints: the UI (``serve``) on this run's instance and warehouse, and a query
    of ``table`` (else of the databases), as command lines that run in a new shell (``acid``,
    ``dagster`` and ``dg`` by their full path when its PATH would not find them; the settings
    this run had as variables)."""
    from acid_platform.cli.output import shell_command

    settings = [
        f"{name}={shlex.quote(value)}"
        for name in ("DAGSTER_HOME", "ACID_WAREHOUSE")
        if (value := os.environ.get(name))
    ]
    program, *arguments = serve
    command = [shell_command(program), *map(shlex.quote, arguments)]
    ui = " ".join(["cd", shlex.quote(str(root)), "&&", *settings, *command])
    lines = ["the UI on this instance and warehouse:", f"  {ui}"]
    script = root / "scripts" / "platform"  # this repository's: its home is ./.dagster
    same_home = home is not None and Path(home).resolve() == (root / ".dagster").resolve()
    if script.is_file() and same_home and not os.environ.get("ACID_WAREHOUSE"):
        lines.append(f"  (or: bash {shlex.quote(str(script))} dev)")
    if warehouse:
        acid = shell_command("acid", "acid_platform.cli")
        sql = f"SELECT * FROM {table} LIMIT 10" if table else "SHOW DATABASES"
        query = f"{acid} sql -w {shlex.quote(str(warehouse))} -e {shlex.quote(sql)}"
        lines += ["a query of the warehouse:", f"  {query}"]
    return lines


def resolved(value: Any) -> Any:
    """A resource setting's value: an ``EnvVar``'s from the environment."""
    from dagster import EnvVar

    return value.get_value() if isinstance(value, EnvVar) else value


def report(result: ExecuteInProcessResult, instance: DagsterInstance, took: float) -> None:
    """The run, its assets and its checks."""
    from rich.markup import escape

    from acid_platform.cli.output import out, print_table

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
    import pyarrow as pa

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
    import pyarrow as pa

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
    "MainJob",
    "assets_table",
    "checks_table",
    "load_definitions",
    "materialize_command",
    "main_job",
    "materialize_job",
    "last_table",
    "next_commands",
    "platform_app",
    "project_module",
    "run_tags",
]
