"""INSERT on the embedded path: the rows as Arrow, checked, split by partition and written.

:func:`prepare_rows` turns the caller's data into the table's schema (static partition values
added); :func:`write_rows` is the embedded engine's ``write(ctx)`` for INSERT and INSERT
OVERWRITE in :func:`~acid_platform.table.statement.run_write`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from acid_platform.errors import InvalidPartitionError
from acid_platform.format.parallel import run_parallel
from acid_platform.metastore.model import OperationType, TableSpec
from acid_platform.table.partitions import make_partition_name, static_partition_values
from acid_platform.table.schema import (
    check_not_null,
    conform,
    data_schema,
    not_null_columns,
    table_schema,
    to_arrow,
)
from acid_platform.table.statement import WriteContext, WriteOutcome
from acid_platform.table.writes import EventSink, run_writes, split_by_partition


def static_partition(
    spec: TableSpec, partition: Mapping[str, Any] | None, columns: Sequence[str]
) -> tuple[dict[str, Any], str | None]:
    """INSERT's static partition spec: the values to add to every row (column -> value) and,
    when every partition column is given, the partition's name (what the insert locks)."""
    if not partition:
        return {}, None
    static = static_partition_values(spec.full_name, spec.partition_column_names, partition)
    clash = sorted({c.lower() for c in columns} & set(static))
    if clash:
        raise InvalidPartitionError(
            f"INSERT INTO {spec.full_name}: partition column(s) {clash} are given both in the "
            "static partition spec and in the data"
        )
    if len(static) != len(spec.partition_columns):
        return static, None
    typed = conform(
        spec.full_name,
        pa.table({c: [static[c]] for c in spec.partition_column_names}),
        pa.schema([table_schema(spec).field(c) for c in spec.partition_column_names]),
    )
    return static, make_partition_name(spec.partition_column_names, typed.to_pylist()[0].values())


def prepare_rows(
    spec: TableSpec, data: Any, partition: Mapping[str, Any] | None
) -> tuple[pa.Table, str | None]:
    """``data`` as rows of the table's schema (static partition values added, NOT NULL
    checked), and the static partition's name when the insert names one whole partition."""
    table = to_arrow(data, f"INSERT INTO {spec.full_name}", table=spec.full_name)
    static, static_name = static_partition(spec, partition, table.column_names)
    for col, value in static.items():
        table = table.append_column(col, pa.array([value] * table.num_rows))
    rows = conform(spec.full_name, table, table_schema(spec))
    check_not_null(spec.full_name, rows, not_null_columns(spec))
    return rows, static_name


def write_rows(ctx: WriteContext, rows: pa.Table, overwrite: bool) -> WriteOutcome:
    """Write prepared rows as insert events (``base_w`` for INSERT OVERWRITE)."""
    spec = ctx.spec
    groups = split_by_partition(rows, spec.partition_column_names, data_columns(spec))
    if not groups:
        return WriteOutcome()
    write_id = ctx.record([(name or None, OperationType.INSERT) for name, _ in groups])
    sink = EventSink(spec, ctx.location, write_id)
    # each partition's directory (and its acid version file) made on the writing threads too
    pending = run_parallel(
        [
            functools.partial(
                sink.insert_writes, name, part, ctx.first_statement, overwrite=overwrite
            )
            for name, part in groups
        ]
    )
    written = run_writes(pending)
    return WriteOutcome(
        rows_inserted=written.rows_inserted, written=written, partitions=[n for n, _ in groups]
    )


def write_empty_base(ctx: WriteContext, partition: str | None) -> WriteOutcome:
    """An INSERT OVERWRITE that wrote no rows still replaces what it overwrites: an empty
    ``base_w`` of the partition (the table when ``None``) says so."""
    write_id = ctx.record([(partition, OperationType.INSERT)])
    sink = EventSink(ctx.spec, ctx.location, write_id)
    empty = data_schema(ctx.spec).empty_table()
    written = run_writes(
        [sink.insert_writes(partition or "", empty, ctx.first_statement, overwrite=True)]
    )
    return WriteOutcome(written=written, partitions=[partition] if partition else [])


def write_empty_bases(
    ctx: WriteContext, partitions: Sequence[str | None], outcome: WriteOutcome | None = None
) -> WriteOutcome:
    """:func:`write_empty_base` into each of ``partitions``, added to ``outcome`` (a new one
    when ``None``)."""
    outcome = outcome if outcome is not None else WriteOutcome()
    for name in partitions:
        cleared = write_empty_base(ctx, name)
        outcome.written.add(cleared.written)
        outcome.partitions = [*outcome.partitions, *cleared.partitions]
    return outcome


def data_columns(spec: TableSpec) -> list[str]:
    """Names of the table's data (non-partition) columns."""
    return [c for c, _ in spec.columns]
