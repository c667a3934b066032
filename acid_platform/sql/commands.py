"""Hive-only statements that sqlglot's Hive parser does not model, read from tokens.

``BEGIN`` / ``START TRANSACTION`` / ``COMMIT`` / ``ROLLBACK``, ``ABORT TRANSACTIONS``, the
``SHOW`` family, ``SET``, and ``ALTER TABLE … COMPACT``. Each is read with a small cursor over the
statement's tokens (never with a regular expression over the text), so errors point at the token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sqlglot.tokens import Token, TokenType

from acid_platform.errors import SemanticError, SqlSyntaxError
from acid_platform.sql.script import (
    Chunk,
    error_at_token,
    split_script,
    syntax_error,
    tokens_after,
)
from acid_platform.sql.statements import (
    AbortTransactions,
    Begin,
    Commit,
    Compact,
    Rollback,
    SetVariable,
    Show,
    ShowCompactions,
    SqlSource,
    Statement,
    TableName,
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_command(chunk: Chunk, source: SqlSource) -> Statement | None:
    """The statement of ``chunk`` when it is one of the Hive-only commands, else None."""
    words = [t.text.upper() for t in chunk.tokens[:3]]
    first = words[0]
    parser: Callable[[Cursor], Statement] | None = None
    if first == "BEGIN" or words[:2] == ["START", "TRANSACTION"]:
        parser = _begin
    elif first == "COMMIT":
        parser = _commit
    elif first == "ROLLBACK":
        parser = _rollback
    elif first == "ABORT":
        parser = _abort
    elif first == "SHOW":
        parser = _show
    elif first == "SET":
        parser = _set
    elif words[:2] == ["ALTER", "TABLE"] and _has_word(chunk.tokens, "COMPACT"):
        parser = _compact
    if parser is None:
        return None
    tokens = list(chunk.tokens)
    if first == "SHOW":
        tokens = [tokens[0], *tokens_after(chunk, tokens[0])]
    return parser(Cursor(chunk, tokens, source))


def parse_partition_spec(text: str) -> tuple[tuple[str, object], ...]:
    """A partition spec given on its own, as inside ``PARTITION (…)``: ``ds='2024-01-01', h=1``
    (a command-line option); anything else in ``text`` is a syntax error.

    >>> parse_partition_spec("ds='2024-01-01', h=1")
    (('ds', '2024-01-01'), ('h', 1))
    """
    chunks = split_script(text)
    if len(chunks) != 1:
        raise SqlSyntaxError(f"expected one partition spec (k='v', …), found {text!r}", 1, 1)
    chunk = chunks[0]
    cursor = Cursor(chunk, chunk.tokens, SqlSource(chunk.text, chunk.line, chunk.col))
    items = cursor.partition_items()
    cursor.end()
    return items


class Cursor:
    """Reads one statement's tokens left to right; errors point at the current token."""

    def __init__(self, chunk: Chunk, tokens: Sequence[Token], source: SqlSource) -> None:
        self.chunk = chunk
        self.tokens = list(tokens)
        self.source = source
        self.pos = 0

    def peek(self, offset: int = 0) -> Token | None:
        """The token ``offset`` ahead, or None past the end."""
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def word(self, offset: int = 0) -> str:
        """The upper-cased text of the token ``offset`` ahead ('' past the end)."""
        token = self.peek(offset)
        return (
            token.text.upper() if token is not None and token.token_type != TokenType.STRING else ""
        )

    def accept(self, *words: str) -> bool:
        """Consume ``words`` (a sequence of keywords) if they come next."""
        if all(self.word(i) == w for i, w in enumerate(words)):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        """Consume ``words`` or fail naming what was expected."""
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def at_end(self) -> bool:
        """True when every token was consumed."""
        return self.pos >= len(self.tokens)

    def end(self) -> None:
        """Fail unless every token was consumed."""
        if not self.at_end():
            raise self.error("unexpected text at the end of the statement")

    def name(self, what: str = "name") -> str:
        """An identifier (plain, back-quoted, or a keyword used as a name), lower-cased."""
        token = self.peek()
        if token is None:
            raise self.error(f"expected a {what}")
        if token.token_type == TokenType.IDENTIFIER or (
            token.token_type not in (TokenType.STRING, TokenType.NUMBER)
            and _WORD.fullmatch(token.text)
        ):
            self.pos += 1
            return token.text.lower()
        raise self.error(f"expected a {what}")

    def table_name(self) -> TableName:
        """``name`` or ``database.name``."""
        first = self.name("table name")
        if self.peek() is not None and self.peek().token_type == TokenType.DOT:  # type: ignore[union-attr]
            self.pos += 1
            return TableName(self.name("table name"), first)
        return TableName(first)

    def peek_is_string(self) -> bool:
        """True when a string literal comes next."""
        token = self.peek()
        return token is not None and token.token_type == TokenType.STRING

    def string(self, what: str = "string literal") -> str:
        """A quoted string literal's value."""
        token = self.peek()
        if token is None or token.token_type != TokenType.STRING:
            raise self.error(f"expected a {what}")
        self.pos += 1
        return token.text

    def integer(self, what: str = "number") -> int:
        """An integer literal."""
        token = self.peek()
        if token is None or token.token_type != TokenType.NUMBER or not token.text.isdigit():
            raise self.error(f"expected a {what}")
        self.pos += 1
        return int(token.text)

    def literal(self) -> object:
        """A constant: string, number, TRUE/FALSE (partition values)."""
        token = self.peek()
        if token is None:
            raise self.error("expected a value")
        self.pos += 1
        if token.token_type == TokenType.STRING:
            return token.text
        if token.token_type == TokenType.NUMBER:
            return int(token.text) if token.text.lstrip("-").isdigit() else float(token.text)
        if token.text.upper() in ("TRUE", "FALSE"):
            return token.text.upper() == "TRUE"
        self.pos -= 1
        raise self.error("expected a constant value")

    def partition_spec(self) -> tuple[tuple[str, object], ...]:
        """``PARTITION (k = v, …)`` with every value given."""
        self.expect("PARTITION")
        self.punct(TokenType.L_PAREN, "(")
        items = self.partition_items()
        self.punct(TokenType.R_PAREN, ")")
        return items

    def partition_items(self) -> tuple[tuple[str, object], ...]:
        """``k = v, …`` (the inside of a partition spec)."""
        items: list[tuple[str, object]] = []
        while True:
            key = self.name("partition column")
            self.punct(TokenType.EQ, "=")
            items.append((key, self.literal()))
            if not self.accept_punct(TokenType.COMMA):
                break
        return tuple(items)

    def punct(self, kind: TokenType, text: str) -> None:
        """Consume a punctuation token of ``kind``."""
        if not self.accept_punct(kind):
            raise self.error(f"expected '{text}'")

    def accept_punct(self, kind: TokenType) -> bool:
        """Consume a token of ``kind`` if it comes next."""
        token = self.peek()
        if token is not None and token.token_type == kind:
            self.pos += 1
            return True
        return False

    def error(self, message: str) -> SqlSyntaxError:
        """A syntax error at the current token (or just after the last one)."""
        token = self.peek()
        if token is None:
            last = self.tokens[-1]
            lines = self.chunk.script.splitlines()
            line_text = lines[last.line - 1] if last.line - 1 < len(lines) else ""
            return syntax_error(
                self.chunk.script, last.line, len(line_text) + 1, f"{message} at the end"
            )
        shown = token.text if token.token_type != TokenType.STRING else f"'{token.text}'"
        return error_at_token(self.chunk.script, token, f"{message}, found {shown!r}")


# --------------------------------------------------------------------------- statements
def _begin(c: Cursor) -> Statement:
    if not c.accept("BEGIN"):
        c.expect("START", "TRANSACTION")
    else:
        c.accept("TRANSACTION") or c.accept("WORK")
    c.end()
    return Begin(source=c.source)


def _commit(c: Cursor) -> Statement:
    c.expect("COMMIT")
    c.accept("WORK") or c.accept("TRANSACTION")
    c.end()
    return Commit(source=c.source)


def _rollback(c: Cursor) -> Statement:
    c.expect("ROLLBACK")
    c.accept("WORK") or c.accept("TRANSACTION")
    c.end()
    return Rollback(source=c.source)


def _abort(c: Cursor) -> Statement:
    c.expect("ABORT", "TRANSACTIONS")
    ids = [c.integer("transaction id")]
    while not c.at_end():
        c.accept_punct(TokenType.COMMA)
        ids.append(c.integer("transaction id"))
    return AbortTransactions(tuple(ids), source=c.source)


def _show(c: Cursor) -> Statement:
    c.expect("SHOW")
    if c.accept("TRANSACTIONS"):
        c.end()
        return Show("transactions", source=c.source)
    if c.accept("COMPACTIONS"):
        return _show_compactions(c)
    if c.accept("LOCKS"):
        table = None
        if not c.at_end() and c.word() not in ("EXTENDED",):
            if c.accept("DATABASE") or c.accept("SCHEMA"):
                database = c.name("database name")
                c.accept("EXTENDED")
                c.end()
                return Show("locks", database=database, source=c.source)
            table = c.table_name()
        partition = c.partition_spec() if table is not None and c.word() == "PARTITION" else ()
        c.accept("EXTENDED")
        c.end()
        return Show("locks", table=table, partition=partition, source=c.source)
    if c.accept("TABLE"):
        c.expect("STATUS")
        in_database = c.name("database name") if c.accept("IN") or c.accept("FROM") else None
        pattern = _pattern(c)
        c.end()
        return Show("table_status", database=in_database, pattern=pattern, source=c.source)
    if c.accept("TABLES"):
        in_database = c.name("database name") if c.accept("IN") or c.accept("FROM") else None
        pattern = _pattern(c)
        c.end()
        return Show("tables", database=in_database, pattern=pattern, source=c.source)
    if c.accept("DATABASES") or c.accept("SCHEMAS"):
        pattern = _pattern(c)
        c.end()
        return Show("databases", pattern=pattern, source=c.source)
    if c.accept("COLUMNS"):
        if not (c.accept("IN") or c.accept("FROM")):
            raise c.error("expected IN or FROM")
        table = c.table_name()
        if c.accept("IN") or c.accept("FROM"):
            table = TableName(table.name, c.name("database name"))
        c.end()
        return Show("columns", table=table, source=c.source)
    if c.accept("TBLPROPERTIES"):
        table = c.table_name()
        c.end()
        return Show("tblproperties", table=table, source=c.source)
    if c.accept("PARTITIONS"):
        table = c.table_name()
        c.end()
        return Show("partitions", table=table, source=c.source)
    raise c.error(
        "expected TRANSACTIONS, LOCKS, COMPACTIONS, TABLES, TABLE STATUS, DATABASES, COLUMNS, "
        "TBLPROPERTIES or PARTITIONS"
    )


def _show_compactions(c: Cursor) -> Statement:
    """After ``SHOW COMPACTIONS`` (Hive 4's grammar; ``STATE`` is taken for ``STATUS``)."""
    target: dict[str, object] = {}
    token = c.peek()
    if token is not None and token.token_type == TokenType.NUMBER:
        target["compaction_id"] = c.integer("compaction id")
    elif c.accept("DATABASE") or c.accept("SCHEMA"):
        target["database"] = c.name("database name")
    elif not c.at_end() and c.word() not in _SHOW_COMPACTIONS_CLAUSES:
        target["table"] = c.table_name()
        if c.word() == "PARTITION":
            target["partition"] = c.partition_spec()
    pool = c.string("pool name") if c.accept("POOL") else None
    ctype = c.string("compaction type").lower() if c.accept("TYPE") else None
    status = (
        c.string("compaction status").lower() if c.accept("STATUS") or c.accept("STATE") else None
    )
    order = _order_by(c, "order key", strings=True)
    limit = c.integer("limit") if c.accept("LIMIT") else None
    c.end()
    return ShowCompactions(
        **target,  # type: ignore[arg-type]
        pool=pool,
        type=ctype,
        status=status,
        order_by=tuple(order),
        limit=limit,
        source=c.source,
    )


def _order_by(c: Cursor, what: str, *, strings: bool = False) -> list[tuple[str, bool]]:
    """``[ORDER BY key [ASC|DESC], …]`` as ``(key lower-cased, descending)`` pairs; ``strings``
    also takes quoted keys."""
    order: list[tuple[str, bool]] = []
    if not (c.accept("ORDER BY") or c.accept("ORDER", "BY")):  # sqlglot: one token, or two
        return order
    while True:
        key = c.string(what) if strings and c.peek_is_string() else c.name(what)
        descending = c.accept("DESC")
        if not descending:
            c.accept("ASC")
        order.append((key.lower(), descending))
        if not c.accept_punct(TokenType.COMMA):
            return order


_SHOW_COMPACTIONS_CLAUSES = ("POOL", "TYPE", "STATUS", "STATE", "ORDER", "ORDER BY", "LIMIT")


def _pattern(c: Cursor) -> str | None:
    if c.accept("LIKE"):
        return c.string("pattern")
    token = c.peek()
    if token is not None and token.token_type == TokenType.STRING:
        return c.string("pattern")
    return None


def _set(c: Cursor) -> Statement:
    # Hive's SetProcessor splits the raw text on the first '=': the value is everything after it,
    # quotes and all (it is substituted into later statements verbatim).
    c.expect("SET")
    if c.at_end():
        return SetVariable(source=c.source)
    text, script = c.chunk.text, c.chunk.script
    offset = c.chunk.tokens[0].start
    key_start = c.peek().start  # type: ignore[union-attr]
    eq = next((t for t in c.tokens[c.pos :] if t.token_type == TokenType.EQ), None)
    if eq is None:
        key = text[key_start - offset :].strip()
        if key == "-v":
            return SetVariable(source=c.source)
        return SetVariable(_check_key(c, key), source=c.source)
    key = script[key_start : eq.start].strip()
    value = text[eq.end + 1 - offset :].strip()
    return SetVariable(_check_key(c, key), value, source=c.source)


def _check_key(c: Cursor, key: str) -> str:
    if not key or any(ch.isspace() for ch in key):
        raise c.error("expected SET key=value")
    return key


def _compact(c: Cursor) -> Statement:
    c.expect("ALTER", "TABLE")
    table = c.table_name()
    partition = c.partition_spec() if c.word() == "PARTITION" else ()
    c.expect("COMPACT")
    kind = c.string("compaction type ('minor', 'major' or 'rebalance')").lower()
    if kind not in ("minor", "major", "rebalance"):
        c.pos -= 1
        raise c.error("compaction type must be 'minor', 'major' or 'rebalance'")
    buckets = None
    if c.accept("CLUSTERED"):
        c.expect("INTO")
        buckets = c.integer("number of buckets")
        c.expect("BUCKETS")
    wait = c.accept("AND", "WAIT")
    pool = c.string("pool name") if c.accept("POOL") else None
    properties: list[tuple[str, str]] = []
    if c.accept("WITH"):
        c.expect("OVERWRITE", "TBLPROPERTIES")
        c.punct(TokenType.L_PAREN, "(")
        while True:
            key = c.string("property name")
            c.punct(TokenType.EQ, "=")
            properties.append((key, c.string("property value")))
            if not c.accept_punct(TokenType.COMMA):
                break
        c.punct(TokenType.R_PAREN, ")")
    order = _order_by(c, "column name")
    c.end()
    if kind != "rebalance" and (buckets is not None or order):
        raise SemanticError(
            "CLUSTERED INTO n BUCKETS and ORDER BY can only be used with 'rebalance' compaction"
        )
    return Compact(
        table,
        "minor" if kind == "minor" else "major" if kind == "major" else "rebalance",
        partition,
        wait,
        pool,
        tuple(properties),
        buckets,
        tuple(order),
        source=c.source,
    )


def _has_word(tokens: Sequence[Token], word: str) -> bool:
    return any(t.text.upper() == word and t.token_type != TokenType.STRING for t in tokens)
