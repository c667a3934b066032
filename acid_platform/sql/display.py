"""Values as Hive prints them: ``NULL``, ``true``, structs and maps as compact JSON.

Hive's CLI shows a ROW__ID as ``{"writeid":1,"bucketid":536870912,"rowid":0}``, a map as
``{"k":1}``, an array as ``[1,2]``, timestamps as ``2018-06-01 01:02:02`` (fraction only when
non-zero). :func:`hive_text` does the same for any Arrow value, :func:`jsonable` gives the
equivalent JSON-ready Python value.

>>> hive_text({"writeid": 1, "bucketid": 536870912, "rowid": 0})
'{"writeid":1,"bucketid":536870912,"rowid":0}'
>>> hive_text(None), hive_text(True), hive_text(2.5)
('NULL', 'true', '2.5')
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import pyarrow as pa


def hive_text(value: Any) -> str:
    """The text Hive's CLI prints for ``value`` (a Python value from Arrow's ``as_py``)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list | tuple):
        return json.dumps(jsonable(value), separators=(",", ":"), ensure_ascii=False)
    return _scalar_text(value)


def jsonable(value: Any) -> Any:
    """A JSON-ready form of ``value``: nested values kept, dates/decimals as Hive's text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else str(value)
        )
    if isinstance(value, dict):
        return {str(_key(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        # Arrow gives maps as lists of (key, value) pairs.
        if value and all(isinstance(p, tuple) and len(p) == 2 for p in value):
            return {str(_key(k)): jsonable(v) for k, v in value}
        return [jsonable(v) for v in value]
    return _scalar_text(value)


def column_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The Python values of ``column``, maps (at any depth) as dicts: Arrow gives a map as a
    list of pairs, so an empty map would print as ``[]`` where Hive prints ``{}``.

    >>> hive_text(column_values(pa.array([[]], pa.map_(pa.int64(), pa.int64())))[0])
    '{}'
    """
    values = column.to_pylist()
    if not _has_map(column.type):
        return values
    return [_with_dicts(v, column.type) for v in values]


def rows_as_text(table: pa.Table) -> list[list[str]]:
    """Every row of ``table`` as Hive's text for each value."""
    columns = [column_values(table.column(i)) for i in range(table.num_columns)]
    return [[hive_text(col[r]) for col in columns] for r in range(table.num_rows)]


def rows_as_json(table: pa.Table) -> list[dict[str, Any]]:
    """Every row of ``table`` as a JSON-ready dict (duplicate names keep the last value)."""
    names = table.column_names
    columns = [column_values(table.column(i)) for i in range(table.num_columns)]
    return [
        {names[c]: jsonable(columns[c][r]) for c in range(len(names))}
        for r in range(table.num_rows)
    ]


def _has_map(typ: pa.DataType) -> bool:
    if pa.types.is_map(typ):
        return True
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return _has_map(typ.value_type)
    if pa.types.is_struct(typ):
        return any(_has_map(typ.field(i).type) for i in range(typ.num_fields))
    return False


def _with_dicts(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_map(typ):
        return {k: _with_dicts(v, typ.item_type) for k, v in value}
    if pa.types.is_struct(typ):
        return {
            f.name: _with_dicts(value.get(f.name), f.type)
            for f in (typ.field(i) for i in range(typ.num_fields))
        }
    if isinstance(value, list) and hasattr(typ, "value_type"):
        return [_with_dicts(v, typ.value_type) for v in value]
    return value


def _key(key: Any) -> Any:
    return hive_text(key) if not isinstance(key, str | int) else key


def _scalar_text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dt.timedelta):
        return str(value)
    return str(value)
