"""UPDATE / DELETE / MERGE on the embedded path: the plan's labelled rows written as events.

:func:`write_plan` is the embedded engine's ``write(ctx)`` for a planned statement in
:func:`~acid_platform.table.statement.run_write`: read the target (and the source) in the
statement's snapshot, run the plan on the warehouse's engine, and write each branch's delete
and insert events under its own statement id. A native engine (Spark) runs the same plan and
writes with the same :data:`OPERATIONS` and counts from its executors instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from acid_platform.format import ROW_ID_FIELDS
from acid_platform.metastore.model import OperationType
from acid_platform.table import dml
from acid_platform.table.dml_output import StatementRows, assemble
from acid_platform.table.dml_read import read_target
from acid_platform.table.inserts import data_columns
from acid_platform.table.schema import check_not_null, not_null_columns
from acid_platform.table.statement import WriteContext, WriteOutcome
from acid_platform.table.transaction import Transaction
from acid_platform.table.writes import EventSink, PendingWrites, run_writes, split_by_partition

#: The write-set operation of each DML action.
OPERATIONS = {
    dml.Action.INSERT: OperationType.INSERT,
    dml.Action.UPDATE: OperationType.UPDATE,
    dml.Action.DELETE: OperationType.DELETE,
}
#: A MERGE source computed in the statement's transaction (SQL query or Arrow data).
SourceRows = Callable[[Transaction], pa.Table]


def write_plan(
    ctx: WriteContext, plan: dml.DmlPlan, source: SourceRows | None, where: object = None
) -> WriteOutcome:
    """Read, compute and write a planned statement on the warehouse's engine; ``where`` is the
    UPDATE / DELETE predicate (it prunes what is read)."""
    wh = ctx.warehouse
    source_rows = source(ctx.txn) if source is not None else None
    target = read_target(ctx.spec, ctx.location, ctx.snapshot, wh.engine, plan, where, source_rows)
    relations = {dml.TARGET_RELATION: target}
    if source_rows is not None:
        relations[dml.SOURCE_RELATION] = source_rows
    result = wh.engine.execute(plan.query, relations)
    return write_statements(ctx, assemble(plan, ctx.spec, result))


def write_statements(ctx: WriteContext, statements: Sequence[StatementRows]) -> WriteOutcome:
    """Write each branch's rows: deletes to ``delete_delta``, inserts to ``delta``, under the
    statement id reserved for it."""
    spec = ctx.spec
    not_null = not_null_columns(spec)
    for st in statements:
        check_not_null(spec.full_name, st.inserts, not_null)
    part_cols = list(spec.partition_column_names)
    outcome = WriteOutcome()
    components: list[tuple[str | None, OperationType]] = []
    split: list[tuple[StatementRows, list[tuple[str, pa.Table]], list[tuple[str, pa.Table]]]] = []
    for st in statements:
        deletes = split_by_partition(st.deletes, part_cols, ROW_ID_FIELDS)
        inserts = split_by_partition(st.inserts, part_cols, data_columns(spec))
        names = dict.fromkeys([n for n, _ in deletes] + [n for n, _ in inserts])
        components += [(n or None, OPERATIONS[st.action]) for n in names]
        split.append((st, deletes, inserts))
        count(outcome, st.action, st.inserts if st.action is dml.Action.INSERT else st.deletes)
    if not components:
        return outcome
    sink = EventSink(spec, ctx.location, ctx.record(components))
    pending: list[PendingWrites] = []
    new_partitions: list[str] = []
    for st, deletes, inserts in split:
        statement = ctx.first_statement + st.statement
        pending += [sink.delete_writes(name, ids, statement) for name, ids in deletes]
        pending += [sink.insert_writes(name, rows, statement) for name, rows in inserts]
        new_partitions += [name for name, _ in inserts]
    outcome.written = run_writes(pending)
    outcome.partitions = new_partitions
    return outcome


def count(outcome: WriteOutcome, action: dml.Action, rows: pa.Table | int) -> None:
    """Add a branch's rows to the statement's inserted / updated / deleted count."""
    n = rows if isinstance(rows, int) else rows.num_rows
    if action is dml.Action.INSERT:
        outcome.rows_inserted += n
    elif action is dml.Action.UPDATE:
        outcome.rows_updated += n
    else:
        outcome.rows_deleted += n
