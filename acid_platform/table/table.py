"""``Table``: INSERT, UPDATE, DELETE, MERGE and scans of one ACID table.

>>> # from acid_platform import Warehouse
>>> # wh = Warehouse.open("/tmp/wh"); t = wh.create_table("employee", [("id", "int"), ("name", "string")])
>>> # t.insert([{"id": 1, "name": "Jerry"}]); t.update({"name": lit("Tom")}, "id = 1")
>>> # t.scan(["name"], where="id = 1").to_arrow()
>>> # t.merge(updates, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()

Every write is one statement: it runs in the warehouse's open transaction (``wh.transaction()``)
or in a transaction of its own (:mod:`.statement`), and returns a frozen
:class:`~acid_platform.table.statement.StatementMetrics`. Data of a native engine (a Spark
DataFrame) is written by that engine; everything else runs on the embedded path. Reads are lazy:
:meth:`Table.scan` and :meth:`Table.changes` plan, and read when asked (``to_arrow()``, …).

One predicate word throughout: ``where`` (UPDATE, DELETE, scans, the change feed; MERGE joins
``on``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import ChangeFeedIncarnationError, InvalidPartitionError
from acid_platform.format import Snapshot
from acid_platform.format.delete_merge import conf_delete_events_cap
from acid_platform.format.fs import Location, resolve
from acid_platform.metastore.model import CommittedSource, LockComponent, Source, TableSpec
from acid_platform.table import dml, dml_write, inserts
from acid_platform.table.changes import ChangeScan, change_window
from acid_platform.table.deprecation import deprecated, renamed_argument
from acid_platform.table.expressions import expression_or_none, to_expression
from acid_platform.table.locations import incarnation_of
from acid_platform.table.merger import TableMerger
from acid_platform.table.native import NativeEngine
from acid_platform.table.read_lease import ReadLease
from acid_platform.table.scan import TableScan, plan_scan
from acid_platform.table.scan_filter import hive_filter, resolve_filter
from acid_platform.table.schema import has_wide_constant, table_schema
from acid_platform.table.statement import (
    StatementMetrics,
    WriteContext,
    WriteOutcome,
    WriteRequest,
    run_write,
    statement_guard,
)
from acid_platform.table.transaction import ledger_of, write_lock_type

if TYPE_CHECKING:
    from acid_platform.table.host import TableHost

T = TypeVar("T")


class Table:
    """An ACID table of a warehouse (``acid_platform.Warehouse``; ``wh.table(name)``)."""

    def __init__(self, warehouse: TableHost, spec: TableSpec) -> None:
        self.warehouse = warehouse
        self._spec = spec

    # ------------------------------------------------------------------ description
    @property
    def name(self) -> str:
        """``db.table``."""
        return self._spec.full_name

    @property
    def spec(self) -> TableSpec:
        """The catalog entry (as of the last statement)."""
        return self._spec

    @property
    def schema(self) -> pa.Schema:
        """Arrow schema: data columns, then partition columns."""
        return table_schema(self._spec)

    @property
    def incarnation(self) -> str:
        """This incarnation of the table (:func:`~.locations.incarnation_of` its location): a
        table dropped and created again is another, with write ids of its own."""
        spec = self.spec
        return incarnation_of(spec.location, spec.created)

    @property
    def location(self) -> Location:
        """The table directory."""
        return resolve(self._spec.location, self.warehouse.filesystem_for(self._spec.location))

    def refresh(self) -> TableSpec:
        """Re-read the catalog entry (a statement's first step) and return it."""
        self._spec = self.warehouse.table_spec(self._spec.db, self._spec.name)
        return self._spec

    def __repr__(self) -> str:
        return f"Table({self.name!r})"

    # ------------------------------------------------------------------ reads
    def scan(
        self,
        columns: Sequence[str] | None = None,
        where: str | exp.Expr | None = None,
        *,
        with_row_id: bool = False,
        include_partition_columns: bool = True,
        snapshot: Snapshot | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> TableScan:
        """The rows one snapshot sees, as a lazy :class:`~acid_platform.table.scan.TableScan`
        (as pyiceberg's ``table.scan()``): nothing is read until ``to_arrow()``,
        ``to_batches()`` / ``to_arrow_batch_reader()`` (a stream, split by split: memory holds
        one stripe and its bucket's delete set, not the table), ``to_pandas()``; ``plan_files()``
        lists what it would read.

        ``columns`` in the order wanted (default: all, partition columns last unless
        ``include_partition_columns`` is False); ``where`` is a Hive predicate (text such as
        ``"ds = '2024-01-01' AND id > 3"``, or a sqlglot tree): conditions on partition columns
        prune directories. ``with_row_id`` adds Hive's ``row__id`` struct first.

        The snapshot: ``snapshot``, else the open transaction's (read the scan before the
        transaction ends), else a fresh one held as a reader lease from now until the scan is
        read, closed (``close()``, or ``with t.scan() as s:``) or garbage collected.
        ``filter=`` is a deprecated alias of ``where=``.
        """
        return plan_table_scan(
            self,
            columns,
            renamed_argument(where, filter, "filter=", "where="),
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
            snapshot=snapshot,
        )

    def changes(
        self,
        from_write_id: int,
        to_write_id: int | None = None,
        *,
        key: str | Sequence[str] | None = None,
        where: str | exp.Expr | None = None,
        incarnation: str | None = None,
        snapshot: Snapshot | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - the deprecated alias of where
    ) -> ChangeScan:
        """The change feed, as a lazy :class:`~acid_platform.table.changes.ChangeScan`
        (``to_arrow()``, ``to_batches()`` / ``to_arrow_batch_reader()`` partition by partition,
        ``to_pandas()``): the committed inserts, deletes and updates of the write ids
        ``from_write_id < w <= to_write_id`` (default: the newest final write id), with each
        change's ``_change_type``, ``_write_id`` and ``row__id``; deletes carry the deleted
        rows' values. ``key`` (a column or columns identifying a row) pairs a delete and an
        insert of the same write id and key into ``update_preimage`` / ``update_postimage``;
        ``where`` (a Hive predicate) prunes partitions and keeps the change rows it holds for.
        See :mod:`acid_platform.table.changes`; a range below a major compaction's (or INSERT
        OVERWRITE's) base raises :class:`~acid_platform.errors.ChangeHistoryUnavailableError`.
        ``incarnation`` (:attr:`incarnation` when the position was taken) refuses a position of
        another incarnation of the table (dropped and created again) with a
        :class:`~acid_platform.errors.ChangeFeedIncarnationError`: its write ids are not these.
        The range and the incarnation are checked now; the snapshot is taken as :meth:`scan`
        takes it. ``filter=`` is a deprecated alias of ``where=``.
        """
        where = renamed_argument(where, filter, "filter=", "where=")
        txn = self.warehouse.current_transaction
        keys = (key,) if isinstance(key, str) else tuple(key or ())

        def plan(spec: TableSpec, snap: Snapshot, release: Callable[[], None] | None) -> ChangeScan:
            found = incarnation_of(spec.location, spec.created)
            if incarnation and incarnation != found:
                raise ChangeFeedIncarnationError(
                    f"table {spec.full_name} was dropped and created again: a change-feed "
                    f"position of its incarnation {incarnation} does not apply to incarnation "
                    f"{found} (start again from write id 0)",
                    table=spec.full_name,
                    expected=incarnation,
                    found=found,
                )
            own = ledger_of(txn).write_id_of(spec) if txn is not None else None
            window = change_window(spec, snap.write_ids, from_write_id, to_write_id, own)
            rows = hive_filter(spec, self.warehouse.engine, where)
            return ChangeScan(
                spec, self.location, snap, window, key=keys, where=rows, release=release
            )

        return plan_read(self, snapshot, plan)

    def to_arrow(self) -> pa.Table:
        """All rows: ``scan().to_arrow()``."""
        return self.scan().to_arrow()

    # ------------------------------------------------------------------ deprecated reads
    def scan_at(
        self,
        snapshot: Snapshot,
        columns: Sequence[str] | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - as it was
        with_row_id: bool = False,
        include_partition_columns: bool = True,
    ) -> pa.Table:
        """Deprecated: ``scan(columns, where, snapshot=snapshot).to_arrow()``."""
        deprecated("Table.scan_at(snapshot, …)", "Table.scan(…, snapshot=snapshot).to_arrow()")
        return self.scan(
            columns,
            filter,
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
            snapshot=snapshot,
        ).to_arrow()

    def scan_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - as it was
        with_row_id: bool = False,
        include_partition_columns: bool = True,
    ) -> pa.RecordBatchReader:
        """Deprecated: ``scan(columns, where).to_batches()``."""
        deprecated("Table.scan_batches(…)", "Table.scan(…).to_batches()")
        return self.scan(
            columns,
            filter,
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
        ).to_batches()

    def plan_scan(
        self,
        columns: Sequence[str] | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - as it was
        with_row_id: bool = False,
        include_partition_columns: bool = True,
        *,
        snapshot: Snapshot | None = None,
        exact_filter: bool = True,
        force_wide: bool = False,
    ) -> TableScan:
        """Deprecated: ``scan(columns, where, …)``, which is lazy now."""
        deprecated("Table.plan_scan(…)", "Table.scan(…)")
        return plan_table_scan(
            self,
            columns,
            filter,
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
            snapshot=snapshot,
            exact_where=exact_filter,
            force_wide=force_wide,
        )

    def changes_batches(
        self,
        from_write_id: int,
        to_write_id: int | None = None,
        *,
        key: str | Sequence[str] | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - as it was
        incarnation: str | None = None,
    ) -> pa.RecordBatchReader:
        """Deprecated: ``changes(…).to_batches()``."""
        deprecated("Table.changes_batches(…)", "Table.changes(…).to_batches()")
        return self.changes(
            from_write_id, to_write_id, key=key, where=filter, incarnation=incarnation
        ).to_batches()

    def plan_changes(
        self,
        from_write_id: int,
        to_write_id: int | None = None,
        *,
        key: str | Sequence[str] | None = None,
        filter: str | exp.Expr | None = None,  # noqa: A002 - as it was
        snapshot: Snapshot | None = None,
        incarnation: str | None = None,
    ) -> ChangeScan:
        """Deprecated: ``changes(…)``, which is lazy now."""
        deprecated("Table.plan_changes(…)", "Table.changes(…)")
        return self.changes(
            from_write_id,
            to_write_id,
            key=key,
            where=filter,
            incarnation=incarnation,
            snapshot=snapshot,
        )

    # ------------------------------------------------------------------ writes
    def insert(
        self,
        data: Any,
        *,
        partition: Mapping[str, Any] | None = None,
        overwrite: bool = False,
        engine: NativeEngine | None = None,
        sources: Sequence[Source] = (),
    ) -> StatementMetrics:
        """INSERT INTO (or INSERT OVERWRITE with ``overwrite=True``) the rows of ``data``.

        ``data``: a pyarrow Table/RecordBatch, a list of dicts or a pandas DataFrame — or data of
        a native engine of the warehouse (a Spark DataFrame after ``wh.register_spark(spark)``),
        which that engine writes without the rows leaving it. Partition values come from
        ``partition`` (static) or from the data's partition columns (dynamic). INSERT OVERWRITE
        replaces the partitions it writes (the table if unpartitioned) with a ``base_<w>``
        directory. ``engine``: write with this native engine whatever the data.

        ``sources`` name what the rows were loaded from (landing files): they are committed
        into the table with the statement's transaction, at most once — a source committed
        already raises :class:`~acid_platform.errors.DuplicateSourceError` and nothing is
        written (see :meth:`committed_sources`).
        """
        wh = self.warehouse
        native = engine or wh.native_engines.for_data(data)
        with statement_guard(wh):
            spec = self.refresh()
            if native is not None:
                relation, static_name = native.prepare_insert(spec, data, partition)
            else:
                relation, static_name = inserts.prepare_rows(spec, data, partition)

        def write(ctx: WriteContext) -> WriteOutcome:
            if native is not None:
                outcome = native.write_rows(ctx, relation, overwrite)
            else:
                outcome = inserts.write_rows(ctx, relation, overwrite)
            whole = static_name is not None or not spec.partition_columns
            if overwrite and whole and not outcome.written.files:
                return inserts.write_empty_base(ctx, static_name)
            return outcome

        request = WriteRequest.insert(spec, wh.conf, static_name, overwrite, sources)
        return run_write(wh, spec, self.location, request, write)

    def replace_partitions(
        self,
        data: Any,
        partitions: Sequence[str | None],
        *,
        engine: NativeEngine | None = None,
    ) -> StatementMetrics:
        """Replace ``partitions`` (partition names, ``"ds=2024-01-01"``; ``[None]``: the
        unpartitioned table) with the rows of ``data``, as ONE INSERT OVERWRITE statement: a
        ``base_w`` with its rows into each partition the rows carry, an empty ``base_w`` into
        each listed partition that receives none, under an EXCLUSIVE lock on each listed
        partition only (not on the table: writers of other partitions go on). Readers see the
        old partitions or the new ones, never a mix.

        ``data`` is what :meth:`insert` takes (an empty table empties the partitions: TRUNCATE
        of an insert-only table, as Hive writes it); its partition columns say where each row
        goes, and a row outside ``partitions`` raises
        :class:`~acid_platform.errors.InvalidPartitionError`, nothing written. ``engine``: write
        with this native engine whatever the data.
        """
        wh = self.warehouse
        native = engine or wh.native_engines.for_data(data)
        with statement_guard(wh):
            spec = self.refresh()
            listed = replaced_partitions(spec, partitions)
            if native is not None:
                relation, _ = native.prepare_insert(spec, data, None)
            else:
                relation, _ = inserts.prepare_rows(spec, data, None)
        lock = write_lock_type(wh.conf, overwrite=True)
        request = WriteRequest(
            tuple(LockComponent(lock, spec.db, spec.name, p) for p in listed),
            check_outdated=True,
            overwrite=True,
        )

        def write(ctx: WriteContext) -> WriteOutcome:
            if native is not None:
                outcome = native.write_rows(ctx, relation, True)
            else:
                outcome = inserts.write_rows(ctx, relation, True)
            written = {p or None for p in outcome.partitions}
            outside = sorted(str(p) for p in written if p not in listed)
            if outside:
                raise InvalidPartitionError(
                    f"table {spec.full_name}: rows of partition(s) {outside} lie outside the "
                    f"partitions replaced ({[p or '' for p in listed]}); nothing was written"
                )
            empty = [p for p in listed if p not in written]
            return inserts.write_empty_bases(ctx, empty, outcome)

        return run_write(wh, spec, self.location, request, write)

    def overwrite_empty(self, partitions: Sequence[str | None]) -> StatementMetrics:
        """Deprecated: ``replace_partitions(<no rows>, partitions)``."""
        deprecated(
            "Table.overwrite_empty(partitions)", "Table.replace_partitions(rows, partitions)"
        )
        return self.replace_partitions(self.schema.empty_table(), partitions)

    def committed_sources(self, keys: Sequence[str] | None = None) -> list[CommittedSource]:
        """The sources committed into this table (those among ``keys``, if given), in commit
        order: what each was, and which transaction and write id loaded it."""
        return self.warehouse.metastore.committed_sources(self._spec.db, self._spec.name, keys)

    def update(
        self,
        values: Mapping[str, Any] | None = None,
        where: str | exp.Expr | None = None,
        *,
        engine: NativeEngine | None = None,
        set: Mapping[str, Any] | None = None,  # noqa: A002 - the deprecated alias of values
    ) -> StatementMetrics:
        """UPDATE … SET col = value [, …] [WHERE predicate]: ``values`` maps columns to values.

        Values are Hive SQL expressions (``"salary * 2"`` or a sqlglot syntax tree) or literals
        (``lit("Tom")``, ``3``); ``where`` is text or a tree. Text is parsed once, here, and the
        trees go on to the plan and the target read. Partition and bucketing columns cannot be
        updated (as in Hive). ``engine``: run on this native engine (Spark) instead of the
        embedded one. ``set=`` is a deprecated alias of ``values=``.
        """
        values = renamed_argument(values, set, "set=", "values=")
        if values is None:
            raise TypeError("Table.update() needs the values to set: update({'col': value}, where)")
        with statement_guard(self.warehouse):
            spec = self.refresh()
            dml.require_transactional(spec)
            label = f"UPDATE {spec.full_name}"
            tree = expression_or_none(where, f"WHERE clause of {label}")
            trees = {c: to_expression(v, f"value of {c} in {label}") for c, v in values.items()}
            plan = dml.plan_update(spec, trees, tree)
        return self.run_plan(spec, plan, tree, engine=engine)

    def delete(
        self, where: str | exp.Expr | None = None, *, engine: NativeEngine | None = None
    ) -> StatementMetrics:
        """DELETE FROM … [WHERE predicate]; the predicate is text (parsed once, here) or a
        sqlglot syntax tree."""
        with statement_guard(self.warehouse):
            spec = self.refresh()
            dml.require_transactional(spec)
            tree = expression_or_none(where, f"WHERE clause of DELETE FROM {spec.full_name}")
            plan = dml.plan_delete(spec, tree)
        return self.run_plan(spec, plan, tree, engine=engine)

    def merge(
        self,
        source: Any,
        on: str | exp.Expr,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
        engine: NativeEngine | None = None,
    ) -> TableMerger:
        """MERGE INTO this table USING ``source`` ON ``on``: add WHEN clauses, then ``execute()``.

        ``source``: Arrow data, a list of dicts, a pandas DataFrame, or a SQL query (text or a
        sqlglot syntax tree) over warehouse tables, read in the same snapshot as the target — or
        data of a native engine of the warehouse (a Spark DataFrame), on which the MERGE then
        runs (or on ``engine`` whatever the source). ``on``, WHEN conditions and values are
        text or trees; text is parsed once, when :meth:`TableMerger.execute` starts.
        """
        return TableMerger(
            self, source, on, source_alias=source_alias, target_alias=target_alias, engine=engine
        )

    def run_plan(
        self,
        spec: TableSpec,
        plan: dml.DmlPlan,
        where: str | exp.Expr | None = None,
        *,
        source: Any = None,
        lock_extra: Sequence[LockComponent] = (),
        engine: NativeEngine | None = None,
    ) -> StatementMetrics:
        """Run a planned UPDATE / DELETE / MERGE as one statement: on ``engine`` (a native
        engine; ``source`` may then be its relation) or on the embedded path, where ``source``
        is a function giving the rows in the statement's transaction."""

        def write(ctx: WriteContext) -> WriteOutcome:
            if engine is not None:
                return engine.write_plan(ctx, plan, source, where)
            return dml_write.write_plan(ctx, plan, source, where)

        offsets = [b.statement for b in plan.branches]
        request = WriteRequest.dml(
            spec, self.warehouse.conf, plan.statement_count, offsets, lock_extra
        )
        return run_write(self.warehouse, spec, self.location, request, write)


def plan_table_scan(
    table: Table,
    columns: Sequence[str] | None = None,
    where: str | exp.Expr | None = None,
    *,
    with_row_id: bool = False,
    include_partition_columns: bool = True,
    snapshot: Snapshot | None = None,
    exact_where: bool = True,
    force_wide: bool = False,
) -> TableScan:
    """:meth:`Table.scan` with two options of an engine reading for a query (SQL): without
    ``exact_where`` the predicate only prunes (partitions, stripes, pushed conjuncts) and the
    caller evaluates it on the rows (the query applies its WHERE itself); ``force_wide`` (or a
    predicate holding a constant beyond the nanosecond range) reads every timestamp column at
    microseconds (``TableScan.force_wide``)."""
    wh = table.warehouse

    def plan(spec: TableSpec, snap: Snapshot, release: Callable[[], None] | None) -> TableScan:
        tree = resolve_filter(spec, where) if isinstance(where, str) else where  # parse once
        return plan_scan(
            spec,
            table.location,
            snap,
            columns=columns,
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
            where=hive_filter(spec, wh.engine, tree, exact=exact_where),
            release=release,
            delete_events_cap=conf_delete_events_cap(wh.conf),
            force_wide=force_wide or has_wide_constant(tree),
        )

    return plan_read(table, snapshot, plan)


def plan_read(
    table: Table,
    snapshot: Snapshot | None,
    plan: Callable[[TableSpec, Snapshot, Callable[[], None] | None], T],
) -> T:
    """``plan(spec, snapshot, release)`` under ``snapshot``, else the open transaction's, else
    a fresh one held as a reader lease (``release`` closes it; closed here if ``plan``
    fails): how :meth:`Table.scan` and :meth:`Table.changes` take their snapshot."""
    lease: ReadLease | None = None
    with statement_guard(table.warehouse) as txn:
        spec = table.spec if snapshot is not None else table.refresh()
        if snapshot is None and txn is not None:
            snapshot = txn.snapshot(spec)
        elif snapshot is None:
            lease = ReadLease(table.warehouse, [spec])
            snapshot = lease.snapshots[spec.full_name]
        try:
            return plan(spec, snapshot, lease.close if lease is not None else None)
        except BaseException:
            if lease is not None:
                lease.close()
            raise


def replaced_partitions(spec: TableSpec, partitions: Sequence[str | None]) -> list[str | None]:
    """The partitions a :meth:`Table.replace_partitions` names, once each, sorted (the order
    their locks are asked in; ``None``: the unpartitioned table, its only one)."""
    listed = list(dict.fromkeys(p or None for p in partitions))
    if not listed:
        raise InvalidPartitionError(f"table {spec.full_name}: no partition to replace")
    if not spec.partition_columns and listed != [None]:
        raise InvalidPartitionError(
            f"table {spec.full_name} is not partitioned: replace its one partition, [None]"
        )
    if spec.partition_columns and None in listed:
        raise InvalidPartitionError(
            f"table {spec.full_name} is partitioned: name the partitions to replace "
            f"(such as {'/'.join(c + '=…' for c in spec.partition_column_names)})"
        )
    return sorted(listed, key=str)
