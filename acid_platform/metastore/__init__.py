"""The metastore: catalog, transactions, write ids, locks, compaction queue, reader leases,
sources loaded by transactions.

Hive metastore semantics (TxnHandler / CompactionTxnHandler, Hive 4) on SQLAlchemy Core, with
the schema versioned by Alembic. SQLite (a file in the warehouse) by default, PostgreSQL when
shared (the ``[postgres]`` extra), MySQL/MariaDB as well (``[mysql]``).

:class:`Metastore` (:mod:`.metastore`) is one facade over mixins, one ``*_api`` module per
concern, each over the functions of its own modules:

* storage — :mod:`.store` (connections, units of work, retries, id sequences; a SQLite file on
  a read-only mount opens read-only), :mod:`.schema` (the tables, in Hive's names),
  :mod:`.migrate` and :mod:`.migrations` (Alembic; a schema of a newer revision is refused),
  :mod:`.clock` (every time from the database server), :mod:`.shared` (one client per process
  for code no caller hands one, such as Spark's Python workers);
* values — :mod:`.model` (lock requests, table specs, queue entries), :mod:`.names`
  (identifiers, partition names, ``DEFAULT_DATABASE``);
* catalog — :mod:`.catalog`, :mod:`.catalog_api`;
* transactions — :mod:`.txns` (open, commit with the write-set check, abort, snapshots),
  :mod:`.commit_fast` (PostgreSQL: a commit that checks nothing, in one statement),
  :mod:`.writeids`, :mod:`.write_sets` (first committer wins), :mod:`.housekeeping`
  (heartbeats, the time-out reaper, history purge), :mod:`.batch_api` (a streaming transaction
  batch in few round trips: ``record_batch_writes``, ``commit_and_lock``);
* locks — :mod:`.locks` (Hive 4's matrix), :mod:`.lock_api` (requests, waits, expiry inside
  the lock check);
* compaction and readers — :mod:`.compaction_queue`, :mod:`.compaction_history`,
  :mod:`.compaction_recovery` (entries of dead or timed-out workers back to the queue),
  :mod:`.compaction_api`, :mod:`.leases` (reader leases the cleaner waits for);
* what was loaded and written — :mod:`.sources` and :mod:`.source_api` (a transaction's
  sources, committed with it, once per table), :mod:`.file_records` and
  :mod:`.file_record_api` (``write_files``: what each write id wrote; the metastore's
  identity), :mod:`.partition_stats` (each partition's numRows / numFiles / totalSize, kept by
  the commits);
* :mod:`.show` — the rows of SHOW TRANSACTIONS, LOCKS and COMPACTIONS.

>>> from acid_platform.metastore import Metastore, LockComponent, LockType
"""

from acid_platform.metastore.metastore import METASTORE_FILE, Metastore
from acid_platform.metastore.model import (
    CommittedSource,
    CompactionInfo,
    CompactionState,
    CompactionType,
    Database,
    LockComponent,
    LockResponse,
    LockState,
    LockType,
    OperationType,
    PartitionActivity,
    Source,
    TableSpec,
    TxnState,
)
from acid_platform.metastore.show import (
    SHOW_COMPACTIONS_COLUMNS,
    SHOW_LOCKS_COLUMNS,
    SHOW_TRANSACTIONS_COLUMNS,
)

__all__ = [
    "METASTORE_FILE",
    "SHOW_COMPACTIONS_COLUMNS",
    "SHOW_LOCKS_COLUMNS",
    "SHOW_TRANSACTIONS_COLUMNS",
    "CommittedSource",
    "CompactionInfo",
    "CompactionState",
    "CompactionType",
    "Database",
    "LockComponent",
    "LockResponse",
    "LockState",
    "LockType",
    "Metastore",
    "OperationType",
    "PartitionActivity",
    "Source",
    "TableSpec",
    "TxnState",
]
