"""The metastore's tables, as SQLAlchemy Core objects.

Names follow Hive's metastore schema (``hive-schema-4.0.0``) in lower case, so anyone who knows
``TXNS``, ``HIVE_LOCKS`` or ``COMPACTION_QUEUE`` finds their way; a few tables are ours
(``acid_sequences``, ``read_leases``, the small catalog ``dbs``/``tbls``/``partitions``).
Times are epoch milliseconds (BIGINT), as in Hive. The schema is created and upgraded only by
the Alembic migrations in ``migrations/versions``; this module must describe the same thing
(a test compares them).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
)

NAME = String(128)
# MySQL/MariaDB cap index keys at 3072 bytes (768 utf8mb4 characters) per index.
PART_NAME = String(767).with_variant(String(512), "mysql", "mariadb")
CHAR1 = String(1)

metadata = MetaData()

# --------------------------------------------------------------------------- sequences
acid_sequences = Table(
    "acid_sequences",
    metadata,
    Column("seq_name", String(32), primary_key=True),
    Column("next_val", BigInteger, nullable=False),
)
"""Id counters: ``txn`` (NEXT_TXN_ID), ``lock`` (NEXT_LOCK_ID), ``compaction``, ``lease``."""

# --------------------------------------------------------------------------- catalog
dbs = Table(
    "dbs",
    metadata,
    Column("db_name", NAME, primary_key=True),
    Column("db_location", Text),
    Column("db_created", BigInteger, nullable=False),
)

tbls = Table(
    "tbls",
    metadata,
    Column("tbl_database", NAME, nullable=False),
    Column("tbl_name", NAME, nullable=False),
    Column("tbl_location", Text, nullable=False),
    Column("tbl_columns", Text, nullable=False),
    Column("tbl_partition_columns", Text, nullable=False),
    Column("tbl_bucket_columns", Text, nullable=False),
    Column("tbl_num_buckets", Integer, nullable=False),
    Column("tbl_bucketing_version", SmallInteger, nullable=False),
    Column("tbl_properties", Text, nullable=False),
    Column("tbl_created", BigInteger, nullable=False),
    PrimaryKeyConstraint("tbl_database", "tbl_name", name="pk_tbls"),
)

partitions = Table(
    "partitions",
    metadata,
    Column("part_database", NAME, nullable=False),
    Column("part_table", NAME, nullable=False),
    Column("part_name", PART_NAME, nullable=False),
    Column("part_created", BigInteger, nullable=False),
    PrimaryKeyConstraint("part_database", "part_table", "part_name", name="pk_partitions"),
)

# --------------------------------------------------------------------------- transactions
txns = Table(
    "txns",
    metadata,
    Column("txn_id", BigInteger, primary_key=True, autoincrement=False),
    Column("txn_state", CHAR1, nullable=False),
    Column("txn_started", BigInteger, nullable=False),
    Column("txn_last_heartbeat", BigInteger, nullable=False),
    Column("txn_user", String(128)),
    Column("txn_host", String(128)),
    Column("txn_agent_info", String(128)),
    Column("txn_meta_info", String(128)),
    Column("txn_heartbeat_count", Integer, nullable=False, default=0),
    Column("txn_type", SmallInteger, nullable=False, default=0),
    Index("ix_txns_state", "txn_state"),
)

txn_components = Table(
    "txn_components",
    metadata,
    Column("tc_txnid", BigInteger, nullable=False),
    Column("tc_database", NAME, nullable=False),
    Column("tc_table", NAME, nullable=False),
    Column("tc_partition", PART_NAME),
    Column("tc_operation_type", CHAR1, nullable=False),
    Column("tc_writeid", BigInteger),
    Index("ix_tc_txnid", "tc_txnid"),
    Index("ix_tc_table", "tc_database", "tc_table"),
)

completed_txn_components = Table(
    "completed_txn_components",
    metadata,
    Column("ctc_txnid", BigInteger, nullable=False),
    Column("ctc_database", NAME, nullable=False),
    Column("ctc_table", NAME, nullable=False),
    Column("ctc_partition", PART_NAME),
    Column("ctc_timestamp", BigInteger, nullable=False),
    Column("ctc_writeid", BigInteger),
    Column("ctc_update_delete", CHAR1, nullable=False),
    Index("ix_ctc_table", "ctc_database", "ctc_table"),
    Index("ix_ctc_txnid", "ctc_txnid"),
)

txn_to_write_id = Table(
    "txn_to_write_id",
    metadata,
    Column("t2w_txnid", BigInteger, nullable=False),
    Column("t2w_database", NAME, nullable=False),
    Column("t2w_table", NAME, nullable=False),
    Column("t2w_writeid", BigInteger, nullable=False),
    Index("ux_t2w_txn", "t2w_database", "t2w_table", "t2w_txnid", unique=True),
    Index("ux_t2w_writeid", "t2w_database", "t2w_table", "t2w_writeid", unique=True),
)

next_write_id = Table(
    "next_write_id",
    metadata,
    Column("nwi_database", NAME, nullable=False),
    Column("nwi_table", NAME, nullable=False),
    Column("nwi_next", BigInteger, nullable=False),
    PrimaryKeyConstraint("nwi_database", "nwi_table", name="pk_next_write_id"),
)

write_set = Table(
    "write_set",
    metadata,
    Column("ws_database", NAME, nullable=False),
    Column("ws_table", NAME, nullable=False),
    Column("ws_partition", PART_NAME),
    Column("ws_txnid", BigInteger, nullable=False),
    Column("ws_commit_id", BigInteger, nullable=False),
    Column("ws_operation_type", CHAR1, nullable=False),
    Index("ix_ws_table", "ws_database", "ws_table"),
    Index("ix_ws_commit_id", "ws_commit_id"),
)

# --------------------------------------------------------------------------- sources
txn_sources = Table(
    "txn_sources",
    metadata,
    Column("ts_txnid", BigInteger, nullable=False),
    Column("ts_database", NAME, nullable=False),
    Column("ts_table", NAME, nullable=False),
    Column("ts_source_hash", String(64), nullable=False),
    Column("ts_source", Text, nullable=False),
    Column("ts_info", Text, nullable=False),
    PrimaryKeyConstraint(
        "ts_txnid", "ts_database", "ts_table", "ts_source_hash", name="pk_txn_sources"
    ),
)
"""Sources an open transaction loads (pending; dropped when it aborts)."""

committed_sources = Table(
    "committed_sources",
    metadata,
    Column("cs_database", NAME, nullable=False),
    Column("cs_table", NAME, nullable=False),
    Column("cs_source_hash", String(64), nullable=False),
    Column("cs_source", Text, nullable=False),
    Column("cs_info", Text, nullable=False),
    Column("cs_txnid", BigInteger, nullable=False),
    Column("cs_writeid", BigInteger),
    Column("cs_committed", BigInteger, nullable=False),
    PrimaryKeyConstraint("cs_database", "cs_table", "cs_source_hash", name="pk_committed_sources"),
)
"""Sources committed into a table: at most one row per (table, source), published by the
committing transaction (``ts_``/``cs_source_hash`` is the SHA-256 of the source key)."""

# --------------------------------------------------------------------------- written files
FILE_NAME = String(255)

write_files = Table(
    "write_files",
    metadata,
    Column("wf_database", NAME, nullable=False),
    Column("wf_table", NAME, nullable=False),
    Column("wf_partition", PART_NAME, nullable=False),
    Column("wf_directory", FILE_NAME, nullable=False),
    Column("wf_file", FILE_NAME, nullable=False),
    Column("wf_txnid", BigInteger, nullable=False),
    Column("wf_writeid", BigInteger, nullable=False),
    Column("wf_size", BigInteger, nullable=False),
    Column("wf_rows", BigInteger, nullable=False),
    Index("ix_wf_table", "wf_database", "wf_table"),
    Index("ix_wf_txnid", "wf_txnid"),
)
"""What each committed write wrote: one row per base/delta directory (``wf_file`` empty) and
one per bucket file in it (unique per path: the writer keeps them so; no key over the whole
path, which MySQL's 3072-byte key limit refuses), by partition (``''`` unpartitioned) and
names relative to the partition directory. Written by the writer before its commit; readers, the compactor and the
cleaner check their listing against it (see ``format.file_record``)."""

partition_stats = Table(
    "partition_stats",
    metadata,
    Column("ps_database", NAME, nullable=False),
    Column("ps_table", NAME, nullable=False),
    Column("ps_partition", PART_NAME, nullable=False),
    Column("ps_num_rows", BigInteger, nullable=False),
    Column("ps_num_files", BigInteger, nullable=False),
    Column("ps_total_size", BigInteger, nullable=False),
    Column("ps_delete_events", BigInteger, nullable=False),
    Column("ps_deltas", BigInteger, nullable=False),
    Column("ps_delete_deltas", BigInteger, nullable=False),
    Column("ps_updated", BigInteger, nullable=False),
    PrimaryKeyConstraint("ps_database", "ps_table", "ps_partition", name="pk_partition_stats"),
)
"""Hive's basic statistics (``numRows``, ``numFiles``, ``totalSize``) of each partition (``''``
unpartitioned), plus the delete events and deltas a reader merges: kept by the commits (see
``metastore.partition_stats``); a partition without a row has unknown statistics."""

metastore_identity = Table(
    "metastore_identity",
    metadata,
    Column("mi_key", String(16), nullable=False),
    Column("mi_id", String(64), nullable=False),
    Column("mi_created", BigInteger, nullable=False),
    PrimaryKeyConstraint("mi_key", name="pk_metastore_identity"),
)
"""The metastore's identity (one row, made on first use): the warehouse directory it serves
carries it in ``_acid_metastore``, so a second metastore on the same directory is refused."""

# --------------------------------------------------------------------------- locks
hive_locks = Table(
    "hive_locks",
    metadata,
    Column("hl_lock_ext_id", BigInteger, nullable=False),
    Column("hl_lock_int_id", BigInteger, nullable=False),
    Column("hl_txnid", BigInteger, nullable=False),
    Column("hl_db", NAME, nullable=False),
    Column("hl_table", NAME),
    Column("hl_partition", PART_NAME),
    Column("hl_lock_state", CHAR1, nullable=False),
    Column("hl_lock_type", CHAR1, nullable=False),
    Column("hl_last_heartbeat", BigInteger, nullable=False),
    Column("hl_acquired_at", BigInteger),
    Column("hl_user", String(128)),
    Column("hl_host", String(128)),
    Column("hl_agent_info", String(128)),
    Column("hl_heartbeat_count", Integer, nullable=False, default=0),
    Column("hl_blockedby_ext_id", BigInteger),
    Column("hl_blockedby_int_id", BigInteger),
    PrimaryKeyConstraint("hl_lock_ext_id", "hl_lock_int_id", name="pk_hive_locks"),
    Index("ix_hl_txnid", "hl_txnid"),
    Index("ix_hl_db", "hl_db"),
)

# --------------------------------------------------------------------------- compaction
_COMPACTION_COLUMNS = (
    ("database", NAME, False),
    ("table", NAME, False),
    ("partition", PART_NAME, True),
    ("state", CHAR1, False),
    ("type", CHAR1, True),
    ("tblproperties", Text, True),
    ("worker_id", String(128), True),
    ("enqueue_time", BigInteger, True),
    ("start", BigInteger, True),
    ("run_as", String(128), True),
    ("highest_write_id", BigInteger, True),
    ("meta_info", Text, True),
    ("hadoop_job_id", String(32), True),
    ("error_message", Text, True),
    ("initiator_id", String(128), True),
    ("initiator_version", String(128), True),
    ("worker_version", String(128), True),
    ("pool_name", String(128), True),
    ("txn_id", BigInteger, True),
    ("next_txn_id", BigInteger, True),
    ("commit_time", BigInteger, True),
)

compaction_queue = Table(
    "compaction_queue",
    metadata,
    Column("cq_id", BigInteger, primary_key=True, autoincrement=False),
    *(
        Column(f"cq_{name}", type_, nullable=nullable)
        for name, type_, nullable in _COMPACTION_COLUMNS
    ),
    Index("ix_cq_table", "cq_database", "cq_table"),
    Index("ix_cq_state", "cq_state"),
)

completed_compactions = Table(
    "completed_compactions",
    metadata,
    Column("cc_id", BigInteger, primary_key=True, autoincrement=False),
    *(
        Column(f"cc_{name}", type_, nullable=nullable)
        for name, type_, nullable in _COMPACTION_COLUMNS
    ),
    Column("cc_end", BigInteger),
    Index("ix_cc_table", "cc_database", "cc_table"),
)

# --------------------------------------------------------------------------- reader leases
read_leases = Table(
    "read_leases",
    metadata,
    Column("rl_id", BigInteger, primary_key=True, autoincrement=False),
    Column("rl_valid_txns", Text, nullable=False),
    Column("rl_txn_hwm", BigInteger, nullable=False),
    Column("rl_created", BigInteger, nullable=False),
    Column("rl_last_heartbeat", BigInteger, nullable=False),
    Column("rl_ttl_ms", BigInteger, nullable=False),
    Column("rl_expires_at", BigInteger, nullable=False),
    Column("rl_user", String(128)),
    Column("rl_host", String(128)),
    Column("rl_agent_info", String(128)),
    Index("ix_rl_expires_at", "rl_expires_at"),
)

SEQUENCE_NAMES = ("txn", "lock", "compaction", "lease")
