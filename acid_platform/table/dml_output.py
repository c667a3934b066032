"""From the DML plan's labelled output rows to what each statement writes.

The engine returns the plan's rows (see :mod:`.dml`); :func:`assemble` checks the cardinality
flag and splits the rows per branch into the ROW__IDs to delete (with their partition values)
and the new rows to insert (every table column, converted to the table's types). Engines differ
in how they type computed values, so the conversion to the table's types happens here, once,
with the table layer's rules and errors.

Each branch's rows come out in :mod:`.row_order`'s order — branches touching existing rows by
their ROW__ID (Hive's ``SORT BY ROW__ID``), inserts by value — so a statement writes the same
ROW__IDs whichever order the engine returned its rows in.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from acid_platform.errors import CardinalityViolationError
from acid_platform.format import ROW_ID_FIELDS, ROW_ID_TYPE, row_id_text
from acid_platform.metastore.model import TableSpec
from acid_platform.table.dml import (
    BUCKET_ID,
    ROW_ID,
    STATEMENT,
    VIOLATION,
    WRITE_ID,
    Action,
    DmlPlan,
    PlannedBranch,
)
from acid_platform.table.row_order import sort_rows
from acid_platform.table.schema import convert_column, fitted_table, table_schema


@dataclass(frozen=True)
class StatementRows:
    """What one statement id of the plan writes: rows to delete (ROW__ID + partition columns)
    and rows to insert (all table columns)."""

    statement: int
    action: Action
    deletes: pa.Table
    inserts: pa.Table


def assemble(plan: DmlPlan, spec: TableSpec, result: pa.Table) -> list[StatementRows]:
    """Split the engine's result into per-statement delete and insert rows.

    Raises :class:`CardinalityViolationError` if the plan flagged a target row matched twice.
    """
    if VIOLATION in result.column_names:
        flagged = result.filter(pc.fill_null(result.column(VIOLATION), False))
        if flagged.num_rows:
            row = flagged.slice(0, 1).to_pylist()[0]
            parts = [
                f"{c}={row[f'__t_{i}']}"
                for i, c in enumerate(plan.target_columns)
                if c in spec.partition_column_names
            ]
            where = f" in partition {'/'.join(parts)}" if parts else ""
            raise CardinalityViolationError(
                f"MERGE INTO {spec.full_name}: target row ROW__ID "
                f"{row_id_text(row[WRITE_ID], row[BUCKET_ID], row[ROW_ID])}{where} "
                "matches more than one source row; nothing was written (make the source unique "
                "on the ON keys, or SET hive.merge.cardinality.check=false to allow it)"
            )
    schema = table_schema(spec)
    part_cols = list(spec.partition_column_names)
    out = []
    for branch in plan.branches:
        rows = result.filter(pc.equal(result.column(STATEMENT), branch.statement))
        if branch.action is not Action.INSERT:
            rows = sort_rows(rows, (WRITE_ID, BUCKET_ID, ROW_ID), values=False)
        deletes = _row_ids(rows, plan, part_cols) if branch.action is not Action.INSERT else None
        if branch.action is Action.DELETE and deletes is not None:
            deletes = _distinct_row_ids(deletes)
        inserts = None
        if branch.action is not Action.DELETE:
            inserts = _new_rows(rows, plan, branch, spec, schema)
            if branch.action is Action.INSERT:
                inserts = sort_rows(inserts)
        out.append(
            StatementRows(
                branch.statement,
                branch.action,
                deletes if deletes is not None else _empty_row_ids(spec),
                inserts if inserts is not None else schema.empty_table(),
            )
        )
    return out


# --------------------------------------------------------------------------- helpers


def _row_ids(rows: pa.Table, plan: DmlPlan, part_cols: list[str]) -> pa.Table:
    arrays = [
        rows.column(WRITE_ID).cast(pa.int64()),
        rows.column(BUCKET_ID).cast(pa.int32()),
        rows.column(ROW_ID).cast(pa.int64()),
    ]
    names = list(ROW_ID_FIELDS)
    for col in part_cols:
        arrays.append(rows.column(f"__t_{plan.target_columns.index(col)}"))
        names.append(col)
    return pa.table(arrays, names=names)


def _distinct_row_ids(ids: pa.Table) -> pa.Table:
    """``ids`` with each row once, by ROW__ID: a target row that several source rows match
    (``hive.merge.cardinality.check=false``, or an unconditional MATCHED DELETE) is deleted
    once, and counted once."""
    if ids.num_rows < 2:
        return ids
    distinct = ids.group_by(ids.column_names, use_threads=False).aggregate([])
    return sort_rows(distinct.select(ids.column_names), ROW_ID_FIELDS)


def _empty_row_ids(spec: TableSpec) -> pa.Table:
    schema = table_schema(spec)
    fields = list(ROW_ID_TYPE)
    fields += [schema.field(c) for c in spec.partition_column_names]
    return pa.schema(fields).empty_table()


def _new_rows(
    rows: pa.Table, plan: DmlPlan, branch: PlannedBranch, spec: TableSpec, schema: pa.Schema
) -> pa.Table:
    arrays = []
    what = f"{branch.action.value.upper()} output "  # names a value that is not UTF-8
    for i, col in enumerate(plan.target_columns):
        field_type = schema.field(col).type
        if col in branch.assigned:
            values = rows.column(branch.assigned[col])
        elif branch.action is Action.INSERT:
            values = pa.chunked_array([pa.nulls(rows.num_rows, field_type)])
        else:
            values = rows.column(f"__t_{i}")
        arrays.append(convert_column(spec.full_name, col, values, field_type, what=what))
    return fitted_table(arrays, schema)
