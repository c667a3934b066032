"""The order a statement writes new rows in, so their ROW__IDs depend on nothing but the data.

Row ids are numbered in the order rows reach a file. An engine returns a join's rows in whatever
order its threads finish, so without a rule the same MERGE would give its rows other ROW__IDs on
another run, and a Mutation API change set could never be checked against the MERGE it stands
for. The rule (Hive sorts UPDATE and DELETE output by ROW__ID, ``SORT BY ROW__ID``):

* rows that replace or remove existing rows go in the order of the old rows' ROW__IDs;
* new rows go in the order of their values: every column that can be ordered, in table order,
  ascending, NULLs first (nested columns — struct, list, map — take no part; rows equal in all
  the others keep their input order).

>>> import pyarrow as pa
>>> t = pa.table({"id": [2, None, 1], "tags": [["b"], ["a"], ["c"]]})
>>> sort_rows(t).column("id").to_pylist()
[None, 1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc


def orderable_columns(schema: pa.Schema) -> list[str]:
    """The columns :func:`sort_rows` orders by: all but nested and dictionary ones."""
    return [
        f.name
        for f in schema
        if not pa.types.is_nested(f.type) and not pa.types.is_dictionary(f.type)
    ]


def sort_rows(rows: pa.Table, first: Sequence[str] = (), *, values: bool = True) -> pa.Table:
    """``rows`` sorted by the ``first`` columns, then (``values``) by every orderable column in
    order; ascending, NULLs first, stable."""
    keys = list(first)
    if values:
        keys += [c for c in orderable_columns(rows.schema) if c not in keys]
    if rows.num_rows < 2 or not keys:
        return rows
    try:  # pyarrow >= 25 places NULLs per key
        order = pc.sort_indices(rows, sort_keys=[(k, "ascending", "at_start") for k in keys])
    except (TypeError, ValueError):  # older pyarrow: one placement for all keys
        order = pc.sort_indices(
            rows, sort_keys=[(k, "ascending") for k in keys], null_placement="at_start"
        )
    return rows.take(order)


__all__ = ["orderable_columns", "sort_rows"]
