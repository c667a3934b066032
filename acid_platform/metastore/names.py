"""Validation of the names the metastore stores: identifiers, partition names, type strings.

Identifiers (databases, tables, columns) are ``[A-Za-z_][A-Za-z0-9_]*`` and are stored
lower-case, as Hive does. A partition name is Hive's escaped form ``k1=v1/k2=v2``: keys are
lower-cased partition column names, values keep their case and carry ``%XX`` escapes for the
characters Hive's ``FileUtils.escapePathName`` escapes.

>>> normalize_identifier("Web_Sales")
'web_sales'
>>> normalize_partition_name("DS=2024-01-01/Hr=07")
'ds=2024-01-01/hr=07'
>>> split_partition_name("ds=2024%2F01/hr=7")
[('ds', '2024%2F01'), ('hr', '7')]
>>> split_table_name("Sales.Web_Sales"), split_table_name("employee")
(('sales', 'web_sales'), ('default', 'employee'))
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from acid_platform.errors import InvalidNameError

#: The database a table name without ``db.`` belongs to (and a new session starts in).
DEFAULT_DATABASE = "default"
MAX_IDENTIFIER_LENGTH = 128
MAX_PARTITION_NAME_LENGTH = 767
#: Bytes a directory name may take on common file systems (NAME_MAX of ext4, XFS, APFS, S3 keys
#: allow more): each ``k=v`` of a partition name is one directory.
MAX_PATH_COMPONENT_BYTES = 255
#: Database names that would collide with the warehouse's own files (``<root>/<db>.db`` would be
#: the SQLite metastore ``_metastore.db``).
RESERVED_DATABASE_NAMES = frozenset({"_metastore"})

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Characters Hive escapes in partition values (FileUtils.charToEscape), '%' handled apart.
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#'*/:=?\\\x7f{[]^") + ["\x00"])
_HEX = frozenset("0123456789abcdefABCDEF")


def normalize_identifier(name: object, what: str = "name") -> str:
    """Validate a database/table/column name and return it lower-cased.

    >>> normalize_identifier("1abc")
    Traceback (most recent call last):
    ...
    acid_platform.errors.InvalidNameError: name '1abc' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)
    """
    if not isinstance(name, str):
        raise InvalidNameError(f"{what} {name!r} is not a string")
    if not _IDENTIFIER.fullmatch(name):
        raise InvalidNameError(f"{what} {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if len(name) > MAX_IDENTIFIER_LENGTH:
        raise InvalidNameError(f"{what} {name!r} is longer than {MAX_IDENTIFIER_LENGTH} characters")
    return name.lower()


def database_name_to_create(name: object) -> str:
    """:func:`normalize_identifier` of a new database's name, refusing reserved names."""
    db = normalize_identifier(name, "database name")
    if db in RESERVED_DATABASE_NAMES:
        raise InvalidNameError(
            f"database name {db!r} is reserved (it would collide with the warehouse's metastore "
            "file); choose another name"
        )
    return db


def require_absolute_location(location: str, what: str) -> str:
    """``location`` if it is an absolute path or a URI (a relative one would resolve against
    each process's working directory); :class:`InvalidNameError` otherwise."""
    if not isinstance(location, str) or not ("://" in location or location.startswith("/")):
        raise InvalidNameError(f"{what} location {location!r} must be an absolute path or a URI")
    return location


def split_table_name(name: object) -> tuple[str, str]:
    """``(db, table)`` of ``table`` or ``db.table``, validated and lower-cased; a name without a
    database is in :data:`DEFAULT_DATABASE`."""
    if not isinstance(name, str):
        raise InvalidNameError(f"table name {name!r} is not a string")
    db, dot, table = name.rpartition(".")
    return (
        normalize_identifier(db if dot else DEFAULT_DATABASE, "database name"),
        normalize_identifier(table, "table name"),
    )


def choices_text(name: str, choices: Sequence[str], what: str, limit: int = 20) -> str:
    """What an error about ``name``, which is none of ``choices``, adds to say what there is:
    ``; the databases are: default, retail (did you mean retail?)``.

    >>> choices_text("retial", ["default", "retail"], "databases")
    '; the databases are: default, retail (did you mean retail?)'
    """
    import difflib

    if not choices:
        return f"; there are no {what}"
    shown = ", ".join(choices[:limit])
    if len(choices) > limit:
        shown += f", … ({len(choices)} in all)"
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"; the {what} are: {shown}" + (f" (did you mean {close[0]}?)" if close else "")


def split_partition_name(name: str) -> list[tuple[str, str]]:
    """Split an escaped partition name into (key, escaped value) pairs, validating it."""
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"partition name {name!r} is empty or not a string")
    if len(name) > MAX_PARTITION_NAME_LENGTH:
        raise InvalidNameError(
            f"partition name {name!r} is longer than {MAX_PARTITION_NAME_LENGTH} characters"
        )
    out: list[tuple[str, str]] = []
    for part in name.split("/"):
        if len(part.encode("utf-8")) > MAX_PATH_COMPONENT_BYTES:
            raise InvalidNameError(
                f"partition name {name[:80]!r}...: {part[:40]!r}... takes "
                f"{len(part.encode('utf-8'))} bytes as a directory name; file systems allow "
                f"{MAX_PATH_COMPONENT_BYTES}"
            )
        key, sep, value = part.partition("=")
        if not sep or not value:
            raise InvalidNameError(
                f"partition name {name!r}: {part!r} is not key=value (values are escaped, "
                "e.g. '/' as %2F)"
            )
        _check_escaped_value(name, value)
        out.append((normalize_identifier(key, f"partition key in {name!r}"), value))
    keys = [k for k, _ in out]
    if len(set(keys)) != len(keys):
        raise InvalidNameError(f"partition name {name!r} repeats a key")
    return out


def normalize_partition_name(name: str, partition_columns: Sequence[str] | None = None) -> str:
    """Validate an escaped partition name; keys lower-cased, checked against the table if given.

    >>> normalize_partition_name("a=1", ["a", "b"])
    Traceback (most recent call last):
    ...
    acid_platform.errors.InvalidNameError: partition name 'a=1' has keys ['a'], the table is partitioned by ['a', 'b']
    """
    pairs = split_partition_name(name)
    keys = [k for k, _ in pairs]
    if partition_columns is not None and keys != list(partition_columns):
        raise InvalidNameError(
            f"partition name {name!r} has keys {keys}, the table is partitioned by "
            f"{list(partition_columns)}"
        )
    return "/".join(f"{k}={v}" for k, v in pairs)


def normalize_hive_type(hive_type: object, what: str = "type") -> str:
    """A Hive type string, stripped and lower-cased (``DECIMAL(10, 2)`` -> ``decimal(10, 2)``)."""
    if not isinstance(hive_type, str) or not hive_type.strip():
        raise InvalidNameError(f"{what}: type {hive_type!r} is not a Hive type name")
    text = hive_type.strip().lower()
    if any(ch in text for ch in "\x00\n\r\t;"):
        raise InvalidNameError(f"{what}: type {hive_type!r} holds a forbidden character")
    if not text[0].isalpha():
        raise InvalidNameError(f"{what}: type {hive_type!r} is not a Hive type name")
    return text


def _check_escaped_value(name: str, value: str) -> None:
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "%":
            digits = value[i + 1 : i + 3]
            if len(digits) != 2 or not set(digits) <= _HEX:
                raise InvalidNameError(f"partition name {name!r}: bad %-escape in value {value!r}")
            i += 3
            continue
        if ch in _ESCAPED:
            raise InvalidNameError(
                f"partition name {name!r}: value {value!r} holds {ch!r}, which must be escaped "
                f"as %{ord(ch):02X}"
            )
        i += 1
