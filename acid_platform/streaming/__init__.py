"""Streaming Ingest V2: transaction batches of records into ACID tables (Hive's
``org.apache.hive.streaming``), above the table layer; and, in :mod:`acid_platform.streaming.mutate`,
the Streaming Mutation API (Hive's ``org.apache.hive.hcatalog.streaming.mutate``): one long
transaction over several tables whose inserts, updates and deletes (keyed by ROW__ID) are written
by coordinators anywhere and become visible at commit, all at once.

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
