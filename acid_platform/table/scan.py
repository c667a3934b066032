"""Snapshot scans: the rows of a table as one snapshot sees them.

A scan lists the table's partition directories, prunes them with the part of the filter that
only names partition columns, reads each remaining directory with the format layer's
merge-on-read (:func:`~acid_platform.format.read_acid`), adds the partition columns as typed
constants, and filters the rows with the rest of the predicate (evaluated by the engine).
Partition columns come last, as Hive shows them; ``row__id`` comes first when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from sqlglot import exp

from acid_platform.engines import Engine
from acid_platform.errors import UnknownColumnError
from acid_platform.format import (
    ROW_ID_COLUMN,
    ValidTxnList,
    ValidWriteIdList,
    list_partition_dirs,
    read_acid,
)
from acid_platform.format.fs import Location
from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml import BUCKET_ID, ROW_ID, WRITE_ID
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

_INDEX = "__acid_idx"
_RELATION = "__acid_rows"


@dataclass(frozen=True)
class Snapshot:
    """What a scan reads: the global txn snapshot and the table's write id list."""

    valid_txns: ValidTxnList
    write_ids: ValidWriteIdList


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
    data_cols = [c for c, _ in spec.columns if c in needed]
    part_cols = [c for c in spec.partition_column_names if c in needed]
    pieces = []
    for _name, path, values in _partitions(spec, location, engine, predicate):
        rows = read_acid(
            path,
            snapshot.write_ids,
            snapshot.valid_txns,
            columns=data_cols,
            with_row_id=with_row_id,
            schema=data_schema(spec),
            filesystem=location.filesystem,
        )
        for col in part_cols:
            value = values.column(col)[0] if values is not None else None
            rows = rows.append_column(
                schema.field(col), pa.repeat(value, rows.num_rows).cast(schema.field(col).type)
            )
        pieces.append(rows)
    out_schema = _output_schema(schema, data_cols + part_cols, with_row_id, pieces)
    table = (
        pa.concat_tables([p.select(out_schema.names) for p in pieces])
        if pieces
        else out_schema.empty_table()
    )
    if predicate is not None and table.num_rows:
        table = _filter(table, predicate, engine)
    keep = ([ROW_ID_COLUMN] if with_row_id else []) + list(wanted)
    return table.select(keep)


def target_relation(table: pa.Table, spec: TableSpec) -> pa.Table:
    """The ``target`` relation of the DML plan from a scan with ``row__id``: ROW__ID flattened
    into three columns, then data and partition columns."""
    row_id = table.column(ROW_ID_COLUMN).combine_chunks()
    arrays = [row_id.field("writeid"), row_id.field("bucketid"), row_id.field("rowid")]
    names = [WRITE_ID, BUCKET_ID, ROW_ID]
    for name in table_schema(spec).names:
        arrays.append(table.column(name).combine_chunks())
        names.append(name)
    return pa.table(arrays, names=names)


def partition_pruning_predicate(spec: TableSpec, filter: str | exp.Expr | None) -> exp.Expr | None:  # noqa: A002
    """The conjuncts of ``filter`` that name only partition columns (``None`` if there are none)."""
    if filter is None or not spec.partition_columns:
        return None
    predicate = _resolve_filter(spec, table_schema(spec), filter)
    parts = set(spec.partition_column_names)
    kept = [c for c in conjuncts(predicate) if _referenced(c) and set(_referenced(c)) <= parts]
    return and_all(kept) if kept else None


# --------------------------------------------------------------------------- helpers


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


def _partitions(
    spec: TableSpec, location: Location, engine: Engine, predicate: exp.Expr | None
) -> list[tuple[str, str, pa.Table | None]]:
    listed = list_partition_dirs(
        location.path, list(spec.partition_column_names), location.filesystem
    )
    if not spec.partition_columns:
        return [(name, path, None) for name, path in listed]
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
    return [(name, path, values.slice(i, 1)) for i, (name, path) in enumerate(listed)]


def _filter(table: pa.Table, predicate: exp.Expr, engine: Engine) -> pa.Table:
    keep = _matching_indices(
        table.drop_columns([ROW_ID_COLUMN]) if ROW_ID_COLUMN in table.column_names else table,
        predicate,
        engine,
    )
    return table.take(pa.array(keep, pa.int64()))


def _matching_indices(table: pa.Table, predicate: exp.Expr, engine: Engine) -> list[int]:
    indexed = table.append_column(_INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    query = (
        exp.select(exp.column(_INDEX))
        .from_(_RELATION)
        .where(predicate.copy())
        .order_by(exp.column(_INDEX))
    )
    result = engine.execute(query, {_RELATION: indexed})
    return [int(i) for i in result.column(_INDEX).to_pylist()]


def _output_schema(
    schema: pa.Schema, names: list[str], with_row_id: bool, pieces: list[pa.Table]
) -> pa.Schema:
    fields = [schema.field(c) for c in schema.names if c in names]
    if with_row_id:
        from acid_platform.format import ROW_ID_TYPE

        fields.insert(0, pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
    return pa.schema(fields)
