"""How ``acid`` prints: query rows (a table, records, JSON or CSV), statement status lines, user
errors.

Rows print as a boxed table when it fits the terminal's width (to make it fit, headers and long
values wrap at spaces, then short ones with spaces too, such as a timestamp; an id or a name
never), else as one ``-[ RECORD n ]-`` block per row (:func:`fitted_widths`); ``--format
vertical`` asks for the records. The column names print also when there is no row.

Query rows go to stdout. Status lines (``OK …``, notes, row counts) go to the console a command
chooses: stderr for ``acid sql`` (so that its stdout is only the rows), stdout for the demo (whose
output is one story). A user error (any :class:`~acid_platform.errors.AcidError`) prints one red
line (plus the quoted source line of a syntax error) on stderr and exits with status 1.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pyarrow as pa
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.tree import Tree
from sqlalchemy.exc import DBAPIError

from acid_platform.cli.options import OutputFormat
from acid_platform.errors import AcidError, SqlSyntaxError
from acid_platform.sql.display import column_values, hive_text, rows_as_json, rows_as_text

if TYPE_CHECKING:
    from acid_platform.format.fs import Location
    from acid_platform.sql.results import StatementResult
    from acid_platform.table.stream import RowStream

#: Query rows (and everything the demo prints).
out = Console(highlight=False, soft_wrap=False)
#: Status lines of the other commands, and errors.
err = Console(stderr=True, highlight=False, soft_wrap=True)


#: Rows printed per boxed table of a streamed result (a longer result prints as several).
PAGE_ROWS = 10_000


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
    if output in (OutputFormat.table, OutputFormat.vertical):
        status.print(f"[dim]{rows} row(s)[/]")


def print_stream(stream: RowStream, output: OutputFormat = OutputFormat.table) -> int:
    """Print a streamed result as its rows come (never holding more than a page of
    :data:`PAGE_ROWS` rows); returns the number of rows. JSON and CSV print exactly what
    :func:`print_table` prints for the whole result; a table longer than a page prints as one
    boxed table (or run of records) per page."""
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
            _print_boxed(page, None, count + 1, vertical=output is OutputFormat.vertical)
        count += page.num_rows
    return count


def print_table(
    table: pa.Table, output: OutputFormat = OutputFormat.table, title: str | None = None
) -> None:
    """Print query rows to stdout in ``output`` format (Hive's text for each value): ``table``
    a boxed table when it fits the terminal's width, else one record per row; ``vertical``
    always records; the column names also when there is no row."""
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows_as_json(table), ensure_ascii=False) + "\n")
        return
    if output is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(table.column_names)
        writer.writerows(rows_as_text(table))
        return
    _print_boxed(table, title, 1, vertical=output is OutputFormat.vertical)


#: A value at most this long wraps in a table only when the table fits no other way (an id, a
#: name, a timestamp); a longer one (a message) wraps at its spaces first.
SHORT_VALUE = 24
#: A word longer than this may fold (a path, a URI) rather than widen its column.
LONG_WORD = 40


def _print_boxed(
    table: pa.Table, title: str | None, first_record: int, *, vertical: bool = False
) -> None:
    """One boxed table; records (numbered from ``first_record``) when ``vertical`` or when the
    table does not fit the terminal even with its headers and long values wrapped at spaces.
    Without rows: the boxed header when it fits, else the column names on a line of their own
    (``Lock ID | Database | …``), wrapped between names."""
    cells = _cells(table)
    widths = fitted_widths(table.column_names, cells, out.width)
    if widths is None or (vertical and table.num_rows):
        if table.num_rows:
            _print_records(table, title, first_record, cells)
        else:
            if title:
                out.print(f"[bold]{escape(title)}[/]")
            for line in _packed(table.column_names, " | ", out.width):
                out.print(escape(line), style="bold", soft_wrap=True)
        return
    rich_table = RichTable(title=title, title_justify="left", header_style="bold")
    for name, width in zip(table.column_names, widths, strict=True):
        rich_table.add_column(escape(name), overflow="fold", width=width)
    for r in range(table.num_rows):
        rich_table.add_row(*(_markup(col[r]) for col in cells))
    out.print(rich_table)


def _markup(value: str | None) -> str:
    """A cell's text as rich markup: NULL dimmed."""
    return "[dim]NULL[/]" if value is None else escape(value)


def _packed(names: list[str], separator: str, width: int) -> list[str]:
    """``names`` joined by ``separator`` into lines of at most ``width`` characters, broken
    between names only (a name longer than a line has a line of its own)."""
    lines: list[str] = []
    for name in names:
        if lines and len(lines[-1]) + len(separator) + len(name) <= width:
            lines[-1] += separator + name
        else:
            lines.append(name)
    return lines


def fitted_widths(names: list[str], cells: list[list[str | None]], width: int) -> list[int] | None:
    """The column widths of a boxed table of ``cells`` (column by column, ``None`` for NULL)
    that fits ``width`` characters, or ``None`` when none does.

    Every column as wide as its widest value or name, when that fits. Else headers wrap at
    their spaces and so do values longer than :data:`SHORT_VALUE` (messages); if that is still
    too wide, short values with spaces wrap too (a timestamp's date above its time). A word
    longer than :data:`LONG_WORD` may fold. Width left over goes to values before headers
    (:func:`_spread`)."""
    natural, widest, strict, loose = [], [], [], []
    for name, col in zip(names, cells, strict=True):
        values = [v if v is not None else "NULL" for v in col]
        widest.append(max([0, *map(len, values)]))
        natural.append(max(len(name), widest[-1]))
        head = [min(len(w), LONG_WORD) for w in name.split()] or [0]
        short = [len(v) for v in values if len(v) <= SHORT_VALUE]
        words = [min(len(w), LONG_WORD) for v in values for w in v.split()]
        long_words = [
            min(len(w), LONG_WORD) for v in values if len(v) > SHORT_VALUE for w in v.split()
        ]
        strict.append(min(max(head + short + long_words), natural[-1]))
        loose.append(min(max(head + words), natural[-1]))
    room = width - (3 * len(names) + 1)  # the box: a border and padding around each column
    if sum(natural) <= room:
        return natural
    for least in (strict, loose):
        if sum(least) <= room:
            return _spread(least, natural, widest, room)
    return None


def _spread(least: list[int], natural: list[int], values: list[int], room: int) -> list[int]:
    """``least`` widened to fill ``room``: first columns whose values wrap are made wide enough
    for them (``values``: each column's widest value), the smallest need first; then columns
    whose header wraps are made whole, likewise; what is left goes one character at a time
    to the column short of the most."""
    widths = list(least)
    spare = room - sum(widths)
    for target in ([max(w, v) for w, v in zip(widths, values, strict=True)], natural):
        for i in sorted(range(len(widths)), key=lambda c: target[c] - widths[c]):
            need = target[i] - widths[i]
            if 0 < need <= spare:
                widths[i], spare = target[i], spare - need
    while spare > 0 and any(w < n for w, n in zip(widths, natural, strict=True)):
        i = max(range(len(widths)), key=lambda c: natural[c] - widths[c])
        widths[i] += 1
        spare -= 1
    return widths


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


def shell_command(name: str, module: str | None = None) -> str:
    """How a new shell runs this installation's command ``name`` (``acid``, ``dg``), for a
    printed hint: the bare name when a new shell's PATH finds this very script, else its full
    path (a virtual environment's ``bin``, on the PATH only while activated: ``bash
    scripts/platform`` installs into ``./.venv``). Without such a script: ``python -m
    module`` through this interpreter when ``module`` is given, else the bare name."""
    bin_dir = Path(sys.executable).parent
    ours = bin_dir / name
    if not ours.is_file():
        return f"{shlex.quote(sys.executable)} -m {module}" if module else name
    on_path = shutil.which(name)
    activated = os.environ.get("VIRTUAL_ENV")
    from_activation = activated is not None and bin_dir.is_relative_to(activated)
    if on_path and Path(on_path).resolve() == ours.resolve() and not from_activation:
        return name
    return shlex.quote(str(ours))


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


def _print_records(
    table: pa.Table, title: str | None, first_record: int, cells: list[list[str | None]]
) -> None:
    """One ``name | value`` block per row (psql's expanded mode): asked for, or a table too
    wide for the terminal."""
    if title:
        out.print(f"[bold]{escape(title)}[/]")
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
    "shell_command",
    "user_errors",
]
