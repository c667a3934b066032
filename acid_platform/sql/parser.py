"""HiveQL text to statements: :func:`parse_script` is the one entry point.

The script is split on ``;`` tokens (:mod:`.script`); each statement is substituted (``${var}``),
then read either by the token parsers of Hive-only commands (:mod:`.commands`) or by sqlglot's
Hive parser, checked against the allow-list of what HiveQL may call (:mod:`.sandbox`) and
translated (:mod:`.translate`). Nothing runs here: a script with a syntax error
anywhere raises :class:`~acid_platform.errors.SqlSyntaxError` before any statement executes.

>>> [type(s).__name__ for s in parse_script("use db; select 1; show locks")]
['UseDatabase', 'Select', 'Show']
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError

from acid_platform.errors import SandboxError, SemanticError, UnsupportedOperationError
from acid_platform.sql.commands import parse_command
from acid_platform.sql.sandbox import check_calls
from acid_platform.sql.script import (
    Chunk,
    cannot_recognize,
    from_parse_error,
    hive_dialect,
    lookup_in,
    rebase,
    split_script,
    substitute,
    syntax_error,
)
from acid_platform.sql.statements import SetVariable, SqlSource, Statement
from acid_platform.sql.translate import translate

#: First words of the statements sqlglot reads for us.
_SQLGLOT_STATEMENTS = frozenset(
    {
        "SELECT",
        "WITH",
        "FROM",
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "CREATE",
        "DROP",
        "USE",
        "DESCRIBE",
        "DESC",
        "ALTER",
        "TRUNCATE",
        "VALUES",
        "(",
    }
)
#: First words of DuckDB statements (files, extensions, settings, catalogs) that are not
#: HiveQL; ``LOAD`` other than ``LOAD DATA`` and ``EXPORT`` / ``IMPORT DATABASE`` too.
_ENGINE_STATEMENTS = frozenset(
    {"PRAGMA", "ATTACH", "DETACH", "INSTALL", "FORCE", "COPY", "CALL", "CHECKPOINT",
     "SUMMARIZE", "VACUUM", "PIVOT", "UNPIVOT"}
)  # fmt: skip
_REFUSED = {
    "LOAD": "LOAD DATA is not supported on transactional tables (Hive refuses it too); use INSERT",
    "EXPLAIN": "EXPLAIN is not supported",
    "ANALYZE": "ANALYZE TABLE is not supported",
    "MSCK": "MSCK REPAIR TABLE is not supported",
}


def parse_script(
    text: str,
    hivevars: Mapping[str, str] | None = None,
    hiveconf: Mapping[str, object] | None = None,
) -> list[Statement]:
    """Parse every statement of ``text``.

    ``hivevars`` / ``hiveconf`` seed ``${…}`` substitution; a ``SET`` inside the script updates
    them for the statements that follow it, as Hive does.
    """
    check_utf8_text(text)
    variables = dict(hivevars or {})
    conf = {k: str(v) for k, v in (hiveconf or {}).items()}
    statements: list[Statement] = []
    for chunk in split_script(text):
        statement = parse_chunk(chunk, variables, conf)
        if isinstance(statement, SetVariable) and statement.key and statement.value is not None:
            scope, _, name = statement.key.partition(":")
            if name and scope == "hivevar":
                variables[name] = statement.value
            elif name and scope == "hiveconf":
                conf[name] = statement.value
            elif not name:
                conf[statement.key] = statement.value
        statements.append(statement)
    return statements


def check_utf8_text(text: str) -> None:
    """Raise :class:`~acid_platform.errors.SqlSyntaxError` at the first character of ``text``
    that is not UTF-8 text: a lone surrogate, which is what Python makes of bytes that are not
    UTF-8 (a Latin-1 script on stdin or in ``-e``, read with ``surrogateescape``). Such text
    would reach no table: the message shows it escaped (``caf\\xe9``).

    >>> try:
    ...     check_utf8_text("select 'caf" + b"\\xe9".decode(errors="surrogateescape") + "'")
    ... except ValueError as exc:
    ...     print(str(exc).split(";")[0])
    line 1, column 12: the text is not UTF-8 (\\xe9)
    """
    try:
        text.encode("utf-8")
        return
    except UnicodeEncodeError as exc:
        at = exc.start
    line = text.count("\n", 0, at) + 1
    col = at - text.rfind("\n", 0, at)
    shown = "".join(_escaped(c) for c in text)
    raise syntax_error(
        shown,
        line,
        col,
        f"the text is not UTF-8 ({_escaped(text[at])}); save the script as UTF-8, or write "
        "bytes as unhex('…')",
    )


def _escaped(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, under surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if 0xD800 <= code <= 0xDFFF else char


def parse_statement(text: str) -> Statement:
    """Parse exactly one statement (a trailing ``;`` is fine)."""
    statements = parse_script(text)
    if len(statements) != 1:
        raise UnsupportedOperationError(f"expected one statement, found {len(statements)}")
    return statements[0]


def parse_chunk(
    chunk: Chunk, hivevars: Mapping[str, str], hiveconf: Mapping[str, str]
) -> Statement:
    """Parse one statement of a script (after variable substitution)."""
    if "${" in chunk.text:
        chunk = rebase(chunk, substitute(chunk.text, lookup_in(hivevars, hiveconf)))
        check_utf8_text(chunk.script)  # a variable's value may hold bytes that were not UTF-8
    source = SqlSource(chunk.text, chunk.line, chunk.col)
    command = parse_command(chunk, source)
    if command is not None:
        return command
    first = chunk.tokens[0].text.upper()
    second = chunk.tokens[1].text.upper() if len(chunk.tokens) > 1 else ""
    if (
        first in _ENGINE_STATEMENTS
        or (first == "LOAD" and second != "DATA")
        or (first in ("EXPORT", "IMPORT") and second == "DATABASE")
    ):
        raise SandboxError(
            f"line {chunk.line}: {first} is a statement of the embedded engine, not HiveQL: "
            "it is not allowed"
        )
    if first in _REFUSED:
        raise UnsupportedOperationError(f"line {chunk.line}: {_REFUSED[first]}")
    if first not in _SQLGLOT_STATEMENTS:
        raise cannot_recognize(chunk.script, chunk.tokens)
    try:
        with _quiet_sqlglot():
            nodes = (
                hive_dialect()
                .parser(error_level=ErrorLevel.RAISE)
                .parse(list(chunk.tokens), chunk.script)
            )
    except ParseError as exc:
        raise from_parse_error(chunk.script, exc) from None
    node = nodes[0] if nodes else None
    if node is None or isinstance(node, exp.Command):
        raise UnsupportedOperationError(
            f"line {chunk.line}: statement not supported: {' '.join(chunk.text.split()[:4])} …"
        )
    try:
        check_calls(node)
        return translate(node, source)
    except (SemanticError, UnsupportedOperationError) as exc:
        if str(exc).startswith("line "):
            raise
        raise type(exc)(f"line {source.line}: {exc}") from None


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    # sqlglot logs a warning when it falls back to a Command node; we report that ourselves.
    logger = logging.getLogger("sqlglot")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)
