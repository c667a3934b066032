"""The ``target`` relation of a DML plan, read in two phases: narrow first, full rows for matches.

The plan (:mod:`.dml`) says which target rows it can touch (``probe``) and which columns' values
its output uses (``read_columns``). The scan planner (:mod:`.scan`) lists the partitions the
WHERE leaves and selects their files once; reading then takes at most two passes over that plan:

1. **probe** — ROW__ID plus the probe's columns (WHERE or ON columns, partition columns), with
   partition pruning and stripe pruning (ORC statistics) from simple WHERE conjuncts; the engine
   runs the probe over this narrow relation (and the MERGE source) and returns the candidate rows;
2. **fetch** — only if the plan needs columns the probe did not read (an UPDATE carries every
   unassigned column into the new row version): those columns for the candidate ROW__IDs only,
   per partition, reading only stripes whose key range (``hive.acid.key.index``) holds one.

The plan then runs, unchanged, over the candidate rows; columns it never uses are typed NULLs.
Without a probe (UPDATE/DELETE without WHERE, MERGE with WHEN NOT MATCHED BY SOURCE) every row is
read, but still only ``read_columns``. A small target (:data:`SMALL_TARGET_BYTES` of files) is
read in one pass: the probe then runs over every column the plan needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from acid_platform.errors import AcidFormatError
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_FIELDS, DeleteSet, Snapshot
from acid_platform.format.fs import Location
from acid_platform.metastore.model import TableSpec
from acid_platform.table import dml
from acid_platform.table.dml_prune import source_pruning
from acid_platform.table.engine import Engine
from acid_platform.table.scan import PartitionFiles, plan_files, read_files
from acid_platform.table.scan_filter import hive_filter, pushdown_filters, resolve_filter
from acid_platform.table.schema import has_wide_constant, table_schema

#: Column of the narrow relation naming the partition (index into the planned partitions).
PARTITION_INDEX = "__acid_part"
#: Column of the probe's relation holding each row's position in the narrow relation.
POSITION = "__acid_pos"
#: The flattened ROW__ID columns and the partition index of a narrow relation.
_KEYS = [dml.WRITE_ID, dml.BUCKET_ID, dml.ROW_ID, PARTITION_INDEX]
#: Targets up to this size are read in one pass (every needed column), larger ones in two.
SMALL_TARGET_BYTES = 16 << 20


def read_target(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    engine: Engine,
    plan: dml.DmlPlan,
    where: object = None,
    source: pa.Table | None = None,
) -> pa.Table:
    """The ``target`` relation ``plan`` needs: every row it can touch, every column it uses.

    ``where`` is the UPDATE/DELETE predicate (partition and stripe pruning); ``source`` the MERGE
    source relation (the probe joins it; an ON equating a partition column with a source
    column prunes the partitions, :mod:`.dml_prune`). The table's partitions are listed and their files
    selected once; every pass reads from that plan.
    """
    predicate = resolve_filter(spec, where) if isinstance(where, str | exp.Expr) else None
    # a constant beyond the nanosecond range: timestamp columns at microseconds (schema docs)
    force = has_wide_constant(predicate)
    pruning = hive_filter(spec, engine, predicate, exact=False)
    if pruning.partitions is None:  # a MERGE: the partitions its source can match
        pruning = source_pruning(spec, plan.probe, source) or pruning
    partitions = plan_files(spec, location, snapshot, pruning)
    read_columns = plan.read_columns if plan.read_columns is not None else plan.target_columns
    if plan.probe is None:
        rows = read_files(
            spec, location, snapshot, partitions, read_columns, with_row_id=True, force_wide=force
        )
        return target_relation(rows, spec, read_columns)
    if sum(p.size for p in partitions) <= SMALL_TARGET_BYTES:
        # Small data: one pass with every column the plan needs beats two passes over the files.
        columns = tuple(c for c in plan.target_columns if c in {*plan.probe_columns, *read_columns})
        filters = None  # opening each file's statistics costs more than it saves here
    else:
        columns = plan.probe_columns
        filters = pushdown_filters(spec, predicate) if predicate is not None else None
    narrow = _narrow_relation(spec, location, snapshot, partitions, columns, filters, force)
    candidates = _probe(engine, plan.probe, narrow, plan.probe_columns, source)
    missing = tuple(c for c in read_columns if c not in columns)
    if not missing or candidates.num_rows == 0:
        return _with_nulls(candidates, spec, read_columns)
    fetched = _fetch(spec, location, snapshot, partitions, candidates, missing, force)
    # decoded once: the probe's columns come from the probe read, only the others are fetched
    kept = [c for c in read_columns if c not in missing]
    return _with_nulls(_append(candidates.select(_KEYS + kept), fetched), spec, read_columns)


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
    names = [dml.WRITE_ID, dml.BUCKET_ID, dml.ROW_ID]
    for f in table_schema(spec):
        if columns is None or f.name in columns:
            arrays.append(table.column(f.name))
        else:
            arrays.append(pa.nulls(table.num_rows, f.type))
        names.append(f.name)
    return pa.table(arrays, names=names)


# --------------------------------------------------------------------------- helpers


def _narrow_relation(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    partitions: list[PartitionFiles],
    columns: tuple[str, ...],
    filters: list[tuple[str, str, object]] | None,
    force_wide: bool = False,
) -> pa.Table:
    """ROW__ID (flattened), the probe's columns and the partition index of every visible row."""
    rows = read_files(
        spec,
        location,
        snapshot,
        partitions,
        columns,
        with_row_id=True,
        filters=filters,
        partition_index=PARTITION_INDEX,
        force_wide=force_wide,
    )
    row_id = rows.column(ROW_ID_COLUMN)
    arrays = [pc.struct_field(row_id, f) for f in ROW_ID_FIELDS]
    arrays += [rows.column(c) for c in (*columns, PARTITION_INDEX)]
    names = [dml.WRITE_ID, dml.BUCKET_ID, dml.ROW_ID, *columns, PARTITION_INDEX]
    return pa.table(arrays, names=names)


def _probe(
    engine: Engine,
    probe: exp.Select,
    narrow: pa.Table,
    columns: Sequence[str],
    source: pa.Table | None,
) -> pa.Table:
    """The rows of ``narrow`` the probe keeps, in their order.

    The engine sees only the probe's ``columns`` and each row's position (:data:`POSITION`) and
    returns the positions it keeps; the rows (ROW__ID, partition index, values) are then taken
    from ``narrow`` here — the ROW__IDs of every row never go through the engine.
    """
    star = probe.expressions[0]
    query = probe.copy()
    query.set(
        "expressions", [exp.Column(this=exp.to_identifier(POSITION), table=star.args.get("table"))]
    )
    n = narrow.num_rows
    positions = pa.array(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64))
    probed = narrow.select([c for c in columns if c in narrow.column_names])
    relations = {dml.TARGET_RELATION: probed.append_column(POSITION, positions)}
    if source is not None:
        relations[dml.SOURCE_RELATION] = source
    kept = np.unique(engine.execute(query, relations).column(POSITION).to_numpy())
    return _take_sorted(narrow, kept)  # each kept row once, in the narrow relation's order


def _take_sorted(table: pa.Table, positions: np.ndarray) -> pa.Table:
    """The rows of ``table`` at ascending ``positions``, taken batch by batch (a take of the
    whole chunked table would first copy every chunk into one)."""
    batches = []
    start = 0
    for batch in table.to_batches():
        lo, hi = np.searchsorted(positions, [start, start + batch.num_rows])
        if hi > lo:
            batches.append(batch.take(pa.array(positions[lo:hi] - start)))
        start += batch.num_rows
    return pa.Table.from_batches(batches, schema=table.schema)


def _with_nulls(rows: pa.Table, spec: TableSpec, columns: tuple[str, ...]) -> pa.Table:
    """The plan's target relation from rows holding ROW__ID and ``columns``."""
    row_id = pa.StructArray.from_arrays(
        [
            rows.column(dml.WRITE_ID).combine_chunks(),
            rows.column(dml.BUCKET_ID).combine_chunks(),
            rows.column(dml.ROW_ID).combine_chunks(),
        ],
        names=list(ROW_ID_FIELDS),
    )
    present = {c: rows.column(c) for c in columns if c in rows.column_names}
    table = pa.table({ROW_ID_COLUMN: row_id, **present})
    return target_relation(table, spec, list(present))


def _fetch(
    spec: TableSpec,
    location: Location,
    snapshot: Snapshot,
    partitions: list[PartitionFiles],
    candidates: pa.Table,
    columns: tuple[str, ...],
    force_wide: bool = False,
) -> pa.Table:
    """``columns`` of the candidate rows, read by ROW__ID partition by partition, in the
    candidates' order (a read of the same files keeps their order; checked here, key by key)."""
    part_index = candidates.column(PARTITION_INDEX).to_numpy()
    owid = candidates.column(dml.WRITE_ID).to_numpy()
    bucket = candidates.column(dml.BUCKET_ID).to_numpy()
    rowid = candidates.column(dml.ROW_ID).to_numpy()
    touched = [int(i) for i in np.unique(part_index)]
    wanted = []
    for i in touched:
        pick = part_index == i
        wanted.append(DeleteSet.from_arrays(owid[pick], bucket[pick], rowid[pick]))
    rows = read_files(
        spec,
        location,
        snapshot,
        [partitions[i] for i in touched],
        columns,
        with_row_id=True,
        row_ids=wanted,
        force_wide=force_wide,
    )
    expected = sum(len(w) for w in wanted)
    if rows.num_rows != expected:
        raise AcidFormatError(
            f"table {spec.full_name}: {expected} rows were selected but {rows.num_rows} were "
            "read back by ROW__ID; the table's files hold duplicate or vanished ROW__IDs "
            "(check them, or run a major compaction)"
        )
    row_id = rows.column(ROW_ID_COLUMN)
    for field, want in zip(ROW_ID_FIELDS, (owid, bucket, rowid), strict=True):
        if not np.array_equal(pc.struct_field(row_id, field).to_numpy(), want):
            raise AcidFormatError(
                f"table {spec.full_name}: the rows read back by ROW__ID are not those the probe "
                "selected, in its order (duplicate ROW__IDs, or files changed under the snapshot)"
            )
    return rows.select(list(columns))


def _append(table: pa.Table, other: pa.Table) -> pa.Table:
    """``table`` with the columns of ``other`` (the same rows) after its own."""
    for name, column in zip(other.column_names, other.columns, strict=True):
        table = table.append_column(name, column)
    return table
