"""A HiveQL script as statements: splitting on ``;`` tokens, ``${var}`` substitution, error text.

Splitting runs sqlglot's Hive tokenizer over the whole script, so a ``;`` inside a string literal
or a comment never splits. Each :class:`Chunk` keeps its tokens, whose line / column / offset
fields point into the whole script, so a syntax error anywhere names its true position.

Hive substitutes variables (``${x}``, ``${hivevar:x}``, ``${hiveconf:x}``, ``${env:x}``) in the
text of a statement before parsing it; :func:`substitute` does the same, and a chunk whose text
changed is tokenized again (positions then count from the statement's first line).

>>> [c.text for c in split_script("select 1; select ';' -- x;\\n;")]
['select 1', "select ';'"]
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from acid_platform.errors import SqlSyntaxError
from acid_platform.sql.functions import HiveQL

#: The sqlglot dialect every statement is read with: Hive's, keeping the built-ins
#: :func:`~acid_platform.sql.functions.hive_builtins` computes itself.
_HIVEQL = HiveQL()

_VARIABLE = re.compile(r"\$\{([^{}$]+)\}")
#: Hive stops substituting after this many rounds (hive.variable.substitute.depth).
_SUBSTITUTE_DEPTH = 40


@dataclass(frozen=True)
class Chunk:
    """The text and tokens of one statement of a script (without its ``;``)."""

    text: str
    tokens: tuple[Token, ...]
    line: int
    col: int
    #: The text the tokens' offsets index: the whole script, or the statement after substitution
    #: padded so that lines and columns still match the script.
    script: str


def hive_dialect() -> Dialect:
    """The sqlglot dialect instance statements are read with."""
    return _HIVEQL


def tokenize(text: str) -> list[Token]:
    """Tokenize ``text`` with the Hive tokenizer; a bad token raises :class:`SqlSyntaxError`."""
    try:
        return list(hive_dialect().tokenize(text))
    except TokenError as exc:
        cause = str(exc.__cause__ or "")
        missing = re.match(r"Missing (.+) from \d+:(\d+)", cause)
        if missing:
            offset = int(missing.group(2))
            line, col = text.count("\n", 0, offset) + 1, _start_col(text, offset)
            message = f"unterminated text: missing closing {missing.group(1)}"
        else:
            line, col = _token_error_position(text, exc)
            message = f"cannot tokenize: {_first_line(cause or str(exc))}"
        raise syntax_error(text, line, col, message) from None


def split_script(text: str) -> list[Chunk]:
    """Split ``text`` into statements on ``;`` tokens; empty statements are dropped."""
    tokens = tokenize(text)
    chunks: list[Chunk] = []
    current: list[Token] = []
    for token in [*tokens, None]:
        if token is not None and token.token_type != TokenType.SEMICOLON:
            current.append(token)
            continue
        if current:
            first, last = current[0], current[-1]
            start = first.start
            chunks.append(
                Chunk(
                    text[start : last.end + 1],
                    tuple(current),
                    first.line,
                    _start_col(text, start),
                    text,
                )
            )
        current = []
    return chunks


def ends_statement(text: str) -> bool:
    """Whether ``text`` ends with a ``;`` that ends a statement (not one inside a quoted text
    or a comment): what an interactive shell waits for before it runs what was typed.

    >>> ends_statement("SELECT 'a;"), ends_statement("SELECT 'a;';"), ends_statement("-- x;")
    (False, True, False)
    """
    try:
        tokens = tokenize(text)
    except SqlSyntaxError as exc:  # unterminated: more lines to come; else: let it run and fail
        return "unterminated" not in str(exc) and text.rstrip().endswith(";")
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def tokens_after(chunk: Chunk, token: Token) -> list[Token]:
    """Tokenize the chunk's text after ``token`` again (for commands the tokenizer swallows whole).

    sqlglot's tokenizer turns everything after ``SHOW`` into one string token; Hive's SHOW
    variants need the words, so they are read again with their positions in ``chunk.script``.
    """
    base = token.end + 1
    end = chunk.tokens[0].start + len(chunk.text)
    rest = tokenize(chunk.script[base:end])
    first_line_col = _start_col(chunk.script, base) - 1
    for t in rest:
        if t.line == 1:
            t.col += first_line_col
        t.line += token.line - 1
        t.start += base
        t.end += base
    return rest


def substitute(text: str, lookup: Callable[[str], str | None]) -> str:
    """Replace ``${name}`` references the way Hive's VariableSubstitution does.

    ``lookup`` receives the name as written (``hivevar:x``, ``hiveconf:x``, ``x``) and returns its
    value or None; ``env:NAME`` reads the process environment. Unknown references stay as written.

    >>> substitute("select '${hivevar:d}', ${n}", {"hivevar:d": "2020", "n": "1"}.get)
    "select '2020', 1"
    """
    for _ in range(_SUBSTITUTE_DEPTH):
        changed = False

        def replace(match: re.Match[str]) -> str:
            nonlocal changed
            name = match.group(1).strip()
            value = os.environ.get(name[4:]) if name.startswith("env:") else lookup(name)
            if value is None:
                return match.group(0)
            changed = True
            return value

        text = _VARIABLE.sub(replace, text)
        if not changed or "${" not in text:
            break
    return text


def rebase(chunk: Chunk, text: str) -> Chunk:
    """Tokenize ``text`` (the chunk after substitution) again, positioned where the chunk starts."""
    if text == chunk.text:
        return chunk
    padded = "\n" * (chunk.line - 1) + " " * (chunk.col - 1) + text
    tokens = tuple(t for t in tokenize(padded) if t.token_type != TokenType.SEMICOLON)
    return Chunk(text, tokens, chunk.line, chunk.col, padded)


def syntax_error(text: str, line: int, col: int, message: str, length: int = 1) -> SqlSyntaxError:
    """A :class:`SqlSyntaxError` whose message quotes line ``line`` of ``text`` with a caret.

    >>> print(syntax_error("select\\n  a frm t", 2, 5, "unexpected 'frm'", 3))
    line 2, column 5: unexpected 'frm'
      a frm t
        ^^^
    """
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    shown = source.strip()
    indent = len(source) - len(source.lstrip())
    caret = " " * max(col - 1 - indent, 0) + "^" * max(min(length, len(source) - col + 1), 1)
    return SqlSyntaxError(f"line {line}, column {col}: {message}\n  {shown}\n  {caret}", line, col)


def error_at_token(text: str, token: Token, message: str) -> SqlSyntaxError:
    """A :class:`SqlSyntaxError` pointing at ``token`` (whose offsets index ``text``)."""
    return syntax_error(
        text, token.line, _start_col(text, token.start), message, len(token.text) or 1
    )


def from_parse_error(text: str, exc: ParseError) -> SqlSyntaxError:
    """Translate sqlglot's ParseError (line, end column, highlight) into a SqlSyntaxError."""
    if not exc.errors:
        return SqlSyntaxError(f"syntax error: {_first_line(str(exc))}", 1, 1)
    error = exc.errors[0]
    line = int(error.get("line") or 1)
    highlight = str(error.get("highlight") or "")
    end_col = int(error.get("col") or 1)
    one_line = highlight.splitlines()[-1] if highlight else ""
    col = max(end_col - len(one_line) + 1, 1)
    description = _describe(str(error.get("description") or "syntax error"), highlight)
    return syntax_error(text, line, col, description, len(one_line) or 1)


def cannot_recognize(text: str, tokens: Sequence[Token]) -> SqlSyntaxError:
    """Hive's own wording for a statement that starts with no known keyword."""
    near = " ".join(f"'{t.text}'" for t in tokens[:3])
    return error_at_token(text, tokens[0], f"cannot recognize input near {near}")


def _describe(description: str, highlight: str) -> str:
    description = re.sub(r"<Token token_type: [^,]+, text: (.*?), line: .*?>", r"'\1'", description)
    if description.startswith("Required keyword"):
        return f"unexpected {highlight!r}" if highlight else "incomplete statement"
    if "Invalid expression / Unexpected token" in description:
        return f"unexpected {highlight!r}"
    return description


def _start_col(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1) + 1


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else message


def _token_error_position(text: str, exc: TokenError) -> tuple[int, int]:
    offset = exc.end if exc.end is not None else 0
    offset = min(max(offset, 0), max(len(text) - 1, 0))
    return text.count("\n", 0, offset) + 1, _start_col(text, offset)


def lookup_in(*scopes: Mapping[str, str]) -> Callable[[str], str | None]:
    """A variable lookup over ``hivevar:`` and ``hiveconf:`` scopes (first mapping wins for bare names).

    ``scopes`` are (hivevars, hiveconf). A bare ``${x}`` looks in hivevars, then hiveconf, as Hive
    does.
    """
    hivevars = scopes[0] if scopes else {}
    hiveconf = scopes[1] if len(scopes) > 1 else {}

    def lookup(name: str) -> str | None:
        prefix, _, key = name.partition(":")
        if key:
            if prefix == "hivevar":
                return hivevars.get(key)
            if prefix == "hiveconf":
                value = hiveconf.get(key)
                return None if value is None else str(value)
            return None
        if name in hivevars:
            return hivevars[name]
        value = hiveconf.get(name)
        return None if value is None else str(value)

    return lookup
