"""The four writes of the IO manager, each ONE transaction on the table:

* ``append`` — INSERT the rows;
* ``overwrite`` — replace the slice: when the slice is a set of whole Hive partitions (its
  predicate names partition columns only), ``Table.replace_partitions``: ONE INSERT OVERWRITE
  statement writes a ``base_w`` into every partition that receives rows and an empty ``base_w``
  into every other partition of the slice, under a lock on each of those partitions only
  (concurrent backfills of other partitions are not blocked); otherwise DELETE of the slice's rows and INSERT in one
  transaction. Readers see the old slice or the new one, never a mix or nothing;
* ``merge`` — MERGE on the key columns (:class:`~.options.MergeOptions` clauses), the target
  restricted to the slice;
* ``delete`` — DELETE the slice's rows whose key columns match an output row.

Before anything is written the rows are checked: every output row must lie in the slice
(:class:`~acid_platform.errors.InvalidPartitionError`), and the columns must be the table's
(:class:`~acid_platform.errors.SchemaMismatchError`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from acid_platform.errors import InvalidPartitionError, SchemaMismatchError, UnknownColumnError
from acid_platform.orchestration.frames import Frame
from acid_platform.orchestration.options import WriteMode, WriteOptions
from acid_platform.orchestration.slices import Slice
from acid_platform.table import Table
from acid_platform.table.partitions import partition_values_table
from acid_platform.table.statement import StatementMetrics

#: The MERGE aliases: ``t`` the table, ``s`` the output.
TARGET, SOURCE = "t", "s"


def write_slice(
    table: Table, frame: Frame, options: WriteOptions, slice_: Slice
) -> list[StatementMetrics]:
    """Write ``frame`` (its columns checked with :func:`check_columns`) to ``slice_`` of
    ``table`` as ``options`` say (see module docs); returns the metrics of the statements run
    (all in one transaction)."""
    have = {n.lower() for n in frame.schema().names}
    if options.mode is not WriteMode.DELETE or set(referenced(slice_.predicate)) <= have:
        check_in_slice(frame, slice_)
    if options.mode is WriteMode.APPEND:
        return [table.insert(frame.data)]
    if options.mode is WriteMode.OVERWRITE:
        return overwrite(table, frame, slice_)
    if options.mode is WriteMode.MERGE:
        return [merge(table, frame, options, slice_)]
    return [delete_keys(table, frame, options, slice_)]


def check_in_slice(frame: Frame, slice_: Slice) -> None:
    """Refuse rows outside the slice (:class:`InvalidPartitionError`)."""
    if slice_.predicate is None:
        return
    outside = frame.count_outside(slice_.predicate)
    if outside:
        raise InvalidPartitionError(
            f"table {slice_.table}: {outside} output row(s) lie outside the asset's "
            f"partition(s) ({slice_.sql()}); nothing was written"
        )


def check_columns(table: Table, names: Sequence[str], options: WriteOptions) -> None:
    """The output's column ``names`` against the table's: no unknown column; every table
    column for append / overwrite / merge; the key columns for merge / delete."""
    have = {n.lower() for n in names}
    columns = table.schema.names
    unknown = sorted(have - set(columns))
    if unknown and options.mode is not WriteMode.DELETE:
        raise UnknownColumnError(
            f"table {table.name} has no column(s) {unknown}; its columns are {columns}"
        )
    keys = [k.lower() for k in options.key_columns]
    missing_keys = [k for k in keys if k not in have or k not in columns]
    if options.mode in (WriteMode.MERGE, WriteMode.DELETE) and missing_keys:
        raise SchemaMismatchError(
            f"table {table.name}: key column(s) {missing_keys} are not columns of both the "
            f"output ({sorted(have)}) and the table ({columns})"
        )
    missing = [c for c in columns if c not in have]
    if missing and options.mode is not WriteMode.DELETE:
        raise SchemaMismatchError(
            f"table {table.name}: the output lacks column(s) {missing} (the table has {columns})"
        )


def overwrite(table: Table, frame: Frame, slice_: Slice) -> list[StatementMetrics]:
    """Replace the slice with the rows, atomically (see module docs)."""
    spec = table.refresh()
    partition_cols = spec.partition_column_names
    if not partition_cols and slice_.predicate is None:
        return [table.insert(frame.data, overwrite=True)]
    if set(referenced(slice_.predicate)) <= set(partition_cols):
        receiving = frame.partition_names(partition_cols)
        covered = partitions_in(table, slice_.predicate)
        if not receiving and not covered:
            return []  # no rows, and the slice holds no partition yet: nothing to replace
        return [table.replace_partitions(frame.data, sorted({*receiving, *covered}))]
    wh = table.warehouse
    with wh.transaction():
        deleted = table.delete(slice_.predicate)
        inserted = table.insert(frame.data)
    return [deleted, inserted]


def merge(table: Table, frame: Frame, options: WriteOptions, slice_: Slice) -> StatementMetrics:
    """MERGE the rows on the key columns, the table's side restricted to the slice."""
    in_slice = qualified(slice_.predicate, TARGET)
    merger = table.merge(frame.data, match_on(options.key_columns, in_slice))
    clauses = options.merge
    if clauses.delete_condition:
        merger.when_matched_delete(clauses.delete_condition)
    if clauses.update:
        merger.when_matched_update_all(clauses.update_condition)
    if clauses.insert:
        merger.when_not_matched_insert_all(clauses.insert_condition)
    if clauses.delete_missing:
        merger.when_not_matched_by_source_delete(in_slice)
    return merger.execute()


def delete_keys(
    table: Table, frame: Frame, options: WriteOptions, slice_: Slice
) -> StatementMetrics:
    """DELETE the slice's rows whose key columns match an output row."""
    keys = [k.lower() for k in options.key_columns]
    on = match_on(keys, qualified(slice_.predicate, TARGET))
    return table.merge(frame.distinct(keys), on).when_matched_delete().execute()


def match_on(keys: Sequence[str], extra: exp.Expr | None) -> exp.Expr:
    """``t.k1 = s.k1 AND … [AND extra]``."""
    terms: list[exp.Expr] = [
        exp.EQ(this=column(k, TARGET), expression=column(k, SOURCE)) for k in keys
    ]
    if extra is not None:
        terms.append(extra)
    return terms[0] if len(terms) == 1 else exp.and_(*terms)


def partitions_in(table: Table, predicate: exp.Expr | None) -> list[str]:
    """The table's partitions (from the catalog) whose values satisfy ``predicate`` (all of
    them for ``None``)."""
    names = table.warehouse.list_partitions(table.name)
    if predicate is None or not names:
        return names
    spec = table.spec
    schema = table.schema
    values = partition_values_table(
        names, [(c, schema.field(c).type) for c in spec.partition_column_names], spec.full_name
    ).append_column("__acid_partition", [names])
    query = exp.select("__acid_partition").from_("parts").where(predicate.copy())
    result = table.warehouse.engine.execute(query, {"parts": values})
    return sorted(result.column("__acid_partition").to_pylist())


def referenced(predicate: exp.Expr | None) -> list[str]:
    """The columns ``predicate`` names (lower case)."""
    if predicate is None:
        return []
    return sorted({c.name.lower() for c in predicate.find_all(exp.Column)})


def qualified(predicate: exp.Expr | None, alias: str) -> exp.Expr | None:
    """``predicate`` with its columns qualified by ``alias``."""
    if predicate is None:
        return None

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            return column(node.name, alias)
        return node

    return predicate.copy().transform(qualify)


def column(name: str, alias: str) -> exp.Column:
    """``alias.name``, quoted."""
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(alias))


__all__ = [
    "SOURCE",
    "TARGET",
    "check_columns",
    "check_in_slice",
    "partitions_in",
    "referenced",
    "overwrite",
    "write_slice",
]
