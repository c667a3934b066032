"""The ``acid`` commands (typer): ``sql``, ``show``, ``health``, ``compact``, ``changes``, ``init`` and
``demo``. The maintenance commands (``initiate``, ``worker``, ``clean``, ``housekeep``,
``services``) are in :mod:`.maintenance`; printing lives in :mod:`.output`, the demo in
:mod:`.demo`."""

from __future__ import annotations

import enum
import importlib.metadata
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from acid_platform.cli.demo import run_demo
from acid_platform.cli.options import (
    FormatOption,
    MetastoreOption,
    WarehouseOption,
    open_warehouse,
)
from acid_platform.cli.output import OutputFormat, err, print_result, print_table, user_errors
from acid_platform.cli.shell import run_shell
from acid_platform.metastore.names import split_table_name
from acid_platform.sql.commands import parse_partition_spec
from acid_platform.sql.statements import Compact, Show, ShowCompactions, Statement, TableName
from acid_platform.table.catalog_ops import warehouse_exists

app = typer.Typer(
    name="acid",
    help="Hive ACID v2 transactional tables: HiveQL, transactions, compaction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    # The installed distribution's version: pyproject's, which acid_platform.__version__
    # repeats (the top package is above this layer, so it is not imported here).
    if value:
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
    """Run HiveQL statements (one, or a script) on a warehouse; without -e or -f, an
    interactive shell (statements end with ';', history in ~/.acid_history)."""
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


@app.command("show")
def show_command(
    what: Annotated[ShowWhat, typer.Argument(help="transactions, locks or compactions")],
    warehouse: WarehouseOption,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """SHOW TRANSACTIONS / LOCKS / COMPACTIONS of a warehouse's metastore."""
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        stmt: Statement = {
            ShowWhat.transactions: Show("transactions"),
            ShowWhat.locks: Show("locks"),
            ShowWhat.compactions: ShowCompactions(),
        }[what]
        wh.sql_session.run_all([stmt], on_result=lambda r: print_result(r, output))


@app.command("health")
def health_command(
    warehouse: WarehouseOption,
    table: Annotated[
        str | None,
        typer.Argument(help="Table (db.table, or a SHOW … LIKE pattern); default: every table."),
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", "-d", help="Database of the tables.")
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The health report of a table (SHOW TABLE STATUS): deltas, delete ratio, read
    amplification, small files, the oldest open transaction, the compaction backlog and what the
    initiator would do, a row per partition."""
    with user_errors():
        db, dot, pattern = (table or "").rpartition(".")
        stmt = Show("table_status", database=db if dot else database, pattern=pattern or None)
        with open_warehouse(warehouse, metastore_url) as wh:
            wh.sql_session.run_all([stmt], on_result=lambda r: print_result(r, output))


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
    with user_errors():
        db, name = split_table_name(table)
        spec = parse_partition_spec(partition) if partition else ()
        statement = Compact(TableName(name, db), "major" if major else "minor", spec, wait)
        with open_warehouse(warehouse, metastore_url) as wh:
            wh.sql_session.run_all(
                [statement], on_result=lambda r: print_result(r, OutputFormat.table)
            )


@app.command("changes")
def changes_command(
    table: Annotated[str, typer.Argument(help="Table name (db.table).")],
    warehouse: WarehouseOption,
    from_write_id: Annotated[
        int, typer.Option("--from", help="Changes after this write id (0: from the start).")
    ] = 0,
    to_write_id: Annotated[
        int | None,
        typer.Option("--to", help="Up to this write id (default: the newest final one)."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key", "-k", help="Columns identifying a row, comma-separated: pairs updates."
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option("--where", help="Hive predicate, e.g. \"ds = '2024-01-01'\"."),
    ] = None,
    metastore_url: MetastoreOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """The change feed: committed inserts, deletes and updates after write id --from up to
    --to, each with its _change_type, _write_id and row__id."""
    keys = [k.strip() for k in key.split(",") if k.strip()] if key else None
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        scan = wh.table(table).plan_changes(from_write_id, to_write_id, key=keys, filter=where)
        window = scan.window
        rows = scan.to_arrow()
        print_table(rows, output)
        err.print(
            f"[dim]{rows.num_rows} change(s) of {escape(scan.spec.full_name)} after write id "
            f"{window.after} up to {window.upto}[/]"
        )


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
