"""``acid_platform.Warehouse``: the table layer's warehouse with the front ends on top.

The table layer (:class:`acid_platform.table.TableWarehouse`) knows tables, transactions and DML; this
subclass adds what sits above it — HiveQL (:meth:`sql`, run in the warehouse's own
:attr:`sql_session`) and Spark (:meth:`register_spark`: the ``acid`` data source, and Spark
executors for compacting large partitions) — so imports keep pointing down.

>>> # wh = Warehouse.open("/tmp/wh"); wh.sql("SELECT 1")
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from acid_platform.format import resolve
from acid_platform.sql import SqlSession
from acid_platform.table.engine import Engine
from acid_platform.table.warehouse import TableWarehouse

if TYPE_CHECKING:
    from acid_platform.compaction import CleanerReport
    from acid_platform.compaction.health import HealthReport
    from acid_platform.metastore import CompactionInfo


class Warehouse(TableWarehouse):
    """A warehouse of Hive ACID tables: Python API, HiveQL and (with PySpark) Spark."""

    @functools.cached_property
    def sql_session(self) -> SqlSession:
        """The warehouse's own HiveQL session, which :meth:`sql` runs in (created on first use):
        ``USE``, ``SET hivevar:…`` and temporary tables persist across calls, as in one Hive
        session. Another warehouse object is another session."""
        return SqlSession(self)

    def set_conf(self, key: str, value: str) -> None:
        """``SET key=value``; ``acid.compactor.hive3.compatible=true`` is refused (a
        :class:`~acid_platform.errors.RenameUnsupportedError`) on an object-store warehouse."""
        from acid_platform.compaction.config import HIVE3_COMPATIBLE, CompactorConf
        from acid_platform.compaction.staging import require_rename

        if (
            key.lower() == HIVE3_COMPATIBLE
            and CompactorConf.from_conf({HIVE3_COMPATIBLE: value}).hive3_compatible
        ):
            require_rename(resolve(self.root, self.filesystem_for(self.root)).filesystem, self.root)
        super().set_conf(key, value)

    @classmethod
    def default_engine(cls) -> Engine:
        """The embedded engine (DuckDB over Arrow), used when :meth:`open` is given none."""
        from acid_platform.engines import default_engine

        return default_engine()

    def sql(self, text: str) -> pa.Table:
        """Run one HiveQL statement or a script in :attr:`sql_session`; returns the last
        statement's rows. A syntax error anywhere raises
        :class:`~acid_platform.errors.SqlSyntaxError` before any statement runs; otherwise
        statements run in order and the first failure stops the script."""
        return self.sql_session.execute(text)

    def register_spark(
        self, spark: Any, *, compaction: bool = True, format_name: str = "acid"
    ) -> None:
        """Register the ``acid`` Spark data source (or ``format_name``) for this warehouse on
        ``spark``, and Spark as a native engine (:mod:`acid_platform.table.native`):
        ``table.insert(df)`` and ``table.merge(df, …)`` with a Spark DataFrame then run on
        Spark, rows never collected. The one way to register a warehouse on Spark (the Dagster
        resources and IO manager call it too); registering again replaces the registration.

        With ``compaction`` (the default), :meth:`compact` with ``wait`` (and ``ALTER TABLE …
        COMPACT … AND WAIT``) rewrites partitions larger than
        ``acid.compactor.large.partition.bytes`` (``wh.conf``; default 1 GiB) on ``spark``.

        What it changes on ``spark`` (this call, and the engine's first statement), and nothing
        else:

        * the Python workers' interpreter (``SparkContext.pythonExec``) when the session chose
          none (``spark.pyspark.python``, ``PYSPARK_PYTHON``) and its executors run on this
          host: this interpreter, so that tasks import the project; a chosen interpreter other
          than this one is checked with a one-task job (an
          :class:`~acid_platform.errors.EngineError` if it cannot import the project);
        * data sources registered in the session: ``format_name`` (its option defaults: this
          warehouse's root, metastore URL, transaction time-out and ``conf`` as of now), the
          internal ``<format_name>__python`` and, on the engine's first statement,
          ``acid_engine``;
        * tables by name: ``spark.sql.catalog.spark_catalog`` set to the session catalog
          extension ``acid_platform.spark.AcidCatalog`` (a ``DelegatingCatalogExtension``:
          Spark's own tables stay as they are), with ``spark.sql.catalog.spark_catalog.format``
          and ``.source``; its jar (compiled once with the JDK's ``javac``, cached under
          ``~/.cache/acid_platform``) added with ``ADD JAR`` and to the driver's class loader. A
          session whose ``spark_catalog`` is another extension keeps it (tables by name off,
          with a warning; see :mod:`acid_platform.engines.spark.catalog_install`);
        * with that catalog, for Spark SQL's DELETE / UPDATE / MERGE INTO on its tables
          (:mod:`acid_platform.engines.spark.row_level`): a planner strategy first among
          ``spark.experimental.extraStrategies``, and a rule appended to the session analyser's
          post-hoc resolution rules (the statements return their counts);
        * on the engine's first statement, ``spark.sql.python.filterPushdown.enabled`` set to
          ``true`` (its scans push filters down; the setting applies to every Python data
          source of the session).
        """
        from acid_platform.engines.spark import SparkEngine
        from acid_platform.engines.spark.registration import register_source

        register_source(spark, self, name=format_name)
        self.native_engines.register(SparkEngine(spark))
        if compaction:
            from acid_platform.engines.spark.compaction import compaction_router

            self.compaction_executor = functools.partial(compaction_router, spark)

    def compact(
        self,
        name: str,
        partition: str | Mapping[str, Any] | None = None,
        kind: str = "major",
        wait: bool = False,
        *,
        properties: Mapping[str, str] | None = None,
    ) -> list[CompactionInfo]:
        """``ALTER TABLE name [PARTITION (…)] COMPACT 'minor'|'major' [AND WAIT] [WITH OVERWRITE
        TBLPROPERTIES (…)]``: queue a compaction; with ``wait`` this process works the entries
        to their end (large partitions on Spark after :meth:`register_spark`). See
        :func:`acid_platform.compaction.compact_table`."""
        from acid_platform.compaction import compact_table

        return compact_table(
            self, name, partition=partition, kind=kind, wait=wait, properties=properties
        )

    def health(self, name: str, *, small_file_bytes: int | None = None) -> HealthReport:
        """The health report of table ``name`` (``SHOW TABLE STATUS LIKE 'name'``): deltas and
        delete deltas per partition, delete ratio, read amplification, small files (under
        ``small_file_bytes``, default Hive's ``hive.merge.smallfiles.avgsize``), the oldest open
        transaction, the compaction backlog and what the initiator would do and why. See
        :mod:`acid_platform.compaction.health`."""
        from acid_platform.compaction.health import SMALL_FILE_BYTES, health_report

        return health_report(self, name, small_file_bytes=small_file_bytes or SMALL_FILE_BYTES)

    def clean(self) -> CleanerReport:
        """One pass of the cleaner; returns what it removed."""
        from acid_platform.compaction import run_cleaner

        return run_cleaner(self)
