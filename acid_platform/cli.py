"""``acid``: the command line of acid_platform.

* ``acid sql -w WAREHOUSE -e "STATEMENT"`` (or ``-f script.sql``, ``-f -`` for stdin) runs HiveQL
  and prints query results as a table, or as ``--format json|csv``;
* ``acid show transactions|locks|compactions -w WAREHOUSE``;
* ``acid demo`` walks through the seed example (INSERT, UPDATE, MERGE) on a fresh warehouse and
  shows the directories written and the rows under two snapshots;
* ``acid compact`` / ``acid clean`` hand over to the warehouse's compactor and cleaner;
  ``acid worker`` works the compaction queue (``--spark-master URL``: large partitions on Spark).

Query rows go to stdout; status lines and notes to stderr. A user error (any
:class:`~acid_platform.errors.AcidError`) prints one red line (plus the quoted source line of a
syntax error) and exits with status 1; no traceback.
"""

from __future__ import annotations

import csv
import enum
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from acid_platform.errors import AcidError, SqlSyntaxError
from acid_platform.metastore.names import DEFAULT_DATABASE
from acid_platform.sql.display import hive_text, rows_as_json, rows_as_text
from acid_platform.sql.results import StatementResult

app = typer.Typer(
    name="acid",
    help="Hive ACID v2 transactional tables: HiveQL, transactions, compaction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class OutputFormat(enum.StrEnum):
    """How query results are printed."""

    table = "table"
    json = "json"
    csv = "csv"


class ShowWhat(enum.StrEnum):
    """What ``acid show`` lists."""

    transactions = "transactions"
    locks = "locks"
    compactions = "compactions"


WarehouseOption = Annotated[
    str,
    typer.Option("--warehouse", "-w", envvar="ACID_WAREHOUSE", help="Warehouse directory or URI."),
]
MetastoreOption = Annotated[
    str | None,
    typer.Option(
        "--metastore-url",
        envvar="ACID_METASTORE_URL",
        help="SQLAlchemy URL of the metastore (default: SQLite in the warehouse).",
    ),
]
FormatOption = Annotated[
    OutputFormat, typer.Option("--format", help="Output format of query results.")
]


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
    with _user_errors(), _open(warehouse, metastore_url) as wh:
        session = wh.sql_session
        if database:
            session.execute(f"USE `{database}`")
        session.execute_script(text, on_result=lambda r: _print_result(r, output))
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
    with _user_errors(), _open(warehouse, metastore_url) as wh:
        wh.sql_session.execute_script(
            f"SHOW {what.value.upper()}", on_result=lambda r: _print_result(r, output)
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
    with _user_errors(), _open(warehouse, metastore_url) as wh:
        wh.sql_session.execute_script(
            statement, on_result=lambda r: _print_result(r, OutputFormat.table)
        )


@app.command("clean")
def clean_command(warehouse: WarehouseOption, metastore_url: MetastoreOption = None) -> None:
    """Run the cleaner: delete directories no snapshot can still read."""
    with _user_errors(), _open(warehouse, metastore_url) as wh:
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

    with _user_errors(), _open(warehouse, metastore_url) as wh:
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

    with _user_errors(), _open(warehouse, metastore_url) as wh, _spark(spark_master) as spark:
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
    with _user_errors():
        run_demo(path, metastore_url)


def main() -> None:
    """Console-script entry point (``acid``)."""
    app()


# --------------------------------------------------------------------------- demo
DEMO_SETUP = """
CREATE TABLE employee (id int, name string, salary int)
STORED AS ORC TBLPROPERTIES ('transactional' = 'true');
INSERT INTO employee VALUES
(1, 'Jerry', 5000),
(2, 'Tom',   8000),
(3, 'Kate',  6000);
SELECT row__id, id, name, salary FROM employee;
"""
DEMO_CHANGES = """
UPDATE employee SET salary = 7000 WHERE id = 2;
CREATE TABLE employee_update (id int, name string, salary int);
INSERT INTO employee_update VALUES
(2, 'Tom',  7500),
(4, 'Mary', 9000);
MERGE INTO employee AS a
USING employee_update AS b ON a.id = b.id
WHEN MATCHED THEN UPDATE SET salary = b.salary
WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, b.salary);
"""
DEMO_QUERY = "SELECT row__id, id, name, salary FROM employee ORDER BY id"


def run_demo(path: str, metastore_url: str | None = None) -> None:
    """The seed-000 walk-through on the warehouse at ``path`` (its tables must not exist yet)."""
    from rich.rule import Rule
    from rich.syntax import Syntax

    from acid_platform.errors import AlreadyExistsError

    def run(session: Any, text: str) -> None:
        out.print(Syntax(text.strip(), "sql", theme="ansi_dark", background_color="default"))
        session.execute_script(text, on_result=lambda r: _print_result(r, OutputFormat.table))

    with _open(path, metastore_url) as wh, _open(path, metastore_url) as reader:
        existing = {"employee", "employee_update"} & set(wh.list_tables(DEFAULT_DATABASE))
        if existing:
            raise AlreadyExistsError(
                f"the demo creates its own tables; {sorted(existing)} exist in {path}: use another -w"
            )
        writer = wh.sql_session
        out.print(Rule(f"acid demo — warehouse {path}"))
        run(writer, DEMO_SETUP)
        out.print(Rule("a reader opens a transaction: its snapshot is taken now"))
        run(reader.sql_session, "START TRANSACTION;")
        out.print(Rule("the writer updates and merges (each statement is its own transaction)"))
        run(writer, DEMO_CHANGES)
        run(writer, "SHOW TRANSACTIONS;")
        out.print(Rule("directory layout of default.employee"))
        out.print(_layout_tree(wh.table("default.employee")))
        out.print(Rule("the same table under two snapshots"))
        print_table(
            reader.sql_session.execute(DEMO_QUERY),
            title="reader's snapshot (taken after the INSERT)",
        )
        print_table(writer.execute(DEMO_QUERY), title="latest snapshot (after UPDATE and MERGE)")
        reader.sql_session.execute("COMMIT")
        err.print(f'[dim]warehouse left at {path}; try: acid sql -w {path} -e "{DEMO_QUERY}"[/]')


def _layout_tree(table: Any) -> Any:
    """The table directory as a rich Tree (directories, then their files)."""
    from pyarrow import fs as pafs
    from rich.tree import Tree

    location = table.location
    root = Tree(f"[bold]{escape(location.path)}[/]")
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.path, recursive=True))
    nodes: dict[str, Any] = {"": root}
    for info in sorted(infos, key=lambda i: i.path):
        relative = info.path[len(location.path.rstrip("/")) + 1 :]
        parent, _, name = relative.rpartition("/")
        node = nodes.get(parent, root)
        if info.type == pafs.FileType.Directory:
            nodes[relative] = node.add(f"[bold blue]{escape(name)}/[/]")
        else:
            node.add(f"{escape(name)} [dim]({info.size} bytes)[/]")
    return root


# --------------------------------------------------------------------------- helpers
@contextmanager
def _open(path: str, metastore_url: str | None) -> Iterator[Any]:
    from acid_platform.warehouse import Warehouse

    wh = Warehouse.open(path, metastore_url)
    try:
        yield wh
    finally:
        wh.close()


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


@contextmanager
def _user_errors() -> Iterator[None]:
    try:
        yield
    except SqlSyntaxError as exc:
        first, *rest = str(exc).splitlines()
        err.print(f"[bold red]error:[/] [red]{escape(first)}[/]")
        for line in rest:
            err.print(escape(line))
        raise typer.Exit(1) from None
    except AcidError as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        err.print(f"[bold red]error:[/] [red]{escape(type(exc).__name__)}: {escape(message)}[/]")
        raise typer.Exit(1) from None


def _read_script(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {file}: {exc.strerror}") from None


def _print_result(result: StatementResult, output: OutputFormat) -> None:
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}")
    if not result.is_query or result.table.num_columns == 0:
        err.print(f"[green]OK[/] {escape(result.message or '')}")
        return
    print_table(result.table, output)
    if output is OutputFormat.table:
        err.print(f"[dim]{result.table.num_rows} row(s)[/]")


def print_table(
    table: pa.Table, output: OutputFormat = OutputFormat.table, title: str | None = None
) -> None:
    """Print query rows to stdout in ``output`` format (Hive's text for each value)."""
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows_as_json(table), ensure_ascii=False) + "\n")
        return
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(table.column_names)
        writer.writerows(rows_as_text(table))
        return
    if _natural_width(table) > out.width:
        _print_records(table, title)
        return
    rich_table = RichTable(title=title, title_justify="left", header_style="bold")
    for name in table.column_names:
        rich_table.add_column(escape(name), overflow="fold")
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    for r in range(table.num_rows):
        rich_table.add_row(
            *("[dim]NULL[/]" if col[r] is None else escape(hive_text(col[r])) for col in columns)
        )
    out.print(rich_table)


def _cells(table: pa.Table) -> list[list[str | None]]:
    """Hive's text of every value, column by column (``None`` for NULL)."""
    return [
        [None if v is None else hive_text(v) for v in table.column(i).to_pylist()]
        for i in range(table.num_columns)
    ]


def _natural_width(table: pa.Table) -> int:
    """How wide the boxed table would be with no column wrapped."""
    widths = [
        max([len(name), 4, *(len(v) for v in col if v is not None)])
        for name, col in zip(table.column_names, _cells(table), strict=True)
    ]
    return sum(widths) + 3 * len(widths) + 1


def _print_records(table: pa.Table, title: str | None) -> None:
    """Too wide for the terminal: one ``name | value`` block per row (psql's expanded mode)."""
    if title:
        out.print(f"[bold]{escape(title)}[/]")
    cells = _cells(table)
    for r in range(table.num_rows):
        block = RichTable(
            title=f"-[ RECORD {r + 1} ]-", title_justify="left", show_header=False, box=None
        )
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for name, col in zip(table.column_names, cells, strict=True):
            value = col[r]
            block.add_row(escape(name), "[dim]NULL[/]" if value is None else escape(value))
        out.print(block)


__all__ = ["app", "hive_text", "main", "print_table"]


if __name__ == "__main__":
    main()
