"""``acid ingest FILE… --table db.t``: load landing files into a table, each exactly once
(:func:`acid_platform.streaming.landing.load_files`: one transaction per file, in transaction
batches; the Dagster sensor does the same by itself). Exit status 1 when a file failed (its
transaction aborted, nothing of it written); the other files are loaded."""

from __future__ import annotations

import enum
import json
from typing import Annotated

import typer

from acid_platform.cli.commands import app
from acid_platform.cli.options import MetastoreOption, WarehouseOption, open_warehouse

#: :data:`acid_platform.streaming.landing.DEFAULT_BATCH_SIZE`, repeated here so that defining
#: the command imports nothing heavy (a test checks that the two agree).
BATCH_SIZE = 100


class LandingFormat(enum.StrEnum):
    """The values of :class:`acid_platform.streaming.landing.FileFormat` (which a test checks),
    for the option's choices without importing the loader."""

    parquet = "parquet"
    csv = "csv"
    json = "json"


@app.command("ingest", short_help="Load landing files into a table, each exactly once.")
def ingest_command(
    files: Annotated[
        list[str], typer.Argument(metavar="FILE", help="Landing files (paths or URIs).")
    ],
    table: Annotated[
        str, typer.Option("--table", "-t", metavar="TABLE", help="Target table (db.table).")
    ],
    warehouse: WarehouseOption,
    file_format: Annotated[
        LandingFormat | None,
        typer.Option("--file-format", help="The files' format (default: by suffix)."),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size",
            min=1,
            metavar="N",
            help="Transactions (files) per transaction batch.",
        ),
    ] = BATCH_SIZE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    metastore_url: MetastoreOption = None,
) -> None:
    """Load FILES into a table, one transaction per file in transaction batches (one delta per
    partition and batch), recording each file's identity (URI, size, modification time) in its
    transaction: files loaded before are skipped; a file that does not parse or fit the table
    aborts its own transaction (nothing of it is written) and fails the command (exit 1)."""
    from rich.markup import escape

    from acid_platform.cli.output import err, user_errors
    from acid_platform.streaming.landing import FileFormat, load_files

    fmt = None if file_format is None else FileFormat(file_format.value)
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        result = load_files(wh, table, files, fmt=fmt, batch_size=batch_size)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
        if result.failed:
            raise typer.Exit(1)
        return
    for source in result.skipped:
        err.print(
            f"[yellow]skipped[/] {escape(source.key)}: committed by txnid:{source.txn_id} already"
        )
    if result.loaded:
        ids = result.write_ids
        err.print(
            f"[green]OK[/] loaded {result.rows} row(s) from {len(result.loaded)} file(s) into "
            f"{escape(result.table)} (one transaction each, write ids {min(ids)}-{max(ids)})"
        )
    elif not result.failed:
        err.print(f"[green]OK[/] nothing to load into {escape(result.table)}")
    for failed in result.failed:
        err.print(
            f"[red]failed[/] {escape(failed.file.uri)}: {failed.error}: {escape(failed.message)} "
            "(its transaction aborted, nothing of it written)"
        )
    if result.failed:
        raise typer.Exit(1)
