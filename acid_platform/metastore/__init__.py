"""The metastore: catalog, transactions, write ids, locks, compaction queue, reader leases,
sources loaded by transactions.

Hive metastore semantics (TxnHandler / CompactionTxnHandler, Hive 4) on SQLAlchemy Core, with
the schema versioned by Alembic. SQLite (a file in the warehouse) by default, PostgreSQL when
shared, MySQL/MariaDB as well.

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
