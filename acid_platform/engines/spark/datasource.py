"""The ``acid`` Spark data source (PySpark's Python Data Source API).

>>> # wh.register_spark(spark)
>>> # df = spark.read.format("acid").load("db.t")            # each query: the latest commit
>>> # df.where("ds = '2024-01-01' AND id > 3").count()       # …and only its own filters
>>> # spark.read.format("acid").option("as_of_write_id", "7").load("db.t")   # pinned
>>> # new_rows.write.format("acid").mode("append").save("db.t")        # one transaction
>>> # new_rows.write.format("acid").mode("overwrite").save("db.t")     # INSERT OVERWRITE

Tables by name — ``spark.sql("CREATE TABLE db.t (…) USING acid …")``, ``INSERT``, ``SELECT``,
``DESCRIBE``, ``df.write.format("acid").saveAsTable("db.t")`` — go through a small session
catalog extension whose every warehouse operation is this class's: ``schema()`` with a
``_catalog_op`` option answers it (:mod:`.catalog` says why Spark needs a JVM class for this).
``save("db.t")`` to a missing table creates it from the DataFrame (options ``partition_by``,
``bucket_by`` + ``buckets``); ``load()`` / ``save()`` also take the table's warehouse path.

Spark runs these methods in Python processes of its own (see :mod:`.options`): ``schema`` and
``reader``/``writer`` beside the driver while planning, ``read``/``write`` on executors, and
``commit``/``abort`` beside the driver again. The class :func:`acid_platform.engines.spark.register`
registers is a subclass carrying the warehouse's options as :attr:`AcidDataSource.defaults`.

``format("acid")`` is a JVM data source in front of this class once the session catalog
extension is installed (:mod:`.catalog`): ``load("db.t")`` / ``load(<path>)`` then scans the
table as a table read by name does, per query (see **Columns**), and hands this class, registered
under an internal name, everything else — writes, streams, a user schema, ``read_changes``,
``with_row_id``. What follows is this class's own read.

Queries on a loaded DataFrame or view (Spark 4.0 – 4.3 plan a Python data source's read once
per loaded relation — ``load()`` — and reuse that plan, reader and partitions, for every later
query on it and every scan of it in one query):

* **Snapshots.** Each query reads the latest committed snapshot, taken when its first task
  starts and shared by all its tasks — one transaction snapshot for every ``acid`` table and
  DataFrame the query reads (:mod:`.query_snapshot`) — so commits after ``load()`` show in the
  next query, as with a Spark table. To pin one for repeatable reads or time travel,
  give ``.option("snapshot", <ValidWriteIdList string>)`` (e.g. ``str(metastore.
  valid_write_ids(None, db, t))``) or ``.option("as_of_write_id", n)`` (the writes committed up
  to write id ``n``); a pinned read needs its files still there (the cleaner removes what a
  compaction replaced once no reader lease holds it: "Not enough history" otherwise).
* **Filters stay in Spark.** Spark would hand a filter pushed by one query's scan to other
  queries and scans of a loaded relation, so its reader takes none: Spark evaluates every
  WHERE and partition directories are not pruned (each query reads the table's splits at its
  snapshot). A table read by name prunes partitions per query (see **Columns**).
  ``SparkEngine``'s statements, which scan a pinned relation once, push filters.
* **Columns.** Spark 4.0 – 4.3 do not prune columns of a loaded Python data source, nor take
  its size estimates (its ``DataSourceReader`` has ``pushFilters`` only): a relation of this
  class reads every column and is never broadcast by size. A table loaded through the JVM
  source or read by name — ``spark.table("db.t")``, ``spark.read.option(…).table("db.t")``,
  ``spark.sql("SELECT … FROM db.t")`` and views over them — is scanned per query by a new
  instance of this class: columns pruned, the partitions a ``WHERE`` on partition columns
  excludes skipped, the table's size reported (:mod:`.table_scans`). A read that stays here
  reads the columns of a schema given to it (``.schema("id INT, ds STRING").load("db.t")``).
* The number of tasks is fixed when the relation is first planned (one per split then); a
  task outside a SQL query (an RDD job on ``df.rdd``) reads the snapshot of that planning. A
  batch change-feed read (``read_changes``) keeps the write-id window of its first planning.

Streaming (see :mod:`.stream_writer` and :mod:`.change_reader`)::

    df.writeStream.format("acid").option("checkpointLocation", chk).start("db.t")  # sink
    spark.readStream.format("acid").option("read_changes", "true").load("db.t")    # source

The sink commits each micro-batch as one transaction, exactly once across restarts (the batch
is recorded in its transaction). The source streams the table's change feed by write id; with
``read_changes`` a batch read returns the change feed too (``starting_write_id``,
``ending_write_id``), the schema being the feed's (the table's columns, ``_change_type``,
``_write_id``, ``row__id``).
"""

from __future__ import annotations

# The change feed's and the streaming sink's modules (and what they import) are imported by the
# methods that need them: every Spark Python worker imports this module first.
from collections.abc import Mapping
from typing import ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from acid_platform.engines.spark.catalog import CATALOG_OP, catalog_answer, create_for_write
from acid_platform.engines.spark.names import NAME
from acid_platform.engines.spark.options import ROW_LEVEL, SourceOptions
from acid_platform.engines.spark.reader import AcidSourceReader, PushdownReader
from acid_platform.engines.spark.schema import spark_schema, table_arrow_schema
from acid_platform.engines.spark.table_scans import partition_conjuncts, unscaled_decimals
from acid_platform.engines.spark.writer import AcidWriter, begin_insert
from acid_platform.errors import NoSuchObjectError, UnsupportedOperationError
from acid_platform.metastore.model import TableSpec


class AcidDataSource(DataSource):
    """Hive ACID v2 tables of one warehouse as a Spark data source (see module docs)."""

    #: Option defaults (warehouse, metastore_url, …) baked in by ``register``.
    defaults: ClassVar[Mapping[str, str]] = {}
    #: The format name (``format("acid")``).
    format_name: ClassVar[str] = NAME
    #: The name Spark registers this class under: the format name, or an internal one when the
    #: format is the JVM source that hands its writes and other reads to this class
    #: (:func:`~.catalog_install.install_catalog`).
    source_name: ClassVar[str] = NAME

    @classmethod
    def name(cls) -> str:
        """The name Spark registers the source under."""
        return cls.source_name

    def schema(self) -> StructType:
        """The table's columns (data, then partition; ``row__id`` first with ``with_row_id``);
        with ``read_changes``, the change feed's. With ``_catalog_op``, a catalog operation of
        the session catalog extension (:mod:`.catalog`), answered as a schema."""
        raw = self._raw_options()
        if CATALOG_OP in raw:
            options = SourceOptions.parse(raw, self.defaults)
            return catalog_answer(options, raw, self.format_name)
        options, spec = self._resolve()
        if options.read_changes:
            from acid_platform.table.changes import change_feed_schema

            return spark_schema(change_feed_schema(spec))
        return spark_schema(table_arrow_schema(spec, with_row_id=options.with_row_id))

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of ``schema``'s columns (the table's, or a subset the user gave), or of
        the change feed with ``read_changes``."""
        options, spec = self._resolve()
        if options.read_changes:
            from acid_platform.engines.spark.change_reader import AcidChangeReader

            return AcidChangeReader(options, spec, schema)
        if options.pushdown and options.pinned:
            return PushdownReader(options, spec, schema)
        raw = self._raw_options()
        return AcidSourceReader(
            options, spec, schema, partition_conjuncts(raw, spec), unscaled_decimals(raw)
        )

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        """The change feed as a streaming source (needs ``read_changes``)."""
        options, spec = self._resolve()
        if not options.read_changes:
            raise UnsupportedOperationError(
                f"a streaming read of {spec.full_name} reads its change feed: add "
                ".option('read_changes', 'true') (rows get _change_type and _write_id)"
            )
        from acid_platform.engines.spark.change_reader import AcidChangeStream

        return AcidChangeStream(options, spec, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 - Spark's name
        """The streaming sink: each micro-batch one transaction, exactly once (its
        transaction opens when Spark ships the writer to the executors)."""
        options, spec = self._resolve()
        from acid_platform.engines.spark.stream_writer import AcidStreamWriter

        return AcidStreamWriter(options, spec, [f.name for f in schema.fields], overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Open the write's transaction and return the writer shipped to executors. A
        ``save("db.t")`` to a missing table creates it from the DataFrame's schema first
        (options ``partition_by``, ``bucket_by`` + ``buckets``)."""
        raw = self._raw_options()
        options = SourceOptions.parse(raw, self.defaults)
        if ROW_LEVEL in raw:  # a Spark SQL DELETE / UPDATE / MERGE (:mod:`.row_level`)
            from acid_platform.engines.spark.row_level import RowLevelWriter, begin_row_level

            return RowLevelWriter(options, begin_row_level(options, options.spec(), raw[ROW_LEVEL]))
        try:
            spec = options.spec()
        except NoSuchObjectError:
            spec = create_for_write(options, schema, raw)
        job = begin_insert(options, spec, [f.name for f in schema.fields], overwrite)
        return AcidWriter(options, job)

    def _raw_options(self) -> dict[str, str]:
        return {k.lower(): v for k, v in dict(self.options).items()}

    def _resolve(self) -> tuple[SourceOptions, TableSpec]:
        options = SourceOptions.parse(dict(self.options), self.defaults)
        return options, options.spec()
