"""The ``acid`` commands (typer): ``sql``, ``show``, ``health``, ``compact``, ``changes``, ``init`` and
``demo``. The maintenance commands (``initiate``, ``worker``, ``clean``, ``housekeep``,
``services``) are in :mod:`.maintenance`; printing lives in :mod:`.output`, the demo in
:mod:`.demo`.

Defining the commands imports typer and :mod:`.options` only: ``acid --help`` (and a typo's usage
line) answers at once. What a command needs — the warehouse, the SQL engine, pyarrow, the
printing — is imported in its body, when it runs.

The help is click's plain layout (``rich_markup_mode=None``): paragraphs wrap at word boundaries
to the terminal's width, a flag shows no type and an option a value name (``PATH``, ``SQL``),
and each command has a one-line ``short_help`` for the list ``acid --help`` prints."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from acid_platform.cli.options import (
    FormatOption,
    MetastoreOption,
    OutputFormat,
    WarehouseOption,
    open_warehouse,
)

if TYPE_CHECKING:
    from acid_platform.sql.results import StatementResult


def _typed_arguments_only_for_choices() -> None:
    """typer's help prints an argument's type after its name (``TABLE <str>``), which tells
    nothing; keep it where it helps: the values of a choice (``WHAT
    <transactions|locks|compactions>``). (Options say what they take with their ``metavar``;
    flags print no type in click's plain help.)"""
    argument = getattr(typer.core, "TyperArgument", None)
    if argument is None or not hasattr(argument, "display_type_rich"):
        return  # another typer: its own layout

    def display_type_rich(self: typer.core.TyperArgument, ctx: typer.Context) -> str | None:
        return self.display_type(ctx) if self.type_descriptor.is_choice else None

    argument.display_type_rich = display_type_rich


_typed_arguments_only_for_choices()

app = typer.Typer(
    name="acid",
    help="Hive ACID v2 transactional tables: HiveQL, transactions, compaction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    # The installed distribution's version: pyproject's, which acid_platform.__version__
    # repeats (the top package is above this layer, so it is not imported here).
    if value:
        import importlib.metadata

        typer.echo(f"acid_platform {importlib.metadata.version('acid_platform')}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print acid_platform's version and exit.",
        ),
    ] = False,
) -> None:
    """Hive ACID v2 transactional tables: HiveQL, transactions, compaction."""


class ShowWhat(enum.StrEnum):
    """What ``acid show`` lists."""

    transactions = "transactions"
    locks = "locks"
    compactions = "compactions"


@app.command("sql", short_help="Run HiveQL: -e STATEMENTS, -f SCRIPT, or a shell.")
def sql_command(
    warehouse: WarehouseOption,
    execute: Annotated[
        str | None,
        typer.Option("--execute", "-e", metavar="SQL", help="Statement(s) to run."),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option("--file", "-f", metavar="FILE", help="Script to run ('-' reads stdin)."),
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
    database: Annotated[
        str | None,
        typer.Option("--database", "-d", metavar="NAME", help="Run USE DATABASE first."),
    ] = None,
) -> None:
    """Run HiveQL statements (one, or a script) on a warehouse; without -e or -f, an
    interactive shell (statements end with ';', history in ~/.acid_history)."""
    from acid_platform.cli.output import err, print_result, user_errors
    from acid_platform.cli.shell import run_shell

    # Names from options become statement values or go through the API's checks, never into
    # statement text: ``-d 'x`; DROP TABLE t; --'`` is an invalid database name, nothing more.
    if execute is not None and file is not None:
        raise typer.BadParameter("give at most one of --execute/-e and --file/-f")
    text = execute if execute is not None else _read_script(file) if file is not None else None
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        session = wh.sql_session
        if database:
            session.use(database)
        if text is None:
            run_shell(wh, output)
            return
        session.execute_script(text, on_result=lambda r: print_result(r, output), stream=True)
        if wh.in_transaction:
            err.print("[yellow]note:[/] the script left a transaction open; it was rolled back")


@app.command("show", short_help="SHOW TRANSACTIONS, LOCKS or COMPACTIONS.")
def show_command(
    what: Annotated[ShowWhat, typer.Argument(metavar="WHAT", help="What to list.")],
    warehouse: WarehouseOption,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """SHOW TRANSACTIONS / LOCKS / COMPACTIONS of a warehouse's metastore."""
    from acid_platform.cli.output import print_result, user_errors
    from acid_platform.sql.statements import Show, ShowCompactions, Statement

    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        stmt: Statement = {
            ShowWhat.transactions: Show("transactions"),
            ShowWhat.locks: Show("locks"),
            ShowWhat.compactions: ShowCompactions(),
        }[what]
        wh.sql_session.run_all([stmt], on_result=lambda r: print_result(r, output))


@app.command("health", short_help="Health report of tables (SHOW TABLE STATUS).")
def health_command(
    warehouse: WarehouseOption,
    table: Annotated[
        str | None,
        typer.Argument(
            metavar="TABLE",
            help="A table (db.table, or a SHOW … LIKE pattern such as 'db.sales*'); default: "
            "every table of every database (of -d's database with -d).",
        ),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option("--database", "-d", metavar="NAME", help="Only the tables of this database."),
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The health report of tables (SHOW TABLE STATUS): deltas, delete ratio, read
    amplification, small files, the oldest open transaction, the compaction backlog and what the
    initiator would do, a row per partition."""
    from acid_platform.cli.output import print_result, user_errors
    from acid_platform.sql.statements import Show

    with user_errors():
        db, dot, pattern = (table or "").rpartition(".")
        with open_warehouse(warehouse, metastore_url) as wh:
            named = db if dot else database
            # No database named: every database (a table name alone may be in any of them).
            databases = [named] if named else wh.list_databases()
            statements = [
                Show("table_status", database=name, pattern=pattern or None) for name in databases
            ]
            results = wh.sql_session.run_all(statements)
            print_result(_concatenated(results), output)


@app.command("compact", short_help="Compact a table or partition (minor or major).")
def compact_command(
    table: Annotated[str, typer.Argument(metavar="TABLE", help="Table name (db.table).")],
    warehouse: WarehouseOption,
    major: Annotated[
        bool, typer.Option("--major/--minor", help="Major (base) or minor (delta) compaction.")
    ] = False,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            "-p",
            metavar="SPEC",
            help="Partition spec, e.g. \"ds='2024-01-01'\".",
        ),
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait for the compaction to finish.")
    ] = False,
    metastore_url: MetastoreOption = None,
) -> None:
    """ALTER TABLE … COMPACT 'minor'|'major' [AND WAIT]."""
    from acid_platform.cli.output import print_result, user_errors
    from acid_platform.metastore.names import split_table_name
    from acid_platform.sql.commands import parse_partition_spec
    from acid_platform.sql.statements import Compact, TableName

    with user_errors():
        db, name = split_table_name(table)
        spec = parse_partition_spec(partition) if partition else ()
        statement = Compact(TableName(name, db), "major" if major else "minor", spec, wait)
        with open_warehouse(warehouse, metastore_url) as wh:
            wh.sql_session.run_all(
                [statement], on_result=lambda r: print_result(r, OutputFormat.table)
            )


@app.command("changes", short_help="The change feed of a table between write ids.")
def changes_command(
    table: Annotated[str, typer.Argument(metavar="TABLE", help="Table name (db.table).")],
    warehouse: WarehouseOption,
    from_write_id: Annotated[
        int,
        typer.Option(
            "--from", metavar="WRITE_ID", help="Changes after this write id (0: from the start)."
        ),
    ] = 0,
    to_write_id: Annotated[
        int | None,
        typer.Option(
            "--to", metavar="WRITE_ID", help="Up to this write id (default: the newest final one)."
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            "-k",
            metavar="COLUMNS",
            help="Columns identifying a row, comma-separated: pairs updates.",
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where", metavar="PREDICATE", help="Hive predicate, e.g. \"ds = '2024-01-01'\"."
        ),
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The change feed: committed inserts, deletes and updates after write id --from up to
    --to, each with its _change_type, _write_id and row__id."""
    from rich.markup import escape

    from acid_platform.cli.output import err, print_table, user_errors

    keys = [k.strip() for k in key.split(",") if k.strip()] if key else None
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        scan = wh.table(table).changes(from_write_id, to_write_id, key=keys, where=where)
        window = scan.window
        rows = scan.to_arrow()
        print_table(rows, output)
        err.print(
            f"[dim]{rows.num_rows} change(s) of {escape(scan.spec.full_name)} after write id "
            f"{window.after} up to {window.upto}[/]"
        )


@app.command("init", short_help="Create a warehouse.")
def init_command(
    path: Annotated[
        str, typer.Argument(metavar="PATH", help="Directory (or URI) of the new warehouse.")
    ],
    metastore_url: MetastoreOption = None,
) -> None:
    """Create a warehouse at PATH (its metastore: SQLite in PATH unless --metastore-url);
    nothing to do when one is there already."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.table.catalog_ops import warehouse_exists

    with user_errors():
        if warehouse_exists(path, metastore_url):
            err.print(f"[green]OK[/] a warehouse already exists at {escape(path)}")
            return
        with open_warehouse(path, metastore_url, create=True) as wh:
            where = wh.root
        err.print(f"[green]OK[/] warehouse created at {escape(where)}")


@app.command("demo", short_help="The seed example end to end, on a new warehouse.")
def demo_command(
    warehouse: Annotated[
        str | None,
        typer.Option(
            "--warehouse",
            "-w",
            metavar="PATH",
            help="Warehouse to use (default: a new temporary directory).",
        ),
    ] = None,
    metastore_url: MetastoreOption = None,
) -> None:
    """The seed example end to end: CREATE, INSERT, UPDATE, MERGE; layout and two snapshots."""
    import tempfile

    from acid_platform.cli.demo import run_demo
    from acid_platform.cli.output import user_errors

    path = warehouse or tempfile.mkdtemp(prefix="acid-demo-")
    with user_errors():
        run_demo(path, metastore_url)


def main() -> None:
    """Console-script entry point (``acid``)."""
    app()


# --------------------------------------------------------------------------- helpers
def _concatenated(results: list[StatementResult]) -> StatementResult:
    """The rows of results of one kind (SHOW TABLE STATUS of several databases) as one."""
    import pyarrow as pa

    from acid_platform.sql.results import StatementResult

    first = results[0]
    return StatementResult(first.statement, pa.concat_tables([r.table for r in results]))


def read_stdin() -> str:
    """Standard input as text, bytes that are not UTF-8 kept as surrogates (whatever the
    locale's error handler) so that the parser names where they are."""
    raw = getattr(sys.stdin, "buffer", None)
    return sys.stdin.read() if raw is None else raw.read().decode("utf-8", "surrogateescape")


def _read_script(file: str) -> str:
    if file == "-":
        return read_stdin()
    try:  # bytes that are not UTF-8 kept as surrogates: the parser names where they are
        return Path(file).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {file}: {exc.strerror}") from None


__all__ = ["app", "main"]
