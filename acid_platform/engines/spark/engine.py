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
checks, same metrics) and runs in the warehouse's statement runner: in the open multi-statement
transaction (``wh.transaction()``) or in one of its own, committed or aborted on the driver. The
driver owns the transaction (and its heartbeat); executors read splits and write event files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention
from pyspark.sql.types import IntegerType, StructField, StructType
from sqlglot import exp

from acid_platform.engines.spark.datasource import AcidDataSource
from acid_platform.engines.spark.dml import Source, run_dml, task_error
from acid_platform.engines.spark.files import TaskReport
from acid_platform.engines.spark.options import warehouse_options
from acid_platform.engines.spark.plans import plan_frame
from acid_platform.engines.spark.writer import InsertJob, write_rows
from acid_platform.errors import UnknownColumnError
from acid_platform.format import base_dir_name, write_acid_version_file
from acid_platform.format.fs import join
from acid_platform.metastore.model import LockComponent, LockType, OperationType, TableSpec
from acid_platform.table import dml
from acid_platform.table.dml import MatchCount
from acid_platform.table.event_layout import hive_buckets
from acid_platform.table.merger import TableMerger
from acid_platform.table.partitions import partition_path
from acid_platform.table.schema import conform, table_schema, to_arrow
from acid_platform.table.table import static_partition
from acid_platform.table.transaction import Transaction, insert_lock_type, write_lock_type

if TYPE_CHECKING:
    from acid_platform.table.table import Table
    from acid_platform.table.warehouse import TableWarehouse

#: The format name the engine registers for its own reads (options always explicit).
INTERNAL_FORMAT = "acid_engine"
#: Hive writer ids (and so Spark write partitions) go up to 4095.
MAX_WRITE_PARTITIONS = 4096
_WBUCKET = "__acid_wbucket"


class SparkEngine:
    """Runs plans and statements on a SparkSession (see module docs)."""

    name = "spark"
    #: MERGE's cardinality check as a window over the one join: the target is read once.
    match_count = MatchCount.WINDOW

    def __init__(self, spark: SparkSession) -> None:
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

    # ------------------------------------------------------------------ reading
    def reader(self, warehouse: TableWarehouse) -> DataFrameReader:
        """A ``DataFrameReader`` of the ``acid`` source bound to ``warehouse``."""
        self._register()
        return self.spark.read.format(INTERNAL_FORMAT).options(**warehouse_options(warehouse))

    def read(self, table: Table, *, with_row_id: bool = False) -> DataFrame:
        """The table as a DataFrame (one snapshot per query, taken when Spark plans it)."""
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
    def update(self, table: Table, set: Mapping[str, Any], where: object = None) -> dict[str, Any]:  # noqa: A002 - SQL's word
        """UPDATE … SET … [WHERE …] on Spark; returns ``num_updated_rows`` and write metrics."""
        wh = table.warehouse
        with wh._statement_guard():
            spec = table._refresh()
            plan = dml.plan_update(spec, set, where)
        out = self.run_plan(table, spec, plan, where)
        return {"num_updated_rows": out.pop("num_target_rows_updated"), **_drop_counts(out)}

    def delete(self, table: Table, where: object = None) -> dict[str, Any]:
        """DELETE FROM … [WHERE …] on Spark; returns ``num_deleted_rows`` and write metrics."""
        wh = table.warehouse
        with wh._statement_guard():
            spec = table._refresh()
            plan = dml.plan_delete(spec, where)
        out = self.run_plan(table, spec, plan, where)
        return {"num_deleted_rows": out.pop("num_target_rows_deleted"), **_drop_counts(out)}

    def merge(
        self,
        table: Table,
        source: Any,
        on: str,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
    ) -> SparkTableMerger:
        """MERGE INTO ``table`` USING ``source`` (a DataFrame, Arrow data or a SQL query over
        warehouse tables) ON ``on``; add WHEN clauses, then ``execute()``."""
        return SparkTableMerger(
            self, table, source, on, source_alias=source_alias, target_alias=target_alias
        )

    def run_plan(
        self,
        table: Table,
        spec: TableSpec,
        plan: dml.DmlPlan,
        where: object = None,
        *,
        source: Source | None = None,
        lock_extra: Sequence[LockComponent] = (),
    ) -> dict[str, Any]:
        """Run a planned UPDATE/DELETE/MERGE as one statement: lock (Hive 4's EXCL_WRITE by
        default), then read, compute and write on Spark (:func:`.dml.run_dml`)."""
        wh = table.warehouse
        conf = wh.conf

        def run(txn: Transaction) -> dict[str, Any]:
            lock_type = write_lock_type(conf)
            txn.lock([LockComponent(lock_type, spec.db, spec.name), *lock_extra])
            if lock_type is not LockType.SHARED_WRITE:
                txn.check_outdated(spec)
            return run_dml(self, table, txn, spec, plan, source=source)

        return wh._run_statement(run)

    def write(
        self,
        data: Any,
        table: Table,
        *,
        mode: str = "append",
        partition: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """INSERT INTO (``mode="append"``) or INSERT OVERWRITE (``"overwrite"``) the rows of
        ``data`` (a DataFrame, or data :meth:`frame` converts), in the warehouse's statement
        runner (so it may join ``wh.transaction()``); ``partition`` gives static partition
        values, as ``Table.insert``. Executors write the files; the driver only commits.

        Rows of a bucketed table are first grouped so each bucket has one writer.
        """
        if mode not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
        overwrite = mode == "overwrite"
        df = self.frame(data)
        wh = table.warehouse
        with wh._statement_guard():
            spec = table._refresh()
            static, static_name = static_partition(spec, partition, df.columns)
            df = df.select(*df.columns, *[F.lit(v).alias(c) for c, v in static.items()])
            known = set(table_schema(spec).names)
            unknown = [c for c in df.columns if c.lower() not in known]
            if unknown:
                raise UnknownColumnError(
                    f"table {spec.full_name} has no column(s) {unknown}; its columns are "
                    f"{sorted(known)}"
                )
        conf = wh.conf

        def run(txn: Transaction) -> dict[str, Any]:
            lock = write_lock_type(conf, overwrite=True) if overwrite else insert_lock_type(conf)
            txn.lock([LockComponent(lock, spec.db, spec.name, static_name)])
            if overwrite:
                txn.check_outdated(spec)
            statement = txn.reserve_statements(spec, 1, overwrite=overwrite)
            write_id = txn.record_writes(
                spec, [] if spec.partition_columns else [(None, OperationType.INSERT)]
            )
            job = InsertJob(spec, txn.txn_id, write_id, statement=statement, overwrite=overwrite)
            reports = self._insert(job, df)
            files = [f for r in reports for f in r.files]
            partitions = sorted({f.partition for f in files}) if spec.partition_columns else []
            if overwrite and not files and (static_name or not spec.partition_columns):
                # an empty INSERT OVERWRITE still replaces the rows: an empty base says so
                location = table.location
                base = join(
                    partition_path(location.path, static_name or ""), base_dir_name(write_id)
                )
                write_acid_version_file(base, location.filesystem)
                partitions = [static_name] if static_name else []
            if partitions:
                txn.record_writes(spec, [(p, OperationType.INSERT) for p in partitions])
                wh._register_partitions(txn, spec, partitions)
            return {
                "num_inserted_rows": sum(n for r in reports for _, n in r.counts),
                "table": spec.full_name,
                "txn_id": txn.txn_id,
                "write_id": write_id,
                "statement_ids": [statement],
                "dirs_written": sorted({f.path.rsplit("/", 1)[0] for f in files}),
                "files_written": len(files),
                "bytes_written": sum(f.bytes for f in files),
                "tasks": [dataclasses.asdict(r.task) for r in reports if r.files],
            }

        return wh._run_statement(run)

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
            schema = StructType([*df.schema.fields, StructField(_WBUCKET, IntegerType())])
            keyed = df.mapInArrow(lambda it: _with_hive_bucket(spec, it), schema)
            frame = keyed.repartition(spec.num_buckets, _WBUCKET).drop(_WBUCKET)
        reports = frame.mapInArrow(lambda it: _insert_task(job, it), "report STRING")
        try:
            rows = reports.collect()
        except Exception as exc:
            raise task_error(exc, spec) from exc
        return [TaskReport.from_json(r["report"]) for r in rows]

    def _register(self) -> None:
        if not self._registered:
            cls = type("AcidEngineDataSource", (AcidDataSource,), {"format_name": INTERNAL_FORMAT})
            self.spark.dataSource.register(cls)
            self.spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
            self._registered = True


class SparkTableMerger(TableMerger):
    """The MERGE builder of :meth:`SparkEngine.merge`: a
    :class:`~acid_platform.table.merger.TableMerger` that runs on Spark whatever its source."""

    def __init__(
        self,
        engine: SparkEngine,
        table: Table,
        source: Any,
        on: str,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
    ) -> None:
        super().__init__(
            table, source, on, source_alias=source_alias, target_alias=target_alias, engine=engine
        )


def _insert_task(job: InsertJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    report = write_rows(job, batches)
    yield pa.RecordBatch.from_pydict({"report": [report.to_json()]})


def _with_hive_bucket(
    spec: TableSpec, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    target = table_schema(spec)
    bucket_schema = pa.schema([target.field(c) for c in spec.bucket_columns])
    for batch in batches:
        rows = pa.Table.from_batches([batch])
        present = {c.lower(): c for c in rows.column_names}
        cols = rows.select([present[c] for c in spec.bucket_columns if c in present])
        typed = conform(
            spec.full_name,
            cols.rename_columns([c.lower() for c in cols.column_names]),
            bucket_schema,
        )
        buckets = hive_buckets(spec, typed).astype(np.int32)
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, pa.array(buckets, pa.int32())], names=[*batch.schema.names, _WBUCKET]
        )


def _drop_counts(out: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in out.items() if not k.startswith("num_target_rows_")}
