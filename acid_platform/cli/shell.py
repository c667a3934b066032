"""``acid sql`` without ``-e`` / ``-f``: an interactive HiveQL shell.

A statement may span lines; it runs once a line ends it with ``;`` (a ``;`` inside a quoted text
or a comment does not count). Results print as with ``-e`` (the same ``--format``). An error
prints its red line and the shell goes on; ``quit;`` / ``exit;`` or end of input (Ctrl-D) leave
it with status 0, rolling back a transaction left open. Ctrl-C drops the statement being typed.

Input that ends inside a statement (no ``;`` yet): on a terminal the shell discards it and says
so — Ctrl-D after ``DELETE FROM t`` deletes nothing, as in psql and beeline; from a pipe the
statement runs, as with ``-f`` (a script's last statement needs no ``;``).

On a terminal, lines are read with :mod:`readline` (editing, and history kept in
``~/.acid_history``, or the file ``ACID_HISTORY`` names); from a pipe, lines are read as they
come, without prompts.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import typer
from rich.markup import escape

from acid_platform.cli.output import OutputFormat, err, print_result, user_errors
from acid_platform.sql.script import ends_statement
from acid_platform.warehouse import Warehouse

PROMPT = "acid> "
CONTINUATION = "   -> "
HISTORY_LENGTH = 1000
_QUIT = frozenset({"quit", "exit"})


def history_file() -> Path:
    """Where the shell keeps its history: ``ACID_HISTORY``, else ``~/.acid_history``."""
    return Path(os.environ.get("ACID_HISTORY") or Path.home() / ".acid_history")


def run_shell(wh: Warehouse, output: OutputFormat) -> None:
    """Read statements until ``quit;`` or end of input, running each as it is complete."""
    interactive = sys.stdin.isatty()
    lines = _terminal_lines() if interactive else _piped_lines()
    if interactive:
        err.print("[dim]acid sql shell: end statements with ';', quit with 'quit;' or Ctrl-D[/]")
    buffer: list[str] = []
    for line in lines(lambda: CONTINUATION if buffer else PROMPT):
        if line is None:  # Ctrl-C: forget the statement being typed
            buffer.clear()
            continue
        buffer.append(line)
        text = "\n".join(buffer)
        if not text.strip() or not ends_statement(text):
            if not text.strip():
                buffer.clear()
            continue
        buffer.clear()
        if text.strip().rstrip(";").strip().lower() in _QUIT:
            break
        _run(wh, text, output)
    else:
        leftover = "\n".join(buffer)
        if leftover.strip() and interactive:  # the user never ended it: not theirs to run
            err.print(
                "[yellow]note:[/] discarded the unfinished statement (no ';' before Ctrl-D): "
                f"{escape(_abridged(leftover))}"
            )
        elif leftover.strip():  # a script's last statement: run it as -f would
            _run(wh, leftover, output)
    if wh.in_transaction:
        wh.rollback()
        err.print("[yellow]note:[/] a transaction was left open; it was rolled back")


def _abridged(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _run(wh: Warehouse, text: str, output: OutputFormat) -> None:
    try:
        with user_errors():
            wh.sql_session.execute_script(
                text, on_result=lambda r: print_result(r, output), stream=True
            )
    except typer.Exit:  # the error is printed; the shell goes on
        pass


def _piped_lines() -> Callable[[Callable[[], str]], Iterator[str | None]]:
    def lines(_prompt: Callable[[], str]) -> Iterator[str | None]:
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:
            for line in sys.stdin:
                yield line.rstrip("\n")
            return
        for data in raw:  # bytes that are not UTF-8 kept: the parser names where they are
            yield data.decode("utf-8", "surrogateescape").rstrip("\r\n")

    return lines


def _terminal_lines() -> Callable[[Callable[[], str]], Iterator[str | None]]:
    import readline  # noqa: PLC0415 - only a terminal needs it (absent on some platforms)

    path = history_file()
    with contextlib.suppress(OSError):  # no history yet
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LENGTH)

    def lines(prompt: Callable[[], str]) -> Iterator[str | None]:
        try:
            while True:
                try:
                    yield input(prompt())
                except KeyboardInterrupt:
                    sys.stdout.write("\n")
                    yield None
                except EOFError:
                    sys.stdout.write("\n")
                    return
        finally:
            try:
                readline.write_history_file(path)
            except OSError as exc:
                err.print(f"[yellow]note:[/] history not saved to {path}: {exc.strerror}")

    return lines


__all__ = ["history_file", "run_shell"]
