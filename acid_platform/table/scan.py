"""Snapshot scans: the rows of a table as one snapshot sees them.

A scan lists the table's partition directories, prunes them with the part of the filter that
only names partition columns, reads each remaining directory with the format layer's
merge-on-read (:func:`~acid_platform.format.read_acid`), adds the partition columns as typed
constants, and filters the rows with the rest of the predicate (evaluated by the engine).
Conjuncts of the simple form ``column <op> literal`` (and ``IN``/``BETWEEN`` lists of literals)
on data columns are also handed to the reader as DNF ``filters``: they skip stripes whose ORC
statistics rule them out and drop rows before the engine sees them. The engine still evaluates
the whole predicate, so the pushed part only ever removes rows the predicate removes too.
Partition columns come last, as Hive shows them; ``row__id`` comes first when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from acid_platform.errors import UnknownColumnError
from acid_platform.format import (
    ROW_ID_COLUMN,
    ROW_ID_FIELDS,
    ROW_ID_TYPE,
    DeleteSet,
    ValidTxnList,
    ValidWriteIdList,
    list_partition_dirs,
    read_acid,
)
from acid_platform.format.fs import Location
from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml import BUCKET_ID, ROW_ID, WRITE_ID
from acid_platform.table.engine import Engine
from acid_platform.table.expressions import (
    Scope,
    and_all,
    conjuncts,
    quoted,
    resolve,
    to_expression,
)
from acid_platform.table.partitions import partition_values_table
from acid_platform.table.schema import data_schema, partition_schema, table_schema

#: DNF conjunction handed to :func:`~acid_platform.format.read_acid` (``[(col, op, value)]``).
Filters = list[tuple[str, str, Any]]

_INDEX = "__acid_idx"
_RELATION = "__acid_rows"
_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_INTEGER_TYPES = {"tinyint": 8, "smallint": 16, "int": 32, "integer": 32, "bigint": 64}


@dataclass(frozen=True)
class Snapshot:
    """What a scan reads: the global txn snapshot and the table's write id list."""

    valid_txns: ValidTxnList
    write_ids: ValidWriteIdList


@dataclass(frozen=True)
class PartitionDir:
    """One directory a scan reads: its partition name (``""`` when unpartitioned), path and
    typed partition values (a one-row table; ``None`` when unpartitioned)."""

    name: str
    path: str
    values: pa.Table | None


def scan_table(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    engine: Engine,
    *,
    columns: Sequence[str] | None = None,
    filter: str | exp.Expr | None = None,  # noqa: A002 - the public name
    with_row_id: bool = False,
    include_partition_columns: bool = True,
) -> pa.Table:
    """Rows of ``spec`` visible in ``snapshot``, optionally filtered by a Hive predicate."""
    schema = table_schema(spec)
    wanted = _wanted_columns(spec, schema, columns, include_partition_columns)
    predicate = _resolve_filter(spec, schema, filter) if filter is not None else None
    needed = list(wanted)
    if predicate is not None:
        needed += [c for c in _referenced(predicate) if c not in needed]
    filters = pushdown_filters(spec, predicate) if predicate is not None else None
    table = read_partitions(
        spec,
        location,
        snapshot,
        list_partitions(spec, location, engine, predicate),
        needed,
        with_row_id=with_row_id,
        filters=filters,
    )
    if predicate is not None and table.num_rows:
        table = _filter(table, predicate, engine)
    keep = ([ROW_ID_COLUMN] if with_row_id else []) + list(wanted)
    return table.select(keep)


def list_partitions(
    spec: TableSpec, location: Location, engine: Engine, predicate: exp.Expr | None = None
) -> list[PartitionDir]:
    """The table's partition directories, pruned by the conjuncts of ``predicate`` (resolved
    against the table) that name only partition columns."""
    listed = list_partition_dirs(
        location.path, list(spec.partition_column_names), location.filesystem
    )
    if not spec.partition_columns:
        return [PartitionDir(name, path, None) for name, path in listed]
    names = [n for n, _ in listed]
    columns = [(f.name, f.type) for f in partition_schema(spec)]
    values = partition_values_table(names, columns, spec.full_name)
    if predicate is not None and names:
        parts = set(spec.partition_column_names)
        pruning = [
            c for c in conjuncts(predicate) if _referenced(c) and set(_referenced(c)) <= parts
        ]
        if pruning:
            keep = _matching_indices(values, and_all(pruning), engine)
            listed = [listed[i] for i in keep]
            values = values.take(pa.array(keep, pa.int64()))
    return [PartitionDir(name, path, values.slice(i, 1)) for i, (name, path) in enumerate(listed)]


def read_partitions(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    partitions: Sequence[PartitionDir],
    columns: Sequence[str],
    *,
    with_row_id: bool = False,
    filters: Filters | None = None,
    row_ids: Sequence[DeleteSet | None] | None = None,
) -> pa.Table:
    """The visible rows of ``partitions`` with ``columns`` (data and partition columns, in table
    order in the result), ``row__id`` first when asked for.

    ``row_ids`` (one entry per partition) restricts each partition to those ROW__IDs.
    """
    schema = table_schema(spec)
    data_cols = [c for c, _ in spec.columns if c in columns]
    part_cols = [c for c in spec.partition_column_names if c in columns]
    out_schema = _output_schema(schema, data_cols + part_cols, with_row_id)
    pieces = []
    for i, part in enumerate(partitions):
        wanted = row_ids[i] if row_ids is not None else None
        rows = read_acid(
            part.path,
            snapshot.write_ids,
            snapshot.valid_txns,
            columns=data_cols,
            with_row_id=with_row_id,
            filters=filters or None,
            schema=data_schema(spec),
            filesystem=location.filesystem,
            row_ids=wanted,
        )
        for col in part_cols:
            value = part.values.column(col)[0] if part.values is not None else None
            rows = rows.append_column(
                schema.field(col), pa.repeat(value, rows.num_rows).cast(schema.field(col).type)
            )
        pieces.append(rows.select(out_schema.names))
    return pa.concat_tables(pieces) if pieces else out_schema.empty_table()


def target_relation(
    table: pa.Table, spec: TableSpec, columns: Sequence[str] | None = None
) -> pa.Table:
    """The ``target`` relation of the DML plan from a scan with ``row__id``: ROW__ID flattened
    into three columns, then data and partition columns.

    With ``columns``, table columns not among them are typed NULL columns: the plan still sees
    every column, but only ``columns`` are read.
    """
    row_id = table.column(ROW_ID_COLUMN)
    arrays: list[pa.Array | pa.ChunkedArray] = [pc.struct_field(row_id, f) for f in ROW_ID_FIELDS]
    names = [WRITE_ID, BUCKET_ID, ROW_ID]
    for f in table_schema(spec):
        if columns is None or f.name in columns:
            arrays.append(table.column(f.name))
        else:
            arrays.append(pa.nulls(table.num_rows, f.type))
        names.append(f.name)
    return pa.table(arrays, names=names)


def partition_pruning_predicate(spec: TableSpec, filter: str | exp.Expr | None) -> exp.Expr | None:  # noqa: A002
    """The conjuncts of ``filter`` that name only partition columns (``None`` if there are none)."""
    if filter is None or not spec.partition_columns:
        return None
    predicate = _resolve_filter(spec, table_schema(spec), filter)
    parts = set(spec.partition_column_names)
    kept = [c for c in conjuncts(predicate) if _referenced(c) and set(_referenced(c)) <= parts]
    return and_all(kept) if kept else None


def resolve_filter(spec: TableSpec, filter: str | exp.Expr) -> exp.Expr:  # noqa: A002
    """A Hive predicate over the table's columns, its column references resolved (bare,
    quoted, lower-case names)."""
    return _resolve_filter(spec, table_schema(spec), filter)


def pushdown_filters(spec: TableSpec, predicate: exp.Expr) -> Filters | None:
    """The conjuncts of a resolved predicate the ORC reader can apply itself, as DNF tuples.

    Only ``col <op> literal`` (``=``, ``<``, ``<=``, ``>``, ``>=``), ``col IN (literals)`` and
    ``col BETWEEN literal AND literal`` on integer or string data columns with literals of the same
    kind qualify: there the reader's comparison is exactly SQL's (NULL never passes), so a pushed
    conjunct removes only rows the whole predicate removes.
    """
    types = dict(spec.columns)
    out: Filters = []
    for c in conjuncts(predicate):
        out += _pushable(c, types)
    return out or None


# --------------------------------------------------------------------------- helpers


def _pushable(node: exp.Expr, types: dict[str, str]) -> Filters:
    if isinstance(node, exp.Paren):
        return _pushable(node.this, types)
    op = _COMPARISONS.get(type(node))
    if op is not None:
        left, right = node.this, node.expression
        if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
            left, right, op = right, left, _FLIPPED[op]
        if not isinstance(left, exp.Column):
            return []
        value = _literal_for(left.name, right, types)
        return [(left.name, op, value)] if value is not None else []
    if (
        isinstance(node, exp.In)
        and isinstance(node.this, exp.Column)
        and not node.args.get("query")
    ):
        col = node.this.name
        values = [_literal_for(col, v, types) for v in node.expressions]
        if values and all(v is not None for v in values):
            return [(col, "in", values)]
        return []
    if isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
        col = node.this.name
        lo = _literal_for(col, node.args.get("low"), types)
        hi = _literal_for(col, node.args.get("high"), types)
        if lo is not None and hi is not None:
            return [(col, ">=", lo), (col, "<=", hi)]
    return []


def _literal_for(column: str, node: exp.Expr | None, types: dict[str, str]) -> Any:
    """The Python value of a literal compared with ``column`` when the comparison is exact in
    the reader too; ``None`` otherwise."""
    hive_type = types.get(column, "").lower()
    negative = False
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if not isinstance(node, exp.Literal):
        return None
    bits = _INTEGER_TYPES.get(hive_type)
    if bits is not None and not node.is_string:
        text = node.this
        if not text.lstrip("-").isdigit():
            return None
        value = -int(text) if negative else int(text)
        limit = 1 << (bits - 1)
        return value if -limit <= value < limit else None
    if hive_type == "string" and node.is_string and not negative:
        return str(node.this)
    return None


def _wanted_columns(
    spec: TableSpec,
    schema: pa.Schema,
    columns: Sequence[str] | None,
    include_partition_columns: bool,
) -> list[str]:
    if columns is None:
        names = list(schema.names)
        return names if include_partition_columns else [c for c, _ in spec.columns]
    out = []
    for c in columns:
        name = c.lower()
        if schema.get_field_index(name) < 0:
            raise UnknownColumnError(
                f"table {spec.full_name} has no column {c!r}; its columns are {schema.names}"
            )
        out.append(name)
    return out


def _resolve_filter(spec: TableSpec, schema: pa.Schema, filter: str | exp.Expr) -> exp.Expr:  # noqa: A002
    tree = to_expression(filter, f"filter on {spec.full_name}")
    scope = Scope(spec.name, tuple(schema.names), (spec.full_name,), f"table {spec.full_name}")
    return resolve(
        tree, [scope], lambda _s, col: exp.column(quoted(col)), f"filter on {spec.full_name}"
    )


def _referenced(predicate: exp.Expr) -> list[str]:
    return list(dict.fromkeys(c.name for c in predicate.find_all(exp.Column)))


def _filter(table: pa.Table, predicate: exp.Expr, engine: Engine) -> pa.Table:
    cols = [c for c in _referenced(predicate) if c in table.column_names]
    keep = _matching_indices(table.select(cols), predicate, engine)
    if len(keep) == table.num_rows:
        return table
    return table.take(pa.array(keep, pa.int64()))


def _matching_indices(table: pa.Table, predicate: exp.Expr, engine: Engine) -> np.ndarray:
    indexed = table.append_column(_INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    query = exp.select(exp.column(_INDEX)).from_(_RELATION).where(predicate.copy())
    result = engine.execute(query, {_RELATION: indexed})
    column = result.column(_INDEX)
    if column.null_count:  # pragma: no cover - the index column is never NULL
        column = column.drop_null()
    return np.sort(column.to_numpy())


def _output_schema(schema: pa.Schema, names: list[str], with_row_id: bool) -> pa.Schema:
    fields = [schema.field(c) for c in schema.names if c in names]
    if with_row_id:
        fields.insert(0, pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
    return pa.schema(fields)
