"""Streaming Ingest V2: transaction batches of records into ACID tables (Hive's
``org.apache.hive.streaming``), above the table layer; and, in :mod:`acid_platform.streaming.mutate`,
the Streaming Mutation API (Hive's ``org.apache.hive.hcatalog.streaming.mutate``): one long
transaction over several tables whose inserts, updates and deletes (keyed by ROW__ID) are written
by coordinators anywhere and become visible at commit, all at once.

Modules (more in ``docs/streaming.md``):

* :mod:`.connection` — ``StreamingConnection`` / ``HiveStreamingConnection``, its builder,
  ``StreamingOptions`` and ``ConnectionStats``: begin / write / commit / abort / close, static
  or dynamic partitions, a memory bound, unmanaged mode;
* :mod:`.batch` — ``TransactionBatch``: n transactions, n consecutive write ids, one
  ``delta_<min>_<max>`` per partition, each next lock taken in the previous commit's metastore
  write, a background heartbeat of the range;
* :mod:`.delta_files` — one growing bucket file per bucket of a partition's delta, rows sent to
  buckets by the table's bucketing version; each commit records its files with their committed
  lengths;
* :mod:`.record_writers` — strict delimited, JSON and regex records; Arrow; pandas;
* :mod:`acid_platform.streaming.mutate` — the Mutation API;
* :mod:`acid_platform.streaming.landing` — landing files loaded into tables, each exactly once.

The package sits above ``engines`` because the Mutation API's Spark half
(:mod:`acid_platform.streaming.mutate.spark`) uses the Spark engine's bucketing.

>>> from acid_platform.streaming import StreamingConnection, StrictJsonWriter
"""

from acid_platform.streaming.batch import TransactionBatch
from acid_platform.streaming.connection import (
    DEFAULT_MEMORY_LIMIT,
    ConnectionStats,
    HiveStreamingConnection,
    StreamingConnection,
    StreamingConnectionBuilder,
    StreamingOptions,
)
from acid_platform.streaming.record_writers import (
    ArrowRecordWriter,
    PandasRecordWriter,
    RecordWriter,
    StrictDelimitedInputWriter,
    StrictJsonWriter,
    StrictRegexWriter,
)

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "ArrowRecordWriter",
    "ConnectionStats",
    "HiveStreamingConnection",
    "PandasRecordWriter",
    "RecordWriter",
    "StreamingConnection",
    "StreamingConnectionBuilder",
    "StreamingOptions",
    "StrictDelimitedInputWriter",
    "StrictJsonWriter",
    "StrictRegexWriter",
    "TransactionBatch",
]
