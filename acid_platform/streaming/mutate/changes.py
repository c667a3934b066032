"""Preparing a change set on Arrow, the way the documentation prescribes, and applying it.

The documentation leaves sequencing to the client: **join** the changes with the table on a key
to get the ROW__IDs of the rows they touch, **stamp** inserts with their bucket, **group** by
partition and bucket, **sort** by ROW__ID. :func:`prepare_changes` does that for a change set held
in Arrow, reading the table at the transaction's snapshot on the warehouse's engine:

>>> # txn = MutatorClient(wh, ["db.sales"]).new_transaction().begin()
>>> # batch = prepare_changes(txn, "db.sales", changes, key=["id"])   # 'mutation' says I / U / D
>>> # report = apply_changes(txn.table("db.sales"), batch)           # or per worker: split_changes
>>> # txn.commit([report])

A change means what it means in ``MERGE INTO t USING changes c ON <key> WHEN MATCHED AND
c.mutation = 'U' THEN UPDATE SET * WHEN MATCHED AND c.mutation = 'D' THEN DELETE WHEN NOT
MATCHED AND c.mutation = 'I' THEN INSERT *``: an update or delete of a key the table lacks, and
an insert of a key it has, change nothing; a table row matched by two changes raises
:class:`~acid_platform.errors.CardinalityViolationError`, as the MERGE does. Applied, the change
set leaves the same rows with the same ROW__IDs as that MERGE (same statement ids, same row
order: :mod:`acid_platform.table.row_order`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from acid_platform.errors import CardinalityViolationError, UnknownColumnError
from acid_platform.format import ROW_ID_COLUMN, ROW_ID_FIELDS, ROW_ID_TYPE, row_id_text
from acid_platform.format.bucket_codec import decode_bucket_ids
from acid_platform.metastore.model import TableSpec
from acid_platform.streaming.mutate.batches import group_numbers, partition_columns
from acid_platform.streaming.mutate.buckets import BucketIdResolver
from acid_platform.streaming.mutate.coordinator import MUTATION, MutatorCoordinator
from acid_platform.streaming.mutate.report import MutationReport
from acid_platform.streaming.mutate.table import AcidTable
from acid_platform.table.engine import PLAN_DIALECT
from acid_platform.table.row_order import sort_rows
from acid_platform.table.schema import conform, data_schema, partition_schema

if TYPE_CHECKING:
    from acid_platform.streaming.mutate.client import MutationTransaction

#: A prepared batch's helper column: the bucket of each record (dropped before it is returned).
BUCKET = "__acid_bucket"
_MATCH = ("__acid_m_writeid", "__acid_m_bucketid", "__acid_m_rowid")


def prepare_changes(
    txn: MutationTransaction,
    table: str,
    changes: pa.Table,
    key: Sequence[str],
    *,
    mutation_column: str = MUTATION,
) -> pa.Table:
    """The change set as a batch a coordinator takes (see module docs): columns
    :data:`~.coordinator.MUTATION`, ``row__id``, the data columns and the partition columns,
    grouped by partition and bucket and sorted by ROW__ID, then by value."""
    handle = txn.table(table)
    spec = handle.spec
    keys = check_key(spec, key, changes.column_names)
    partition_cols = list(spec.partition_column_names)
    target = txn.read(table, columns=list(dict.fromkeys([*keys, *partition_cols])))
    matched = _match(txn, handle, changes, target, keys, partition_cols)
    codes = pc.utf8_lower(
        pc.utf8_slice_codeunits(matched.column(mutation_column).cast(pa.string()), 0, 1)
    )
    found = pc.is_valid(matched.column(_MATCH[0]))
    _check_cardinality(handle, matched, found, len(partition_cols))
    is_insert = pc.and_(pc.equal(codes, "i"), pc.invert(found))
    keep = pc.or_(is_insert, pc.and_(found, pc.is_in(codes, pa.array(["u", "d"]))))
    matched = matched.filter(keep).combine_chunks()
    is_insert = pc.fill_null(is_insert.filter(keep), False)
    codes = codes.filter(keep)
    return _assemble(handle, matched, codes, is_insert, partition_cols)


def apply_changes(table: AcidTable, prepared: pa.Table) -> MutationReport:
    """Apply a prepared batch with one coordinator in this process; returns its report."""
    with MutatorCoordinator(table) as coordinator:
        coordinator.mutate(prepared)
    assert coordinator.report is not None
    return coordinator.report


def split_changes(prepared: pa.Table, table: AcidTable, workers: int) -> list[pa.Table]:
    """A prepared batch cut into ``workers`` batches along (partition, bucket) groups — each
    group whole in one of them, each still in order — for that many coordinators."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    ids = prepared.column(ROW_ID_COLUMN).combine_chunks()
    buckets = decode_bucket_ids(pc.struct_field(ids, "bucketid").to_numpy(zero_copy_only=False))
    parts = partition_columns(prepared, list(table.spec.partition_column_names))
    worker = group_numbers(parts, buckets) % workers
    return [prepared.filter(pa.array(worker == w)) for w in range(workers)]


def check_key(spec: TableSpec, key: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The key columns, lower-cased; each must be a column of the table and of the changes."""
    keys = [k.lower() for k in key]
    present = {c.lower() for c in columns}
    known = {c for c, _ in spec.columns} | set(spec.partition_column_names)
    missing = [k for k in keys if k not in known or k not in present]
    if not keys or missing:
        raise UnknownColumnError(
            f"table {spec.full_name}: key column(s) {missing or list(key)} are not columns of both "
            f"the table and the change set ({sorted(present)})"
        )
    return keys


def cardinality_error(
    table: AcidTable, write_id: int, bucket: int, row_id: int
) -> CardinalityViolationError:
    """The error for a row two changes match (MERGE's cardinality check)."""
    return CardinalityViolationError(
        f"table {table.name}: row ROW__ID {row_id_text(write_id, bucket, row_id)} matches more "
        "than one change on the key; nothing was written (make the change set unique on the key)"
    )


# --------------------------------------------------------------------------- helpers


def _match(
    txn: MutationTransaction,
    handle: AcidTable,
    changes: pa.Table,
    target: pa.Table,
    keys: list[str],
    partition_cols: list[str],
) -> pa.Table:
    """``changes LEFT JOIN target ON keys``: every change with the ROW__ID and partition values
    of each row it matches (NULL when none). Only the keys are joined — hashing the change set,
    the small side — and the change rows are gathered after. Arrow joins the usual key types;
    others go to the warehouse's engine."""
    row_id = target.column(ROW_ID_COLUMN)
    narrow = {m: pc.struct_field(row_id, f) for m, f in zip(_MATCH, ROW_ID_FIELDS, strict=True)}
    narrow |= {f"__acid_k{i}": target.column(k) for i, k in enumerate(keys)}
    narrow |= {f"__acid_p{i}": target.column(p) for i, p in enumerate(partition_cols)}
    present = {c.lower(): c for c in changes.column_names}
    probe = {"__acid_i": pa.array(np.arange(changes.num_rows, dtype=np.int64))}
    for i, k in enumerate(keys):
        typed = conform(
            handle.name, pa.table({k: changes.column(present[k])}), pa.schema([target.field(k)])
        )
        probe[f"__acid_k{i}"] = typed.column(k)
    wanted = [*_MATCH, *(f"__acid_p{i}" for i in range(len(partition_cols)))]
    key_names = [f"__acid_k{i}" for i in range(len(keys))]
    try:
        hits = pa.table(narrow).join(pa.table(probe), key_names, join_type="inner")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        hits = _engine_join(txn, pa.table(probe), pa.table(narrow), key_names, wanted)
    hit_rows = hits.column("__acid_i").to_numpy(zero_copy_only=False)
    missed = np.setdiff1d(np.arange(changes.num_rows), hit_rows)
    found = changes.take(pa.array(hit_rows)).combine_chunks()
    for c in wanted:
        found = found.append_column(c, hits.column(c))
    alone = changes.take(pa.array(missed)).combine_chunks()
    for c in wanted:
        alone = alone.append_column(c, pa.nulls(len(missed), hits.schema.field(c).type))
    return pa.concat_tables([found, alone])


def _engine_join(
    txn: MutationTransaction,
    probe: pa.Table,
    target: pa.Table,
    keys: list[str],
    wanted: list[str],
) -> pa.Table:
    """The key join on the warehouse's engine (for key types Arrow cannot hash)."""
    on = [
        exp.EQ(
            this=exp.column(k, table="c", quoted=True),
            expression=exp.column(k, table="t", quoted=True),
        )
        for k in keys
    ]
    condition: exp.Expr = on[0]
    for more in on[1:]:
        condition = exp.and_(condition, more)
    query = (
        exp.select(exp.column("__acid_i", table="c", quoted=True))
        .select(*[exp.column(c, table="t", quoted=True) for c in wanted])
        .from_(exp.to_table("changes").as_("c"))
        .join(exp.to_table("target").as_("t"), on=condition, join_type="inner")
    )
    engine = txn.client.warehouse.engine
    return engine.execute(query.sql(dialect=PLAN_DIALECT), {"changes": probe, "target": target})


def _check_cardinality(
    handle: AcidTable, matched: pa.Table, found: pa.ChunkedArray, partitions: int
) -> None:
    """A ROW__ID is unique within its partition: a (partition, ROW__ID) matched twice raises."""
    keys = [*_MATCH, *(f"__acid_p{i}" for i in range(partitions))]
    hits = matched.filter(found).select(keys)
    if hits.num_rows < 2:
        return
    counts = hits.group_by(keys).aggregate([([], "count_all")])
    twice = counts.filter(pc.greater(counts.column("count_all"), 1))
    if twice.num_rows:
        w, b, r = (twice.column(c)[0].as_py() for c in _MATCH)
        raise cardinality_error(handle, w, b, r)


def _assemble(
    handle: AcidTable,
    matched: pa.Table,
    codes: pa.ChunkedArray,
    is_insert: pa.ChunkedArray,
    partition_cols: list[str],
) -> pa.Table:
    """The prepared batch: ROW__IDs (matched, or stamped for inserts), values, partitions."""
    spec = handle.spec
    present = {c.lower(): c for c in matched.column_names}
    data_cols = [present[c] for c in data_schema(spec).names if c in present]
    data = conform(spec.full_name, matched.select(data_cols), data_schema(spec))
    parts_schema = partition_schema(spec)
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    for i, col in enumerate(partition_cols):
        mine = matched.column(present[col]) if col in present else pa.nulls(matched.num_rows)
        theirs = matched.column(f"__acid_p{i}")
        typed = conform(spec.full_name, pa.table({col: mine}), pa.schema([parts_schema.field(col)]))
        columns[col] = pc.if_else(
            is_insert, typed.column(col), theirs.cast(parts_schema.field(col).type)
        )
    stamped = BucketIdResolver(spec).attach_bucket_ids(data).column(ROW_ID_COLUMN)
    stamped_fields = [pc.struct_field(stamped, f) for f in ROW_ID_FIELDS]
    fields = [
        pc.if_else(is_insert, new, matched.column(m).cast(new.type))
        for new, m in zip(stamped_fields, _MATCH, strict=True)
    ]
    row_id = pa.StructArray.from_arrays(
        [f.combine_chunks() if isinstance(f, pa.ChunkedArray) else f for f in fields],
        fields=list(ROW_ID_TYPE),
    )
    mutation = pc.if_else(is_insert, "insert", pc.if_else(pc.equal(codes, "u"), "update", "delete"))
    bucket = decode_bucket_ids(pc.struct_field(row_id, "bucketid").to_numpy(zero_copy_only=False))
    batch = pa.table(
        {
            MUTATION: mutation,
            ROW_ID_COLUMN: row_id,
            **{c: data.column(c) for c in data.column_names},
            **columns,
            BUCKET: pa.array(bucket),
            **{m: pc.struct_field(row_id, f) for m, f in zip(_MATCH, ROW_ID_FIELDS, strict=True)},
        }
    )
    first = [*partition_cols, BUCKET, *_MATCH]
    ordered = sort_rows(batch.select([*first, *data.column_names, MUTATION, ROW_ID_COLUMN]), first)
    return ordered.select([MUTATION, ROW_ID_COLUMN, *data.column_names, *partition_cols])


__all__ = [
    "BUCKET",
    "apply_changes",
    "cardinality_error",
    "check_key",
    "prepare_changes",
    "split_changes",
]
