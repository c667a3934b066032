"""``Table``: INSERT, UPDATE, DELETE, MERGE and scans of one ACID table.

>>> # wh = TableWarehouse.open("/tmp/wh"); t = wh.create_table("employee", [("id", "int"), ("name", "string")])
>>> # t.insert([{"id": 1, "name": "Jerry"}]); t.update({"name": lit("Tom")}, "id = 1")
>>> # t.merge(updates, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()

Every call is one statement: it runs in the warehouse's open transaction (``wh.transaction()``)
or in a transaction of its own, and returns a metrics dict (rows, write id, statement ids,
directories written).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from acid_platform.errors import InvalidPartitionError
from acid_platform.format import ROW_ID_FIELDS
from acid_platform.format.fs import Location, resolve
from acid_platform.metastore.model import LockComponent, LockType, OperationType, TableSpec
from acid_platform.table import dml
from acid_platform.table.dml_output import StatementRows, assemble
from acid_platform.table.dml_read import read_target
from acid_platform.table.partitions import make_partition_name, static_partition_values
from acid_platform.table.scan import Snapshot, scan_table
from acid_platform.table.schema import (
    check_not_null,
    conform,
    data_schema,
    not_null_columns,
    table_schema,
    to_arrow,
)
from acid_platform.table.transaction import Transaction, insert_lock_type, write_lock_type
from acid_platform.table.writes import (
    EventSink,
    PendingWrites,
    WriteMetrics,
    run_writes,
    split_by_partition,
)

if TYPE_CHECKING:
    from acid_platform.table.merger import TableMerger
    from acid_platform.table.warehouse import TableWarehouse


class Table:
    """An ACID table of a :class:`~acid_platform.table.warehouse.TableWarehouse`."""

    def __init__(self, warehouse: TableWarehouse, spec: TableSpec) -> None:
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
    def location(self) -> Location:
        """The table directory."""
        return resolve(self._spec.location, self.warehouse.filesystem_for(self._spec.location))

    def __repr__(self) -> str:
        return f"Table({self.name!r})"

    # ------------------------------------------------------------------ reads
    def scan(
        self,
        columns: Sequence[str] | None = None,
        filter: str | None = None,  # noqa: A002 - the natural name
        with_row_id: bool = False,
        include_partition_columns: bool = True,
    ) -> pa.Table:
        """The rows one snapshot sees (the open transaction's, or the latest committed).

        ``filter`` is a Hive predicate (``"ds = '2024-01-01' AND id > 3"``); conditions on
        partition columns prune directories. ``with_row_id`` adds Hive's ``row__id`` struct first.
        """
        txn = self.warehouse.current_transaction
        if txn is not None:
            with self.warehouse._statement_guard():
                spec = self._refresh()
                snapshot = Snapshot(txn.valid_txns, txn.write_ids(spec))
                return self._scan(
                    spec, snapshot, columns, filter, with_row_id, include_partition_columns
                )
        spec = self._refresh()
        with self.warehouse._read_snapshot([spec]) as snapshots:
            snapshot = snapshots[spec.full_name]
            return self._scan(
                spec, snapshot, columns, filter, with_row_id, include_partition_columns
            )

    def to_arrow(self) -> pa.Table:
        """All rows (``scan()``)."""
        return self.scan()

    # ------------------------------------------------------------------ writes
    def insert(
        self, data: Any, *, partition: Mapping[str, Any] | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """INSERT INTO (or INSERT OVERWRITE with ``overwrite=True``) the rows of ``data``.

        ``data``: a pyarrow Table/RecordBatch, a list of dicts or a pandas DataFrame — or data of
        a native engine of the warehouse (a Spark DataFrame after ``wh.register_spark(spark)``),
        which that engine writes without the rows leaving it. Partition values come from
        ``partition`` (static) or from the data's partition columns (dynamic). INSERT OVERWRITE
        replaces the partitions it writes (the table if unpartitioned) with a ``base_<w>``
        directory.
        """
        native = self.warehouse.native_engines.for_data(data)
        if native is not None:
            mode = "overwrite" if overwrite else "append"
            return native.write(data, self, mode=mode, partition=partition)
        with self.warehouse._statement_guard():
            spec = self._refresh()
            rows, static_name = self._prepare_rows(spec, data, partition)
        conf = self.warehouse.conf

        def run(txn: Transaction) -> dict[str, Any]:
            lock_type = (
                write_lock_type(conf, overwrite=True) if overwrite else insert_lock_type(conf)
            )
            txn.lock([LockComponent(lock_type, spec.db, spec.name, static_name)])
            if overwrite:
                txn.check_outdated(spec)
            groups = split_by_partition(rows, spec.partition_column_names, data_columns(spec))
            if overwrite and not groups and (static_name is not None or not spec.partition_columns):
                groups = [(static_name or "", data_schema(spec).empty_table())]
            statement = txn.reserve_statements(spec, 1, overwrite=overwrite)
            metrics = WriteMetrics()
            if groups:
                write_id = txn.record_writes(
                    spec, [(name or None, OperationType.INSERT) for name, _ in groups]
                )
                sink = EventSink(spec, self.location, write_id)
                metrics = run_writes(
                    [
                        sink.insert_writes(name, part, statement, overwrite=overwrite)
                        for name, part in groups
                    ]
                )
                self.warehouse._register_partitions(txn, spec, [n for n, _ in groups])
            return _metrics(
                txn, spec, metrics, [statement], {"num_inserted_rows": metrics.rows_inserted}
            )

        return self.warehouse._run_statement(run)

    def update(self, set: Mapping[str, Any], where: str | None = None) -> dict[str, Any]:  # noqa: A002 - SQL's word
        """UPDATE … SET col = value [, …] [WHERE predicate]; returns ``num_updated_rows``.

        Values are Hive SQL expressions (``"salary * 2"``) or literals (``lit("Tom")``, ``3``).
        Partition and bucketing columns cannot be updated (as in Hive).
        """
        with self.warehouse._statement_guard():
            spec = self._refresh()
            plan = dml.plan_update(spec, set, where)
        out = self._run_plan(spec, plan, where)
        return {"num_updated_rows": out.pop("num_target_rows_updated"), **_drop_counts(out)}

    def delete(self, where: str | None = None) -> dict[str, Any]:
        """DELETE FROM … [WHERE predicate]; returns ``num_deleted_rows``."""
        with self.warehouse._statement_guard():
            spec = self._refresh()
            plan = dml.plan_delete(spec, where)
        out = self._run_plan(spec, plan, where)
        return {"num_deleted_rows": out.pop("num_target_rows_deleted"), **_drop_counts(out)}

    def merge(
        self, source: Any, on: str, *, source_alias: str = "s", target_alias: str = "t"
    ) -> TableMerger:
        """MERGE INTO this table USING ``source`` ON ``on``: add WHEN clauses, then ``execute()``.

        ``source``: Arrow data, a list of dicts, a pandas DataFrame, or a SQL query (string)
        over warehouse tables, read in the same snapshot as the target — or data of a native
        engine of the warehouse (a Spark DataFrame), on which the MERGE then runs.
        """
        from acid_platform.table.merger import TableMerger

        return TableMerger(self, source, on, source_alias=source_alias, target_alias=target_alias)

    # ------------------------------------------------------------------ internals
    def _refresh(self) -> TableSpec:
        self._spec = self.warehouse.table_spec(self._spec.db, self._spec.name)
        return self._spec

    def _scan(
        self,
        spec: TableSpec,
        snapshot: Snapshot,
        columns: Sequence[str] | None,
        filter: str | exp.Expr | None,  # noqa: A002
        with_row_id: bool,
        include_partition_columns: bool,
    ) -> pa.Table:
        return scan_table(
            spec,
            self.location,
            snapshot,
            self.warehouse.engine,
            columns=columns,
            filter=filter,
            with_row_id=with_row_id,
            include_partition_columns=include_partition_columns,
        )

    def _prepare_rows(
        self, spec: TableSpec, data: Any, partition: Mapping[str, Any] | None
    ) -> tuple[pa.Table, str | None]:
        table = to_arrow(data, f"INSERT INTO {spec.full_name}")
        static, static_name = static_partition(spec, partition, table.column_names)
        for col, value in static.items():
            table = table.append_column(col, pa.array([value] * table.num_rows))
        rows = conform(spec.full_name, table, table_schema(spec))
        check_not_null(spec.full_name, rows, not_null_columns(spec))
        return rows, static_name

    def _read_target(
        self,
        txn: Transaction,
        spec: TableSpec,
        plan: dml.DmlPlan,
        where: str | None,
        source: pa.Table | None,
    ) -> pa.Table:
        snapshot = Snapshot(txn.valid_txns, txn.write_ids(spec))
        return read_target(
            spec, self.location, snapshot, self.warehouse.engine, plan, where, source
        )

    def _run_plan(
        self,
        spec: TableSpec,
        plan: dml.DmlPlan,
        where: str | None = None,
        *,
        source: Callable[[Transaction], pa.Table] | None = None,
        lock_extra: Sequence[LockComponent] = (),
    ) -> dict[str, Any]:
        """Run a DML plan as one statement: lock, read target (and source), execute on the
        engine, write the labelled rows as events."""
        conf = self.warehouse.conf

        def run(txn: Transaction) -> dict[str, Any]:
            lock_type = write_lock_type(conf)
            txn.lock([LockComponent(lock_type, spec.db, spec.name), *lock_extra])
            if lock_type is not LockType.SHARED_WRITE:
                txn.check_outdated(spec)
            source_rows = source(txn) if source is not None else None
            relations = {
                dml.TARGET_RELATION: self._read_target(txn, spec, plan, where, source_rows)
            }
            if source_rows is not None:
                relations[dml.SOURCE_RELATION] = source_rows
            result = self.warehouse.engine.execute(plan.query, relations)
            statements = assemble(plan, spec, result)
            first = txn.reserve_statements(spec, plan.statement_count)
            metrics, counts = self._apply(txn, spec, statements, first)
            if source is not None:
                counts["num_source_rows"] = relations[dml.SOURCE_RELATION].num_rows
            return _metrics(
                txn, spec, metrics, [first + b.statement for b in plan.branches], counts
            )

        return self.warehouse._run_statement(run)

    def _apply(
        self, txn: Transaction, spec: TableSpec, statements: Sequence[StatementRows], first: int
    ) -> tuple[WriteMetrics, dict[str, int]]:
        not_null = not_null_columns(spec)
        for st in statements:
            check_not_null(spec.full_name, st.inserts, not_null)
        part_cols = list(spec.partition_column_names)
        components: list[tuple[str | None, OperationType]] = []
        plans: list[
            tuple[StatementRows, list[tuple[str, pa.Table]], list[tuple[str, pa.Table]]]
        ] = []
        counts = {
            "num_target_rows_inserted": 0,
            "num_target_rows_updated": 0,
            "num_target_rows_deleted": 0,
        }
        for st in statements:
            deletes = split_by_partition(st.deletes, part_cols, ROW_ID_FIELDS)
            inserts = split_by_partition(st.inserts, part_cols, data_columns(spec))
            op = {
                dml.Action.INSERT: OperationType.INSERT,
                dml.Action.UPDATE: OperationType.UPDATE,
                dml.Action.DELETE: OperationType.DELETE,
            }[st.action]
            names = dict.fromkeys([n for n, _ in deletes] + [n for n, _ in inserts])
            components += [(n or None, op) for n in names]
            plans.append((st, deletes, inserts))
            key = {
                dml.Action.INSERT: "num_target_rows_inserted",
                dml.Action.UPDATE: "num_target_rows_updated",
                dml.Action.DELETE: "num_target_rows_deleted",
            }[st.action]
            counts[key] += (
                st.inserts.num_rows if st.action is dml.Action.INSERT else st.deletes.num_rows
            )
        if not components:
            return WriteMetrics(), counts
        write_id = txn.record_writes(spec, components)
        sink = EventSink(spec, self.location, write_id)
        new_partitions: list[str] = []
        pending: list[PendingWrites] = []
        for st, deletes, inserts in plans:
            statement = first + st.statement
            for name, ids in deletes:
                pending.append(sink.delete_writes(name, ids, statement))
            for name, rows in inserts:
                pending.append(sink.insert_writes(name, rows, statement))
                new_partitions.append(name)
        metrics = run_writes(pending)
        self.warehouse._register_partitions(txn, spec, new_partitions)
        return metrics, counts


def _metrics(
    txn: Transaction,
    spec: TableSpec,
    metrics: WriteMetrics,
    statements: list[int],
    counts: Mapping[str, int],
) -> dict[str, Any]:
    out: dict[str, Any] = dict(counts)
    out.update(
        {
            "table": spec.full_name,
            "txn_id": txn.txn_id,
            "write_id": txn.write_id_of(spec),
            "statement_ids": sorted(set(statements)),
            "dirs_written": list(metrics.dirs),
            "files_written": len(metrics.files),
            "bytes_written": metrics.bytes_written,
        }
    )
    return out


def _drop_counts(out: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in out.items() if not k.startswith("num_target_rows_")}


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


def data_columns(spec: TableSpec) -> list[str]:
    """Names of the table's data (non-partition) columns."""
    return [c for c, _ in spec.columns]
