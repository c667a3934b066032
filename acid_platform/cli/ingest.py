"""``acid ingest FILE… --table db.t``: load landing files into a table, each exactly once
(:func:`acid_platform.streaming.landing.load_files`; the Dagster sensor does the same by itself)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from acid_platform.cli.commands import app
from acid_platform.cli.options import MetastoreOption, WarehouseOption, open_warehouse
from acid_platform.cli.output import err, user_errors
from acid_platform.streaming.landing import FileFormat, load_files


@app.command("ingest")
def ingest_command(
    files: Annotated[list[str], typer.Argument(help="Landing files (paths or URIs).")],
    table: Annotated[str, typer.Option("--table", "-t", help="Target table (db.table).")],
    warehouse: WarehouseOption,
    file_format: Annotated[
        FileFormat | None,
        typer.Option("--file-format", help="The files' format (default: by suffix)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    metastore_url: MetastoreOption = None,
) -> None:
    """Load FILES into a table in one transaction, recording each file's identity (URI, size,
    modification time) with it: files loaded before are skipped, a file that does not parse
    or fit the table fails the whole load and nothing is written."""
    with user_errors(), open_warehouse(warehouse, metastore_url) as wh:
        result = load_files(wh, table, files, fmt=file_format)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
        return
    for source in result.skipped:
        err.print(
            f"[yellow]skipped[/] {escape(source.key)}: committed by txnid:{source.txn_id} already"
        )
    if result.loaded:
        err.print(
            f"[green]OK[/] loaded {result.rows} row(s) from {len(result.loaded)} file(s) into "
            f"{escape(result.table)} (txnid:{result.txn_id}, write id {result.write_id})"
        )
    else:
        err.print(f"[green]OK[/] nothing to load into {escape(result.table)}")
