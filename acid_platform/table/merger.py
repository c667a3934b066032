"""``TableMerger``: the MERGE builder returned by ``Table.merge``.

Shaped like delta-rs's ``TableMerger``; the semantics are Hive's MERGE (see :mod:`.dml`)::

    (wh.table("employee")
       .merge(updates, "t.id = s.id")
       .when_matched_update({"salary": "s.salary"})
       .when_not_matched_insert_all()
       .execute())
    # StatementMetrics(rows_inserted=1, rows_updated=1, ...)

The source is Arrow data, a list of dicts, a pandas DataFrame, or a Hive SQL query (text or a
sqlglot syntax tree) over warehouse tables (read in the statement's snapshot, under SHARED_READ locks). Data of a native engine of
the warehouse (:mod:`.native`: a Spark DataFrame after ``wh.register_spark(spark)``) stays where
it is: the MERGE is planned here and runs on that engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import pyarrow as pa
from sqlglot import exp

from acid_platform.format.delete_merge import conf_delete_events_cap
from acid_platform.format.fs import resolve
from acid_platform.format.utf8 import check_utf8
from acid_platform.metastore.model import LockComponent
from acid_platform.table import dml
from acid_platform.table.deprecation import renamed_argument
from acid_platform.table.dml import Clause, ClauseKind, MatchCount
from acid_platform.table.expressions import expression_or_none, to_expression
from acid_platform.table.query import bind_query
from acid_platform.table.scan import plan_scan
from acid_platform.table.schema import table_schema, to_arrow
from acid_platform.table.statement import StatementMetrics, statement_guard
from acid_platform.table.transaction import Transaction, conf_bool

if TYPE_CHECKING:
    from acid_platform.format import Snapshot
    from acid_platform.metastore.model import TableSpec
    from acid_platform.table.host import TableHost
    from acid_platform.table.native import NativeEngine


class MergeTarget(Protocol):
    """What a MERGE needs of its target (a :class:`~acid_platform.table.table.Table` is one):
    declared here, so this module does not import the table's, which imports it."""

    warehouse: TableHost

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> TableSpec: ...

    def refresh(self) -> TableSpec: ...

    def run_plan(
        self,
        spec: TableSpec,
        plan: dml.DmlPlan,
        where: str | exp.Expr | None = None,
        *,
        source: Any = None,
        lock_extra: Sequence[LockComponent] = (),
        engine: NativeEngine | None = None,
    ) -> StatementMetrics: ...


class TableMerger:
    """Collects WHEN clauses; :meth:`execute` runs the MERGE as one statement."""

    def __init__(
        self,
        table: MergeTarget,
        source: Any,
        on: str | exp.Expr,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
        engine: NativeEngine | None = None,
    ) -> None:
        """``engine``: run on this native engine whatever the source (default: the native
        engine that owns the source, else the warehouse's engine)."""
        self._table = table
        self._engine = engine
        self._source = source
        self._on = on
        self._source_alias = source_alias
        self._target_alias = target_alias
        self._clauses: list[Clause] = []

    # Each WHEN clause takes its extra predicate (``AND <condition>``) as ``where``, the
    # predicate word of the whole table API; ``condition=`` (and ``set=`` for ``values``) are
    # deprecated aliases.
    def when_matched_update(
        self,
        values: Mapping[str, Any] | None = None,
        where: str | exp.Expr | None = None,
        *,
        set: Mapping[str, Any] | None = None,  # noqa: A002 - the deprecated alias of values
        condition: str | exp.Expr | None = None,
    ) -> TableMerger:
        """WHEN MATCHED [AND where] THEN UPDATE SET col = value, … (``values``)."""
        return self._add(ClauseKind.MATCHED_UPDATE, _where(where, condition), _values(values, set))

    def when_matched_update_all(
        self, where: str | exp.Expr | None = None, *, condition: str | exp.Expr | None = None
    ) -> TableMerger:
        """WHEN MATCHED [AND where] THEN UPDATE every data column the source also has (by
        name), except partition and bucketing columns, which Hive cannot update."""
        return self._add(ClauseKind.MATCHED_UPDATE, _where(where, condition), _ALL)

    def when_matched_delete(
        self, where: str | exp.Expr | None = None, *, condition: str | exp.Expr | None = None
    ) -> TableMerger:
        """WHEN MATCHED [AND where] THEN DELETE."""
        return self._add(ClauseKind.MATCHED_DELETE, _where(where, condition), {})

    def when_not_matched_insert(
        self,
        values: Mapping[str, Any],
        where: str | exp.Expr | None = None,
        *,
        condition: str | exp.Expr | None = None,
    ) -> TableMerger:
        """WHEN NOT MATCHED [AND where] THEN INSERT (col, …) VALUES (value, …); columns not
        given are NULL."""
        return self._add(ClauseKind.NOT_MATCHED_INSERT, _where(where, condition), values)

    def when_not_matched_insert_all(
        self, where: str | exp.Expr | None = None, *, condition: str | exp.Expr | None = None
    ) -> TableMerger:
        """WHEN NOT MATCHED [AND where] THEN INSERT every column from the source column of the
        same name."""
        return self._add(ClauseKind.NOT_MATCHED_INSERT, _where(where, condition), _ALL)

    def when_not_matched_by_source_update(
        self,
        values: Mapping[str, Any] | None = None,
        where: str | exp.Expr | None = None,
        *,
        set: Mapping[str, Any] | None = None,  # noqa: A002 - the deprecated alias of values
        condition: str | exp.Expr | None = None,
    ) -> TableMerger:
        """WHEN NOT MATCHED BY SOURCE [AND where] THEN UPDATE SET … (target columns only)."""
        return self._add(
            ClauseKind.BY_SOURCE_UPDATE, _where(where, condition), _values(values, set)
        )

    def when_not_matched_by_source_delete(
        self, where: str | exp.Expr | None = None, *, condition: str | exp.Expr | None = None
    ) -> TableMerger:
        """WHEN NOT MATCHED BY SOURCE [AND where] THEN DELETE."""
        return self._add(ClauseKind.BY_SOURCE_DELETE, _where(where, condition), {})

    def execute(self) -> StatementMetrics:
        """Run the MERGE; returns its metrics (rows inserted / updated / deleted, files). Nothing
        is written if it fails (e.g. :class:`~acid_platform.errors.CardinalityViolationError`)."""
        table = self._table
        wh = table.warehouse
        engine = self._engine or wh.native_engines.for_data(self._source)
        with statement_guard(wh):
            spec = table.refresh()
            dml.require_transactional(spec)
            source: Any
            locks: list[LockComponent]
            if engine is not None and engine.accepts(self._source):
                source, columns, locks = self._source, engine.columns(self._source), []
            else:
                source, columns, locks = self._source_relation()
            label = f"MERGE INTO {spec.full_name}"
            clauses = [
                _parsed(
                    self._expand(c, spec.partition_column_names, spec.bucket_columns, columns),
                    f"{label} ({c.kind})",
                )
                for c in self._clauses
            ]
            plan = dml.plan_merge(
                spec,
                columns,
                expression_or_none(self._on, f"ON clause of {label}"),
                clauses,
                target_alias=self._target_alias,
                source_alias=self._source_alias,
                check_cardinality=conf_bool(wh.conf, "hive.merge.cardinality.check"),
                match_count=engine.match_count if engine is not None else MatchCount.JOIN,
            )
        return table.run_plan(spec, plan, source=source, lock_extra=locks, engine=engine)

    # ------------------------------------------------------------------ helpers
    def _add(
        self, kind: ClauseKind, where: str | exp.Expr | None, values: Mapping[str, Any] | object
    ) -> TableMerger:
        if values is _ALL:
            items: tuple[tuple[str, object], ...] = (("*", None),)
        else:
            items = tuple(dict(cast(Mapping[str, Any], values)).items())
        self._clauses.append(Clause(kind, where, items))
        return self

    def _expand(
        self,
        clause: Clause,
        part_cols: tuple[str, ...],
        bucket_cols: tuple[str, ...],
        source_cols: list[str],
    ) -> Clause:
        if clause.values != (("*", None),):
            return clause
        target = table_schema(self._table.spec).names
        by_lower = {c.lower(): c for c in source_cols}
        if clause.kind is ClauseKind.NOT_MATCHED_INSERT:
            cols = [c for c in target if c in by_lower]
        else:
            cols = [
                c for c in target if c in by_lower and c not in part_cols and c not in bucket_cols
            ]
        alias = exp.to_identifier(self._source_alias, quoted=True)
        values = tuple(
            (c, exp.column(exp.to_identifier(by_lower[c], quoted=True), table=alias)) for c in cols
        )
        return Clause(clause.kind, clause.where, values)

    def _source_relation(
        self,
    ) -> tuple[Callable[[Transaction], pa.Table], list[str], list[LockComponent]]:
        if not isinstance(self._source, str | exp.Query):
            table = self._table.name
            data = to_arrow(self._source, f"MERGE INTO {table} source", table=table)
            for column, values in zip(data.column_names, data.columns, strict=True):
                # before the engine sees them: text that is not UTF-8 is named in the source
                check_utf8(values, table=table, column=column, what="MERGE source ")
            return (lambda _txn: data), list(data.column_names), []
        return _sql_source(self._table, self._source)


_ALL = object()


def _where(where: str | exp.Expr | None, condition: str | exp.Expr | None) -> str | exp.Expr | None:
    return renamed_argument(where, condition, "condition=", "where=", stacklevel=5)


def _values(values: Mapping[str, Any] | None, set_: Mapping[str, Any] | None) -> Mapping[str, Any]:
    given = renamed_argument(values, set_, "set=", "values=", stacklevel=5)
    if given is None:
        raise TypeError("an UPDATE clause needs the values to set: {'col': value}")
    return given


def _parsed(clause: Clause, what: str) -> Clause:
    """``clause`` with its predicate and values as syntax trees (text parsed here, once)."""
    values = tuple((c, to_expression(v, f"value of {c} in {what}")) for c, v in clause.values)
    return Clause(clause.kind, expression_or_none(clause.where, f"condition of {what}"), values)


def _sql_source(
    table: MergeTarget, sql: str | exp.Query
) -> tuple[Callable[[Transaction], pa.Table], list[str], list[LockComponent]]:
    wh = table.warehouse
    bound = bind_query(wh, sql, f"MERGE INTO {table.name} source")

    def source(txn: Transaction) -> pa.Table:
        return bound.run(
            wh,
            lambda spec: read_at(wh, spec, txn.snapshot(spec)),
        )

    return source, bound.columns(wh), bound.read_locks()


def read_at(wh: TableHost, spec: TableSpec, snapshot: Snapshot) -> pa.Table:
    """A source table's rows at the MERGE's snapshot (``Table.scan(snapshot=…)``, every
    column)."""
    location = resolve(spec.location, wh.filesystem_for(spec.location))
    cap = conf_delete_events_cap(wh.conf)
    return plan_scan(spec, location, snapshot, delete_events_cap=cap).to_arrow()
