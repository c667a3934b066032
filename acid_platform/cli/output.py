"""How ``acid`` prints: query rows (a table, JSON or CSV), statement status lines, user errors.

Query rows go to stdout. Status lines (``OK …``, notes, row counts) go to the console a command
chooses: stderr for ``acid sql`` (so that its stdout is only the rows), stdout for the demo (whose
output is one story). A user error (any :class:`~acid_platform.errors.AcidError`) prints one red
line (plus the quoted source line of a syntax error) on stderr and exits with status 1.
"""

from __future__ import annotations

import csv
import enum
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import pyarrow as pa
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.tree import Tree
from sqlalchemy.exc import DBAPIError

from acid_platform.errors import AcidError, SqlSyntaxError
from acid_platform.format.fs import Location
from acid_platform.sql.display import column_values, hive_text, rows_as_json, rows_as_text
from acid_platform.sql.results import StatementResult
from acid_platform.table.stream import RowStream

#: Query rows (and everything the demo prints).
out = Console(highlight=False, soft_wrap=False)
#: Status lines of the other commands, and errors.
err = Console(stderr=True, highlight=False, soft_wrap=True)


#: Rows printed per boxed table of a streamed result (a longer result prints as several).
PAGE_ROWS = 10_000


class OutputFormat(enum.StrEnum):
    """How query results are printed."""

    table = "table"
    json = "json"
    csv = "csv"


def print_result(
    result: StatementResult, output: OutputFormat, status: Console | None = None
) -> None:
    """Print one statement's result: its rows to stdout, its notes and status line to
    ``status`` (default: stderr)."""
    status = status or err
    for note in result.notes:
        kind, warning, rest = note.partition("warning: ")
        if warning and not kind:  # a note that is a warning (an unknown SET key …)
            status.print(f"[bold yellow]warning:[/] {escape(rest)}")
        else:
            status.print(f"[yellow]note:[/] {escape(note)}")
    if not result.is_query or result.table.num_columns == 0:
        status.print(f"[green]OK[/] {escape(result.message or '')}")
        return
    if result.stream is not None:
        rows = print_stream(result.stream, output)
    else:
        print_table(result.table, output)
        rows = result.table.num_rows
    if output is OutputFormat.table:
        status.print(f"[dim]{rows} row(s)[/]")


def print_stream(stream: RowStream, output: OutputFormat = OutputFormat.table) -> int:
    """Print a streamed result as its rows come (never holding more than a page of
    :data:`PAGE_ROWS` rows); returns the number of rows. JSON and CSV print exactly what
    :func:`print_table` prints for the whole result; a table longer than a page prints as one
    boxed table per page."""
    if output is OutputFormat.json:
        sys.stdout.write("[")
        count = 0
        for page in _pages(stream):
            for row in rows_as_json(page):
                sys.stdout.write((", " if count else "") + json.dumps(row, ensure_ascii=False))
                count += 1
        sys.stdout.write("]\n")
        return count
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(stream.schema.names)
    count = 0
    for page in _pages(stream):
        if output is OutputFormat.csv:
            writer.writerows(rows_as_text(page))
        else:
            _print_boxed(page, None, count + 1)
        count += page.num_rows
    return count


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
    _print_boxed(table, title, 1)


def _print_boxed(table: pa.Table, title: str | None, first_record: int) -> None:
    """One boxed table, or records (numbered from ``first_record``) when it is too wide."""
    if _natural_width(table) > out.width:
        _print_records(table, title, first_record)
        return
    rich_table = RichTable(title=title, title_justify="left", header_style="bold")
    for name in table.column_names:
        rich_table.add_column(escape(name), overflow="fold")
    columns = [column_values(table.column(i)) for i in range(table.num_columns)]
    for r in range(table.num_rows):
        rich_table.add_row(
            *("[dim]NULL[/]" if col[r] is None else escape(hive_text(col[r])) for col in columns)
        )
    out.print(rich_table)


def layout_tree(location: Location, under: str = "") -> Tree:
    """A table's directory (or its partition directory ``under``, e.g. ``ds=2024-01-01``) as a
    rich Tree: directories, then their files with sizes."""
    from pyarrow import fs as pafs

    top = location.path.rstrip("/") + (f"/{under}" if under else "")
    root = Tree(f"[bold]{escape(top)}[/]")
    infos = location.filesystem.get_file_info(pafs.FileSelector(top, recursive=True))
    nodes: dict[str, Tree] = {"": root}
    for info in sorted(infos, key=lambda i: i.path):
        relative = info.path[len(top) + 1 :]
        parent, _, name = relative.rpartition("/")
        node = nodes.get(parent, root)
        if info.type == pafs.FileType.Directory:
            nodes[relative] = node.add(f"[bold blue]{escape(name)}/[/]")
        else:
            node.add(f"{escape(name)} [dim]({info.size} bytes)[/]")
    return root


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an :class:`~acid_platform.errors.AcidError` into one red line and exit status 1
    (also an ``OSError`` or a database error of the metastore: the machine's failures)."""
    try:
        yield
    except SqlSyntaxError as exc:
        first, *rest = str(exc).splitlines()
        err.print(f"[bold red]error:[/] [red]{escape(first)}[/]")
        for line in rest:
            err.print(escape(line))
        raise typer.Exit(1) from None
    except AcidError as exc:
        _error_line(type(exc).__name__, str(exc))
    except OSError as exc:  # the machine's, not ours: a full disk, a file that went away
        where = f": {exc.filename}" if exc.filename else ""
        _error_line(type(exc).__name__, f"{exc.strerror or exc}{where}")
    except DBAPIError as exc:  # the metastore's database failed mid-command
        _error_line("MetastoreError", f"the metastore's database failed: {exc.orig}")


def _error_line(kind: str, text: str) -> NoReturn:
    message = " ".join(text.split()) or kind
    err.print(f"[bold red]error:[/] [red]{escape(kind)}: {escape(message)}[/]")
    raise typer.Exit(1) from None


def _cells(table: pa.Table) -> list[list[str | None]]:
    """Hive's text of every value, column by column (``None`` for NULL)."""
    return [
        [None if v is None else hive_text(v) for v in column_values(table.column(i))]
        for i in range(table.num_columns)
    ]


def _natural_width(table: pa.Table) -> int:
    """How wide the boxed table would be with no column wrapped."""
    widths = [
        max([len(name), 4, *(len(v) for v in col if v is not None)])
        for name, col in zip(table.column_names, _cells(table), strict=True)
    ]
    return sum(widths) + 3 * len(widths) + 1


def _pages(stream: RowStream) -> Iterator[pa.Table]:
    """The stream's rows in tables of at most :data:`PAGE_ROWS` rows (at least one, maybe empty)."""
    pending: list[pa.RecordBatch] = []
    held = 0
    printed = False
    for batch in stream:
        pending.append(batch)
        held += batch.num_rows
        while held >= PAGE_ROWS:
            rows = pa.Table.from_batches(pending, schema=stream.schema)
            yield rows.slice(0, PAGE_ROWS)
            printed = True
            rest = rows.slice(PAGE_ROWS)
            pending, held = rest.to_batches(), rest.num_rows
    if held or not printed:
        yield pa.Table.from_batches(pending, schema=stream.schema)


def _print_records(table: pa.Table, title: str | None, first_record: int = 1) -> None:
    """Too wide for the terminal: one ``name | value`` block per row (psql's expanded mode)."""
    if title:
        out.print(f"[bold]{escape(title)}[/]")
    cells = _cells(table)
    for r in range(table.num_rows):
        block = RichTable(
            title=f"-[ RECORD {first_record + r} ]-",
            title_justify="left",
            show_header=False,
            box=None,
        )
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for name, col in zip(table.column_names, cells, strict=True):
            value = col[r]
            block.add_row(escape(name), "[dim]NULL[/]" if value is None else escape(value))
        out.print(block)


__all__ = [
    "PAGE_ROWS",
    "OutputFormat",
    "err",
    "layout_tree",
    "out",
    "print_result",
    "print_stream",
    "print_table",
    "user_errors",
]
