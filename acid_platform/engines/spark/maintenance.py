"""Compaction in Spark SQL: ``CALL system.compact(…)`` and ``CALL system.show_compactions()``.

>>> # wh.register_spark(spark)
>>> # spark.sql("CALL system.compact(table => 'db.t', type => 'major', wait => true)")
>>> # spark.sql("CALL system.compact('db.p', 'minor', 'ds=2024-01-01')")   # queued only
>>> # spark.sql("CALL system.show_compactions()").where("State = 'succeeded'")
>>> # spark.sql("CALL system.show_compactions(table => 'db.t')")

``compact`` is HiveQL's ``ALTER TABLE t [PARTITION (…)] COMPACT 'type' [AND WAIT]
[POOL 'p']``: arguments ``table`` (``db.t``), ``type`` (``'major'`` – the default – or
``'minor'``, ``'rebalance'``), ``partition`` (a partition name, ``ds=2024-01-01/h=3``, its
columns in any order; none: every partition), ``wait`` (``AND WAIT``: the compaction runs before
the call returns; default ``false``: queued for the compactor services, as Hive does) and
``pool``. It returns the
entries' ``show_compactions`` rows. ``show_compactions`` returns the queue and history with
Hive 4's columns, in its order (``CompactionId``, ``Database``, ``Table``, ``Partition``,
``Type``, ``State``, …; times as timestamps, absent values null), optionally of one ``table``.
Both run the project's compaction, the code ``wh.sql("ALTER TABLE … COMPACT …")`` and
``wh.compact`` run (:func:`acid_platform.compaction.api.compact_table`), with the warehouse's
settings as registered; a waited compaction runs in the driver's Python planning worker on the
embedded engine. Bad input fails with one line naming the table — an
``IllegalArgumentException`` whose message starts with the project's error type
(``NoSuchObjectError: …``, ``UnsupportedOperationError: … non-ACID table …``, also for a
table of Spark's own catalog) — and queues nothing.

Why procedures, with Hive's statements rewritten onto them. ``ALTER TABLE … COMPACT`` and
``SHOW COMPACTIONS`` are in Spark's grammar only as unsupported Hive commands (Spark's parser
refuses them), and Spark builds a session's parser once, with the session
(``spark.sql.extensions`` is a static setting), whereas ``wh.register_spark`` registers on a
session already running, as every other part of tables by name does. Spark 4's stored
procedures are looked up in the catalog at each ``CALL``: the session catalog extension
(:file:`jvm/AcidCatalog.java`) is Spark's ``ProcedureCatalog`` for the namespace ``system``
(:file:`jvm/AcidProcedures.java`), the way Iceberg exposes its maintenance (``CALL
catalog.system.rewrite_data_files``). A session built with the extension of :mod:`.extensions`
takes Hive's statements too, each parsed as the ``CALL`` it means: one way to compact.

The procedures do no warehouse work in the JVM: like every catalog operation (:mod:`.catalog`)
they call the Python data source's ``schema()`` with a ``_catalog_op`` option — the procedure's
name, its arguments as ``_arg_<name>`` options — and :func:`maintenance_answer` answers with
the result's columns, its rows (JSON) in the first column's metadata, or the error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType, TimestampType

from acid_platform.errors import AcidError
from acid_platform.metastore.show import SHOW_COMPACTIONS_COLUMNS, SHOW_COMPACTIONS_TIMES

if TYPE_CHECKING:
    from acid_platform.engines.spark.options import SourceOptions
    from acid_platform.table.warehouse import TableWarehouse

#: The catalog operations that are procedures (``CALL system.<name>``).
PROCEDURES = frozenset({"compact", "show_compactions"})
#: The options carrying a procedure's arguments (``AcidProcedures.ARG``).
ARG = "_arg_"
_NUMBERS = ("CompactionId", "Duration(ms)", "TxnId", "Next TxnId", "Highest WriteId")


def maintenance_answer(options: SourceOptions, raw: Mapping[str, str]) -> StructType:
    """The procedure ``raw["_catalog_op"]`` run with the ``_arg_…`` options: its rows, or its
    error, as the answer :file:`jvm/AcidProcedures.java` reads (see module docs)."""
    args = {k[len(ARG) :]: v for k, v in raw.items() if k.startswith(ARG)}
    try:
        wh = _warehouse(options)
        if raw["_catalog_op"] == "compact":
            rows = _compact(wh, options.table, args)
        else:
            rows = _compactions(wh, options.table if "table" in args else None)
    except AcidError as exc:
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return StructType([StructField("error", StringType(), metadata={"acid_error": message})])
    return _answer(rows)


def compactions_schema() -> StructType:
    """SHOW COMPACTIONS' columns as a Spark schema: Hive 4's names and order; ids, write ids
    and durations ``bigint``, times ``timestamp``, the rest ``string``."""
    return StructType([StructField(c, _type(c)) for c in SHOW_COMPACTIONS_COLUMNS])


def _type(column: str) -> DataType:
    if column in _NUMBERS:
        return LongType()
    if column in SHOW_COMPACTIONS_TIMES:
        return TimestampType()
    return StringType()


def _compact(wh: TableWarehouse, table: str, args: Mapping[str, str]) -> list[dict[str, Any]]:
    from acid_platform.compaction.api import compact_table
    from acid_platform.table.partitions import parse_partition_name

    partition = args.get("partition")
    infos = compact_table(
        wh,
        table,
        dict(parse_partition_name(partition)) if partition else None,
        args.get("type", "major"),
        args.get("wait") == "true",
        pool=args.get("pool") or None,
    )
    ids = {i.id for i in infos}
    return [r for r in wh.show_compactions() if r["CompactionId"] in ids]


def _compactions(wh: TableWarehouse, table: str | None) -> list[dict[str, Any]]:
    rows = wh.show_compactions()
    if table is None:
        return rows
    spec = wh.metastore.get_table(*table.split(".", 1))
    return [r for r in rows if (r["Database"], r["Table"]) == (spec.db, spec.name)]


def _answer(rows: list[dict[str, Any]]) -> StructType:
    """The rows as the answer: the columns, the rows as JSON arrays in the first column's
    metadata (times in microseconds since the epoch)."""
    values = [
        [
            r[c] * 1000 if c in SHOW_COMPACTIONS_TIMES and r[c] is not None else r[c]
            for c in SHOW_COMPACTIONS_COLUMNS
        ]
        for r in rows
    ]
    fields = compactions_schema().fields
    first = StructField(
        fields[0].name, fields[0].dataType, metadata={"acid_rows": json.dumps(values)}
    )
    return StructType([first, *fields[1:]])


def _warehouse(options: SourceOptions) -> TableWarehouse:
    from acid_platform.engines import default_engine
    from acid_platform.table.warehouse import TableWarehouse

    return TableWarehouse(options.warehouse, options.metastore(), default_engine(), options.conf)


__all__ = ["PROCEDURES", "compactions_schema", "maintenance_answer"]
