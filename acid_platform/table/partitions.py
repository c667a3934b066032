"""Partition names and directories, the way Hive spells them.

A partition of a table partitioned by ``(ds string, hr int)`` lives in ``<table>/ds=2024-01-01/hr=7``.
Values are turned into text (Hive's string form of the value), escaped with
``FileUtils.escapePathName`` (``/`` becomes ``%2F``, ``=`` ``%3D``, …), and NULL or empty values
become ``__HIVE_DEFAULT_PARTITION__``. Because every path component is ``<column>=<escaped
value>``, no value can climb out of the table directory (``..`` becomes ``p=..``, a plain name);
:func:`partition_path` checks it anyway.

>>> make_partition_name(["ds", "hr"], ["2024/01", 7])
'ds=2024%2F01/hr=7'
>>> parse_partition_name("ds=2024%2F01/hr=__HIVE_DEFAULT_PARTITION__")
[('ds', '2024/01'), ('hr', None)]
"""

from __future__ import annotations

import datetime as dt
import decimal
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from acid_platform.errors import InvalidPartitionError
from acid_platform.format.fs import join

#: ``hive.exec.default.partition.name``: the directory value of a NULL (or empty) partition value.
DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

# FileUtils.charToEscape: control characters and "#%'*/:=?\^[]{ and DEL.
_ESCAPE = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))


def escape_path_name(value: str) -> str:
    """Hive's ``FileUtils.escapePathName``: ``%XX`` (upper-case hex) for each unsafe character.

    >>> escape_path_name("a/b=c%")
    'a%2Fb%3Dc%25'
    """
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPE else ch for ch in value)


def unescape_path_name(text: str) -> str:
    """Hive's ``FileUtils.unescapePathName``: decode ``%XX`` escapes (others stay as they are)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and _is_hex(text[i + 1 : i + 3]):
            out.append(chr(int(text[i + 1 : i + 3], 16)))
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def partition_value_text(value: Any) -> str | None:
    """The text Hive stores for a partition value (``None`` for NULL).

    >>> partition_value_text(True), partition_value_text(dt.date(2024, 1, 2)), partition_value_text(1.5)
    ('true', '2024-01-02', '1.5')
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return text.rstrip("0").rstrip(".") if "." in text else text
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def make_partition_name(columns: Sequence[str], values: Sequence[Any]) -> str:
    """Hive's ``FileUtils.makePartName``: ``col=escaped value`` joined by ``/``.

    NULL and empty values are written as :data:`DEFAULT_PARTITION_NAME`.
    """
    parts = []
    for col, value in zip(columns, values, strict=True):
        text = partition_value_text(value)
        escaped = DEFAULT_PARTITION_NAME if text is None or text == "" else escape_path_name(text)
        parts.append(f"{escape_path_name(col.lower())}={escaped}")
    return "/".join(parts)


def parse_partition_name(name: str) -> list[tuple[str, str | None]]:
    """``[(column, unescaped value or None)]`` of an escaped partition name."""
    out: list[tuple[str, str | None]] = []
    for part in name.split("/"):
        key, sep, value = part.partition("=")
        if not sep:
            raise InvalidPartitionError(f"partition name {name!r}: {part!r} is not column=value")
        out.append(
            (
                unescape_path_name(key),
                None if value == DEFAULT_PARTITION_NAME else unescape_path_name(value),
            )
        )
    return out


def partition_path(table_path: str, partition_name: str) -> str:
    """The directory of a partition, refusing any name that would leave the table directory."""
    if not partition_name:
        return table_path
    for part in partition_name.split("/"):
        if not part or part in (".", "..") or "=" not in part or part.startswith("="):
            raise InvalidPartitionError(
                f"partition {partition_name!r} would not stay inside the table directory {table_path}"
            )
    path = join(table_path, partition_name)
    root = posixpath.normpath(table_path)
    if (
        posixpath.commonpath([root, posixpath.normpath(path)]) != root
        or posixpath.normpath(path) == root
    ):
        raise InvalidPartitionError(
            f"partition {partition_name!r} would not stay inside the table directory {table_path}"
        )
    return path


def static_partition_values(
    table: str, partition_columns: Sequence[str], partition: Mapping[str, Any]
) -> dict[str, Any]:
    """Validate a static partition spec (``{"ds": "2024-01-01"}``) against the table.

    Keys are matched case-insensitively; all partition columns must be given (Hive also allows a
    static prefix with dynamic rest; here a partial spec means "take the rest from the data").
    """
    if not partition_columns:
        raise InvalidPartitionError(
            f"table {table} is not partitioned; got partition spec {dict(partition)}"
        )
    lowered = {str(k).lower(): v for k, v in partition.items()}
    unknown = sorted(set(lowered) - set(partition_columns))
    if unknown:
        raise InvalidPartitionError(
            f"table {table} has no partition column(s) {unknown}; partition columns are {list(partition_columns)}"
        )
    return lowered


def partition_values_table(
    names: Sequence[str], columns: Sequence[tuple[str, pa.DataType]], table: str
) -> pa.Table:
    """A typed table of the partition values of ``names`` (one row per partition name)."""
    values: dict[str, list[Any]] = {c: [] for c, _ in columns}
    for name in names:
        parsed = dict(parse_partition_name(name))
        for col, _ in columns:
            values[col].append(parsed.get(col))
    arrays = []
    for col, typ in columns:
        try:
            arrays.append(pa.array(values[col], pa.string()).cast(typ))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InvalidPartitionError(
                f"table {table}: partition column {col} has a directory value that is not a {typ}: {exc}"
            ) from exc
    return pa.table(arrays, names=[c for c, _ in columns]) if columns else pa.table({})


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)
