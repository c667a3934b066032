"""Reads under one snapshot: what the read resource and the IO manager's loads hand out.

A :class:`TableSnapshot` takes ONE snapshot of one or more tables when it is made — the open
transaction's, or a fresh one held as a reader lease (the cleaner keeps every file it needs)
until it is closed — and :meth:`TableSnapshot.load` returns a lazy :class:`TableRead`: nothing
is read until ``to_arrow()``, ``to_batches()``, ``to_pandas()`` or ``to_spark()``, and every
read of it, however late, sees the same rows::

    with TableSnapshot(wh, ["sales", "stores"]) as snap:
        sales = snap.load("sales", columns=["id", "amount"], partition={"ds": "2024-01-01"})
        stores = snap.load("stores").to_pandas()   # the same snapshot as sales
        sales.to_arrow()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import InvalidPartitionError
from acid_platform.format import Snapshot
from acid_platform.table import Table
from acid_platform.table.deprecation import renamed_argument
from acid_platform.table.expressions import literal_expression, to_expression
from acid_platform.table.partitions import parse_partition_name
from acid_platform.table.read_lease import ReadLease
from acid_platform.table.scan import TableScan

if TYPE_CHECKING:
    from acid_platform.warehouse import Warehouse


class TableSnapshot:
    """One snapshot of ``tables`` (see module docs); close it (or use ``with``) to release the
    reader lease."""

    def __init__(self, warehouse: Warehouse, tables: Sequence[str]) -> None:
        self.warehouse = warehouse
        self.tables = {t.name: t for t in (warehouse.table(name) for name in tables)}
        specs = [t.spec for t in self.tables.values()]
        txn = warehouse.current_transaction
        self._lease: ReadLease | None = None
        if txn is not None:
            self.snapshots = {s.full_name: txn.snapshot(s) for s in specs}
        else:
            self._lease = ReadLease(warehouse, specs)
            self.snapshots = self._lease.snapshots

    def load(
        self,
        table: str,
        columns: Sequence[str] | None = None,
        partition: Mapping[str, Any] | str | None = None,
        where: str | exp.Expr | None = None,
        *,
        filter: str | exp.Expr | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> TableRead:
        """A lazy read of ``table`` (one of this snapshot's) in this snapshot: ``columns``
        (all if ``None``), one ``partition`` (``{"ds": "2024-01-01"}`` or
        ``"ds=2024-01-01"``) and a Hive predicate ``where`` (``filter=`` is its deprecated
        alias)."""
        t = self.table(table)
        given = renamed_argument(where, filter, "filter=", "where=")
        terms = [to_expression(given, f"where of {t.name}")] if given is not None else []
        if partition is not None:
            terms.append(partition_predicate(t, partition))
        predicate = None if not terms else terms[0] if len(terms) == 1 else exp.and_(*terms)
        return TableRead(t, self.snapshots[t.name], columns, predicate)

    def table(self, name: str) -> Table:
        """The table ``name`` of this snapshot."""
        full = self.warehouse.table(name).name
        if full not in self.tables:
            raise KeyError(f"table {full} is not in this snapshot (it has {sorted(self.tables)})")
        return self.tables[full]

    def close(self) -> None:
        """Release the reader lease (idempotent); reads of it must be done by now."""
        if self._lease is not None:
            self._lease.close()
            self._lease = None

    def __enter__(self) -> TableSnapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TableRead:
    """The rows of one table (projection and predicate applied) in one snapshot; read on
    demand, as often as wanted, always the same rows."""

    def __init__(
        self,
        table: Table,
        snapshot: Snapshot,
        columns: Sequence[str] | None = None,
        predicate: exp.Expr | None = None,
    ) -> None:
        self.table = table
        self.snapshot = snapshot
        self.columns = list(columns) if columns is not None else None
        self.predicate = predicate

    def plan(self) -> TableScan:
        """The lazy scan of these rows (``plan_files()``, ``to_batches()``, ``to_arrow()``)."""
        return self.table.scan(self.columns, self.predicate, snapshot=self.snapshot)

    def to_arrow(self) -> pa.Table:
        """The rows as an Arrow table."""
        return self.plan().to_arrow()

    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as a stream of record batches, read split by split as it is consumed
        (memory: one split and its bucket's delete set)."""
        return self.plan().to_batches()

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame."""
        return self.to_arrow().to_pandas()

    def to_spark(self, spark: Any) -> Any:
        """The rows as a Spark DataFrame read by Spark's executors through the ``acid`` data
        source, pinned to this snapshot. The warehouse is registered on ``spark`` first
        (``wh.register_spark(spark, compaction=False)``, whose docstring lists what that
        changes on the session)."""
        from acid_platform.engines.spark import NAME
        from acid_platform.warehouse import Warehouse

        wh = self.table.warehouse
        if not isinstance(wh, Warehouse):
            raise TypeError(
                f"to_spark() reads a table of an acid_platform.Warehouse, not of a "
                f"{type(wh).__name__}"
            )
        wh.register_spark(spark, compaction=False)
        reader = (
            spark.read.format(NAME)
            .option("valid_txns", str(self.snapshot.valid_txns))
            .option("valid_write_ids", str(self.snapshot.write_ids))
        )
        df = reader.load(self.table.name)
        if self.predicate is not None:
            df = df.where(self.predicate.sql(dialect="spark"))
        return df.select(*self.columns) if self.columns is not None else df

    def __repr__(self) -> str:
        where = "" if self.predicate is None else f" WHERE {self.predicate.sql(dialect='hive')}"
        return f"TableRead({self.table.name}{where} @ {self.snapshot.write_ids})"


def partition_predicate(table: Table, partition: Mapping[str, Any] | str) -> exp.Expr:
    """``col = value AND …`` for a partition given as a dict or a Hive name (``ds=2024-01-01``),
    each value converted to its column's type."""
    items = parse_partition_name(partition) if isinstance(partition, str) else partition.items()
    schema = table.schema
    known = set(table.spec.partition_column_names)
    terms: list[exp.Expr] = []
    for column, value in items:
        name = str(column).lower()
        if name not in known:
            raise InvalidPartitionError(
                f"table {table.name} has no partition column {column!r}; its partition columns "
                f"are {sorted(known)}"
            )
        typ = schema.field(name).type
        try:
            typed = pa.array([value]).cast(typ).to_pylist()[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise InvalidPartitionError(
                f"table {table.name}: {value!r} is not a {typ} value of partition column {name}"
            ) from exc
        col = exp.column(exp.to_identifier(name, quoted=True))
        terms.append(
            exp.Is(this=col, expression=exp.Null())
            if typed is None
            else exp.EQ(this=col, expression=literal_expression(typed))
        )
    if not terms:
        raise InvalidPartitionError(f"table {table.name}: an empty partition spec")
    return terms[0] if len(terms) == 1 else exp.and_(*terms)


__all__ = ["TableRead", "TableSnapshot", "partition_predicate"]
