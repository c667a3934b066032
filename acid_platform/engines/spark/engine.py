"""``SparkEngine``: the :class:`~acid_platform.table.engine.Engine` protocol on Spark, and statements
whose rows never pass through the driver.

>>> # engine = SparkEngine(spark)
>>> # engine.execute("SELECT a + 1 AS b FROM r", {"r": spark_df_or_arrow})      # -> Arrow
>>> # t = wh.table("sales")
>>> # engine.update(t, {"qty": "qty + 1"}, "id < 100")                          # on executors
>>> # engine.delete(t, "ds = '2024-01-01' AND id = 7")
>>> # (engine.merge(t, updates_df, "t.id = s.id")
>>> #     .when_matched_update_all().when_not_matched_insert_all().execute())
>>> # engine.write(df, t, mode="overwrite")                                     # INSERT OVERWRITE

``wh.register_spark(spark)`` registers a ``SparkEngine`` as the warehouse's native engine
(:mod:`acid_platform.table.native`), so ``Table.insert`` and ``Table.merge`` given a Spark
DataFrame come here by themselves.

Each statement is planned by the table layer exactly as the embedded engine's (same plan, same
checks) and runs through the table layer's one statement lifecycle
(:mod:`acid_platform.table.statement`): in the open multi-statement transaction
(``wh.transaction()``) or in one of its own, committed or aborted on the driver, returning the
same :class:`~acid_platform.table.statement.StatementMetrics`. This engine supplies only the
:class:`~acid_platform.table.native.NativeEngine` part — compute the rows and write the files:
executors read splits and write event files; the driver owns the transaction and heartbeat.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention
from sqlglot import exp

from acid_platform.engines.spark.buckets import with_bucket_column
from acid_platform.engines.spark.datasource import AcidDataSource
from acid_platform.engines.spark.dml import run_dml, task_error
from acid_platform.engines.spark.files import TaskReport, reports_files
from acid_platform.engines.spark.options import TRANSACTION_CONF, warehouse_options
from acid_platform.engines.spark.plans import plan_frame
from acid_platform.engines.spark.python_workers import use_driver_python
from acid_platform.engines.spark.writer import InsertJob, write_rows
from acid_platform.errors import UnknownColumnError
from acid_platform.metastore.model import OperationType, TableSpec
from acid_platform.table import dml
from acid_platform.table.dml import MatchCount
from acid_platform.table.inserts import static_partition
from acid_platform.table.merger import TableMerger
from acid_platform.table.schema import table_schema, to_arrow
from acid_platform.table.statement import (
    StatementMetrics,
    WriteContext,
    WriteOutcome,
    require_event_writer,
)
from acid_platform.table.writes import WriteMetrics

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from acid_platform.table.statement import StatementHost
    from acid_platform.table.table import Table
    from acid_platform.table.transaction import SharedTransaction

#: The format name the engine registers for its own reads (options always explicit).
INTERNAL_FORMAT = "acid_engine"
#: Hive writer ids (and so Spark write partitions) go up to 4095.
MAX_WRITE_PARTITIONS = 4096
_WBUCKET = "__acid_wbucket"


class SparkEngine:
    """Runs plans and statements on a SparkSession (see module docs).

    What it changes on the session it is given — nothing else, and nothing on import: its
    Python workers' interpreter, where the session chose none and the executors run on this
    host (``use_driver_python``: this interpreter, so tasks can import the project); on the
    first statement, a data source of its own (``acid_engine``) registered and
    ``spark.sql.python.filterPushdown.enabled`` set, so scans push their filters down."""

    name = "spark"
    #: MERGE's cardinality check as a window over the one join: the target is read once.
    match_count = MatchCount.WINDOW

    def __init__(self, spark: SparkSession) -> None:
        use_driver_python(spark)  # the tasks' Python can import the project, or fail now
        self.spark = spark
        self._registered = False

    # ------------------------------------------------------------------ Engine protocol
    def execute(self, plan: exp.Expr | str, relations: Mapping[str, Any]) -> pa.Table:
        """Run a Hive-dialect plan over relations (DataFrames or Arrow data); the result comes
        back to the driver as Arrow — for small results (the statements below avoid it)."""
        frames = {name: self.frame(data) for name, data in relations.items()}
        with plan_frame(self.spark, plan, frames) as result:
            return result.toArrow()

    def close(self) -> None:
        """Nothing to release: the SparkSession belongs to the caller."""

    def share_transaction(self, shared: SharedTransaction | None) -> None:
        """Spark SQL's statements on the session's acid tables join ``shared`` (the
        warehouse's open ``wh.transaction()``) until it is ``None``: the session setting
        ``spark.acid.transaction``, which the session catalog passes to their reads and
        writes (:mod:`.row_level`)."""
        try:
            if shared is None:
                self.spark.conf.unset(TRANSACTION_CONF)
            else:
                self.spark.conf.set(TRANSACTION_CONF, shared.to_text())
        except Exception as exc:  # noqa: BLE001 - a stopped session runs no statement to join
            log.warning("Spark session: could not set %s (%s)", TRANSACTION_CONF, exc)

    # ------------------------------------------------------------------ reading
    def reader(self, warehouse: StatementHost) -> DataFrameReader:
        """A ``DataFrameReader`` of the ``acid`` source bound to ``warehouse``."""
        self._register()
        return self.spark.read.format(INTERNAL_FORMAT).options(**warehouse_options(warehouse))

    def read(self, table: Table, *, with_row_id: bool = False) -> DataFrame:
        """The table as a DataFrame (each query on it reads the latest committed snapshot)."""
        return (
            self.reader(table.warehouse)
            .options(table=table.name, with_row_id=str(with_row_id).lower())
            .load()
        )

    def accepts(self, data: Any) -> bool:
        """Whether ``data`` is a relation native to this engine (a Spark DataFrame)."""
        return isinstance(data, DataFrame)

    def columns(self, data: DataFrame) -> list[str]:
        """Column names of a native relation."""
        return list(data.columns)

    def frame(self, data: Any) -> DataFrame:
        """``data`` as a DataFrame (DataFrames as they are; Arrow, dicts, pandas converted)."""
        if isinstance(data, DataFrame):
            return data
        return self.spark.createDataFrame(to_arrow(data, "relation"))

    # ------------------------------------------------------------------ statements
    def update(
        self,
        table: Table,
        set: Mapping[str, Any],  # noqa: A002 - SQL's word
        where: str | exp.Expr | None = None,
    ) -> StatementMetrics:
        """UPDATE … SET … [WHERE …] run on Spark (``Table.update`` with this engine)."""
        return table.update(set, where, engine=self)

    def delete(self, table: Table, where: str | exp.Expr | None = None) -> StatementMetrics:
        """DELETE FROM … [WHERE …] run on Spark (``Table.delete`` with this engine)."""
        return table.delete(where, engine=self)

    def merge(
        self,
        table: Table,
        source: Any,
        on: str | exp.Expr,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
    ) -> TableMerger:
        """MERGE INTO ``table`` USING ``source`` (a DataFrame, Arrow data or a SQL query over
        warehouse tables) ON ``on``, run on Spark; add WHEN clauses, then ``execute()``."""
        return table.merge(
            source, on, source_alias=source_alias, target_alias=target_alias, engine=self
        )

    def write(
        self,
        data: Any,
        table: Table,
        *,
        mode: str = "append",
        partition: Mapping[str, Any] | None = None,
    ) -> StatementMetrics:
        """INSERT INTO (``mode="append"``) or INSERT OVERWRITE (``"overwrite"``) the rows of
        ``data`` (a DataFrame, or data :meth:`frame` converts) run on Spark (``Table.insert``
        with this engine): executors write the files, the driver only commits."""
        if mode not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
        return table.insert(data, partition=partition, overwrite=mode == "overwrite", engine=self)

    # ------------------------------------------------------------------ NativeEngine protocol
    def prepare_insert(
        self, spec: TableSpec, data: Any, partition: Mapping[str, Any] | None
    ) -> tuple[DataFrame, str | None]:
        """``data`` as a DataFrame with the static partition values added, checked against
        the table's columns; and the static partition's name."""
        require_event_writer(spec)
        df = self.frame(data)
        static, static_name = static_partition(spec, partition, df.columns)
        df = df.select(*df.columns, *[F.lit(v).alias(c) for c, v in static.items()])
        known = set(table_schema(spec).names)
        unknown = [c for c in df.columns if c.lower() not in known]
        if unknown:
            raise UnknownColumnError(
                f"table {spec.full_name} has no column(s) {unknown}; its columns are "
                f"{sorted(known)}"
            )
        return df, static_name

    def write_rows(self, ctx: WriteContext, relation: DataFrame, overwrite: bool) -> WriteOutcome:
        """Executors write the rows' insert events (one writer per bucket of a bucketed
        table); the driver records the partitions they wrote. The tasks that wrote files are
        the statement's :attr:`~acid_platform.table.statement.StatementMetrics.tasks`."""
        spec = ctx.spec
        write_id = ctx.record([] if spec.partition_columns else [(None, OperationType.INSERT)])
        job = InsertJob(
            spec, ctx.txn.id, write_id, statement=ctx.first_statement, overwrite=overwrite
        )
        reports = self._insert(job, relation)
        files = [f for r in reports for f in r.files]
        partitions = sorted({f.partition for f in files}) if spec.partition_columns else []
        if partitions:
            ctx.record([(p, OperationType.INSERT) for p in partitions])
        return WriteOutcome(
            rows_inserted=sum(n for r in reports for _, n in r.counts),
            written=WriteMetrics.from_files(reports_files(reports)),
            partitions=partitions,
            tasks=tuple(r.task for r in reports if r.files),
        )

    def write_plan(
        self, ctx: WriteContext, plan: dml.DmlPlan, source: Any, where: object = None
    ) -> WriteOutcome:
        """Run a planned UPDATE / DELETE / MERGE on Spark (:func:`.dml.run_dml`); ``where`` is
        already in the plan's probe, which Spark pushes into the scan."""
        return run_dml(
            self.spark, self.reader(ctx.warehouse), ctx, plan, source, self.write_partitions()
        )

    # ------------------------------------------------------------------ helpers
    def write_partitions(self) -> int:
        """How many tasks write a statement's files (``spark.sql.shuffle.partitions``, at most
        4096 as Hive writer ids stop at 4095)."""
        n = int(self.spark.conf.get("spark.sql.shuffle.partitions") or 200)
        return max(1, min(n, MAX_WRITE_PARTITIONS))

    def _insert(self, job: InsertJob, df: DataFrame) -> list[TaskReport]:
        frame = df
        spec = job.spec
        if spec.num_buckets:
            keyed = with_bucket_column(df, spec, _WBUCKET)
            frame = keyed.repartition(spec.num_buckets, _WBUCKET).drop(_WBUCKET)
        reports = frame.mapInArrow(lambda it: _insert_task(job, it), "report STRING")
        try:
            rows = reports.collect()
        except Exception as exc:
            raise task_error(exc, spec) from exc
        return [TaskReport.from_json(r["report"]) for r in rows]

    def _register(self) -> None:
        if not self._registered:
            names = {"format_name": INTERNAL_FORMAT, "source_name": INTERNAL_FORMAT}
            cls = type("AcidEngineDataSource", (AcidDataSource,), names)
            self.spark.dataSource.register(cls)
            self.spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
            self._registered = True


def _insert_task(job: InsertJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    report = write_rows(job, batches)
    yield pa.RecordBatch.from_pydict({"report": [report.to_json()]})
