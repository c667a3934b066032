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

    def register_spark(self, spark: Any, *, compaction: bool = True) -> None:
        """Register the ``acid`` Spark data source for this warehouse on ``spark``, and Spark as
        a native engine (:mod:`acid_platform.table.native`): ``table.insert(df)`` and
        ``table.merge(df, …)`` with a Spark DataFrame then run on Spark, rows never collected.

        With ``compaction`` (the default), :meth:`compact` with ``wait`` (and ``ALTER TABLE …
        COMPACT … AND WAIT``) rewrites partitions larger than
        ``acid.compactor.large.partition.bytes`` (``wh.conf``; default 1 GiB) on ``spark``.
        """
        from acid_platform.engines.spark import SparkEngine, register

        register(spark, self)
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
