"""Dagster partitions as a predicate on a table: the rows one asset partition (or range) is.

Dagster's ``DbIOManager`` turns an asset's partitions into a ``TableSlice`` whose partition
dimensions pair a ``partition_expr`` column with partition keys (static, dynamic and multi
partitions) or a half-open time window. Here each dimension becomes a Hive predicate on its
column, typed by the column:

* keys: ``col IN (k1, k2, …)``, each key converted to the column's type (``'7'`` -> ``7``);
* a time window on a ``date`` column: ``col >= DATE start AND col < DATE end`` (the window
  must fall on midnights); on a ``timestamp`` column the same with wall-clock timestamps in the
  partitions' time zone; on a ``string`` column ``col IN (the partition keys of the window)``.

The dimensions are ANDed. The predicate decides which rows an ``overwrite`` replaces, which rows
a load returns, and which partitions of the table a slice covers; every output row must satisfy
it (:class:`~acid_platform.errors.InvalidPartitionError` otherwise, before anything is written).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from dagster import (
    MultiPartitionsDefinition,
    PartitionsDefinition,
    TimeWindow,
    TimeWindowPartitionsDefinition,
)
from dagster._core.storage.db_io_manager import TablePartitionDimension
from sqlglot import exp

from acid_platform.errors import AssetMetadataError, InvalidPartitionError
from acid_platform.table.expressions import literal_expression


@dataclass(frozen=True)
class Slice:
    """The part of table ``table`` (``db.table``) an output or input stands for: the rows
    satisfying ``predicate`` (``None``: the whole table), a predicate on ``columns``."""

    table: str
    columns: tuple[str, ...] = ()
    predicate: exp.Expr | None = None

    def sql(self, dialect: str = "hive") -> str | None:
        """The predicate as SQL text (``None`` for the whole table)."""
        return None if self.predicate is None else self.predicate.sql(dialect=dialect)

    def describe(self) -> str:
        """``SELECT * FROM table [WHERE …]``: what the slice is, for the UI."""
        where = self.sql()
        return f"SELECT * FROM {self.table}" + (f" WHERE {where}" if where else "")


def partition_columns(dimensions: Sequence[TablePartitionDimension], asset: str) -> tuple[str, ...]:
    """The ``partition_expr`` column of each dimension (lower case, as Hive names columns)."""
    out = []
    for dim in dimensions:
        if not isinstance(dim.partition_expr, str) or not dim.partition_expr.strip():
            raise AssetMetadataError(
                f"asset {asset}: a partition dimension has no partition_expr column; for multi "
                'partitions give one per dimension: {"partition_expr": {"date": "ds", …}}'
            )
        out.append(dim.partition_expr.strip().lower())
    return tuple(out)


def slice_of(
    table: str,
    dimensions: Sequence[TablePartitionDimension],
    types: Mapping[str, pa.DataType],
    partitions_def: PartitionsDefinition | None,
    asset: str,
) -> Slice:
    """The slice of ``table`` the dimensions select; ``types`` maps the table's (or, before it
    exists, the output's) lower-case column names to Arrow types."""
    columns = partition_columns(dimensions, asset)
    if not columns:
        return Slice(table)
    defs = _dimension_defs(partitions_def, len(columns))
    terms = []
    for column, dim, time_def in zip(columns, dimensions, defs, strict=True):
        if column not in types:
            raise AssetMetadataError(
                f"asset {asset}: partition_expr {column!r} is not a column of {table} "
                f"(columns: {sorted(types)}); it must name the column that holds the partition"
            )
        terms.append(_dimension_predicate(column, types[column], dim.partitions, time_def, asset))
    predicate = terms[0] if len(terms) == 1 else exp.and_(*terms)
    return Slice(table, columns, predicate)


def _dimension_defs(
    partitions_def: PartitionsDefinition | None, count: int
) -> list[TimeWindowPartitionsDefinition | None]:
    """The time partitions definition of each dimension (``None`` where it has none)."""
    defs: list[PartitionsDefinition | None]
    if isinstance(partitions_def, MultiPartitionsDefinition):
        defs = [d.partitions_def for d in partitions_def.partitions_defs]
    else:
        defs = [partitions_def] * count
    return [d if isinstance(d, TimeWindowPartitionsDefinition) else None for d in defs]


def _dimension_predicate(
    column: str,
    typ: pa.DataType,
    partitions: TimeWindow | Sequence[str],
    time_def: TimeWindowPartitionsDefinition | None,
    asset: str,
) -> exp.Expr:
    col = exp.column(exp.to_identifier(column, quoted=True))
    if isinstance(partitions, TimeWindow):
        start, end = _wall_clock(partitions.start), _wall_clock(partitions.end)
        if pa.types.is_date(typ):
            if start.time() != dt.time() or end.time() != dt.time():
                raise AssetMetadataError(
                    f"asset {asset}: partition column {column} is a date but the partitions are "
                    f"finer than a day ({partitions.start} – {partitions.end}); use a timestamp "
                    "or string column"
                )
            return _range(col, start.date(), end.date())
        if pa.types.is_timestamp(typ):
            return _range(col, start, end)
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            if time_def is None:
                raise AssetMetadataError(f"asset {asset}: no time partitions for column {column}")
            return _in(col, time_def.get_partition_keys_in_time_window(partitions), typ, asset)
        raise AssetMetadataError(
            f"asset {asset}: time partitions need a date, timestamp or string partition column; "
            f"{column} is {typ}"
        )
    return _in(col, list(partitions), typ, asset)


def _wall_clock(moment: dt.datetime) -> dt.datetime:
    """The time as the partitions' clock shows it (Hive timestamps carry no zone)."""
    return moment.replace(tzinfo=None)


def _range(col: exp.Expr, start: object, end: object) -> exp.Expr:
    return exp.and_(
        exp.GTE(this=col.copy(), expression=literal_expression(start)),
        exp.LT(this=col.copy(), expression=literal_expression(end)),
    )


def _in(col: exp.Expr, keys: Sequence[str], typ: pa.DataType, asset: str) -> exp.Expr:
    if not keys:
        return exp.false()
    try:
        values = pa.array(list(keys), pa.string()).cast(typ).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidPartitionError(
            f"asset {asset}: partition key(s) {list(keys)[:5]} are not {typ} values of "
            f"column {col.sql()}: {exc}"
        ) from exc
    literals = [literal_expression(v) for v in values]
    if len(literals) == 1:
        return exp.EQ(this=col, expression=literals[0])
    return exp.In(this=col, expressions=literals)


__all__ = ["Slice", "partition_columns", "slice_of"]
