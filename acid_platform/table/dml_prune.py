"""Partition pruning of a MERGE's target from its source (Hive's dynamic partition pruning).

A MERGE's probe (:func:`~acid_platform.table.dml.probe_query`) keeps the target rows some
source row matches: ``SELECT t.* FROM target t WHERE EXISTS (SELECT 1 FROM source s WHERE
<ON>)``. When the ON holds a conjunct ``t.<partition column> = s.<column>``, a target row can
only match in a partition whose value is one of that source column's values: the other
partitions are neither listed nor read (a MERGE of one day's rows into a table of 2,000 days
reads one day).

Only values of the same kind are compared (integers with integers, strings with strings, else
identical types): Hive compares a string with a number as doubles (``'08' = 8``), which a
cast of the source values cannot reproduce — such a MERGE reads every partition, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from acid_platform.metastore.model import TableSpec
from acid_platform.table.expressions import conjuncts
from acid_platform.table.scan_where import ScanFilter


def source_pruning(
    spec: TableSpec, probe: exp.Select | None, source: pa.Table | None
) -> ScanFilter | None:
    """The partitions of ``spec`` a MERGE with ``probe`` over ``source`` can match (``None``:
    the ON equates no partition column with a source column of a comparable type)."""
    if probe is None or source is None or not spec.partition_columns:
        return None
    pairs = _partition_equalities(spec, probe)
    if not pairs:
        return None
    columns = {name.lower(): i for i, name in enumerate(source.column_names)}
    wanted: list[tuple[str, pa.ChunkedArray | pa.Array]] = []
    for target_col, source_col in pairs:
        index = columns.get(source_col)
        if index is not None:
            wanted.append((target_col, source.column(index)))
    if not wanted:
        return None

    def partitions(values: pa.Table) -> Sequence[int]:
        keep = np.ones(values.num_rows, dtype=bool)
        for target_col, column in wanted:
            value_set = _comparable(column, values.schema.field(target_col).type)
            if value_set is None:
                continue  # not comparable without Hive's conversions: no pruning on it
            hit = pc.is_in(values.column(target_col), value_set=value_set)
            keep &= pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
        return [int(i) for i in np.flatnonzero(keep)]

    return ScanFilter(partitions=partitions)


def _partition_equalities(spec: TableSpec, probe: exp.Select) -> list[tuple[str, str]]:
    """``(partition column, source column)`` of each ``t.p = s.c`` conjunct of the ON."""
    exists = probe.find(exp.Exists)
    star = probe.expressions[0] if probe.expressions else None
    if (
        exists is None
        or not isinstance(star, exp.Column)
        or not isinstance(exists.this, exp.Select)
    ):
        return []
    where = exists.this.args.get("where")
    if where is None:
        return []
    target = star.table
    part_cols = set(spec.partition_column_names)
    pairs = []
    for node in conjuncts(where.this):
        if not isinstance(node, exp.EQ):
            continue
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column) or not isinstance(right, exp.Column):
            continue
        if right.table == target:
            left, right = right, left
        if left.table == target and right.table != target and left.name in part_cols:
            pairs.append((left.name, right.name.lower()))
    return pairs


def _comparable(column: pa.ChunkedArray | pa.Array, typ: pa.DataType) -> pa.Array | None:
    """The distinct non-NULL values of ``column`` as ``typ``, when they compare with a
    partition column of ``typ`` as Hive compares them (``None`` otherwise)."""
    values = pc.unique(column).drop_null()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    same_kind = values.type == typ or (
        (pa.types.is_integer(values.type) and pa.types.is_integer(typ))
        or (_is_text(values.type) and _is_text(typ))
    )
    if not same_kind:
        return None
    try:
        return values.cast(typ)  # safe: an integer beyond the column's range refuses
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _is_text(typ: pa.DataType) -> bool:
    return bool(pa.types.is_string(typ) or pa.types.is_large_string(typ))


__all__ = ["source_pruning"]
