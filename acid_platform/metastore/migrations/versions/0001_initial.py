"""Initial metastore schema: catalog, transactions, write ids, locks, compaction, leases.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (never import the live schema here).
NAME = sa.String(length=128)
PART_NAME = sa.String(length=767).with_variant(sa.String(length=512), "mysql", "mariadb")
CHAR1 = sa.String(length=1)


def _compaction_columns(prefix: str) -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column(f"{prefix}_database", NAME, nullable=False),
        sa.Column(f"{prefix}_table", NAME, nullable=False),
        sa.Column(f"{prefix}_partition", PART_NAME, nullable=True),
        sa.Column(f"{prefix}_state", CHAR1, nullable=False),
        sa.Column(f"{prefix}_type", CHAR1, nullable=True),
        sa.Column(f"{prefix}_tblproperties", sa.Text(), nullable=True),
        sa.Column(f"{prefix}_worker_id", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_enqueue_time", sa.BigInteger(), nullable=True),
        sa.Column(f"{prefix}_start", sa.BigInteger(), nullable=True),
        sa.Column(f"{prefix}_run_as", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_highest_write_id", sa.BigInteger(), nullable=True),
        sa.Column(f"{prefix}_meta_info", sa.Text(), nullable=True),
        sa.Column(f"{prefix}_hadoop_job_id", sa.String(length=32), nullable=True),
        sa.Column(f"{prefix}_error_message", sa.Text(), nullable=True),
        sa.Column(f"{prefix}_initiator_id", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_initiator_version", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_worker_version", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_pool_name", sa.String(length=128), nullable=True),
        sa.Column(f"{prefix}_txn_id", sa.BigInteger(), nullable=True),
        sa.Column(f"{prefix}_next_txn_id", sa.BigInteger(), nullable=True),
        sa.Column(f"{prefix}_commit_time", sa.BigInteger(), nullable=True),
    ]


def upgrade() -> None:
    sequences = op.create_table(
        "acid_sequences",
        sa.Column("seq_name", sa.String(length=32), nullable=False),
        sa.Column("next_val", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq_name"),
    )
    op.bulk_insert(
        sequences,
        [{"seq_name": name, "next_val": 1} for name in ("txn", "lock", "compaction", "lease")],
    )

    # ------------------------------------------------------------------ catalog
    op.create_table(
        "dbs",
        sa.Column("db_name", NAME, nullable=False),
        sa.Column("db_location", sa.Text(), nullable=True),
        sa.Column("db_created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("db_name"),
    )
    op.create_table(
        "tbls",
        sa.Column("tbl_database", NAME, nullable=False),
        sa.Column("tbl_name", NAME, nullable=False),
        sa.Column("tbl_location", sa.Text(), nullable=False),
        sa.Column("tbl_columns", sa.Text(), nullable=False),
        sa.Column("tbl_partition_columns", sa.Text(), nullable=False),
        sa.Column("tbl_bucket_columns", sa.Text(), nullable=False),
        sa.Column("tbl_num_buckets", sa.Integer(), nullable=False),
        sa.Column("tbl_bucketing_version", sa.SmallInteger(), nullable=False),
        sa.Column("tbl_properties", sa.Text(), nullable=False),
        sa.Column("tbl_created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("tbl_database", "tbl_name", name="pk_tbls"),
    )
    op.create_table(
        "partitions",
        sa.Column("part_database", NAME, nullable=False),
        sa.Column("part_table", NAME, nullable=False),
        sa.Column("part_name", PART_NAME, nullable=False),
        sa.Column("part_created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("part_database", "part_table", "part_name", name="pk_partitions"),
    )

    # ------------------------------------------------------------------ transactions
    op.create_table(
        "txns",
        sa.Column("txn_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("txn_state", CHAR1, nullable=False),
        sa.Column("txn_started", sa.BigInteger(), nullable=False),
        sa.Column("txn_last_heartbeat", sa.BigInteger(), nullable=False),
        sa.Column("txn_user", sa.String(length=128), nullable=True),
        sa.Column("txn_host", sa.String(length=128), nullable=True),
        sa.Column("txn_agent_info", sa.String(length=128), nullable=True),
        sa.Column("txn_meta_info", sa.String(length=128), nullable=True),
        sa.Column("txn_heartbeat_count", sa.Integer(), nullable=False),
        sa.Column("txn_type", sa.SmallInteger(), nullable=False),
        sa.PrimaryKeyConstraint("txn_id"),
    )
    op.create_index("ix_txns_state", "txns", ["txn_state"], unique=False)
    op.create_table(
        "txn_components",
        sa.Column("tc_txnid", sa.BigInteger(), nullable=False),
        sa.Column("tc_database", NAME, nullable=False),
        sa.Column("tc_table", NAME, nullable=False),
        sa.Column("tc_partition", PART_NAME, nullable=True),
        sa.Column("tc_operation_type", CHAR1, nullable=False),
        sa.Column("tc_writeid", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_tc_table", "txn_components", ["tc_database", "tc_table"], unique=False)
    op.create_index("ix_tc_txnid", "txn_components", ["tc_txnid"], unique=False)
    op.create_table(
        "completed_txn_components",
        sa.Column("ctc_txnid", sa.BigInteger(), nullable=False),
        sa.Column("ctc_database", NAME, nullable=False),
        sa.Column("ctc_table", NAME, nullable=False),
        sa.Column("ctc_partition", PART_NAME, nullable=True),
        sa.Column("ctc_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("ctc_writeid", sa.BigInteger(), nullable=True),
        sa.Column("ctc_update_delete", CHAR1, nullable=False),
    )
    op.create_index(
        "ix_ctc_table", "completed_txn_components", ["ctc_database", "ctc_table"], unique=False
    )
    op.create_index("ix_ctc_txnid", "completed_txn_components", ["ctc_txnid"], unique=False)
    op.create_table(
        "txn_to_write_id",
        sa.Column("t2w_txnid", sa.BigInteger(), nullable=False),
        sa.Column("t2w_database", NAME, nullable=False),
        sa.Column("t2w_table", NAME, nullable=False),
        sa.Column("t2w_writeid", sa.BigInteger(), nullable=False),
    )
    op.create_index(
        "ux_t2w_txn", "txn_to_write_id", ["t2w_database", "t2w_table", "t2w_txnid"], unique=True
    )
    op.create_index(
        "ux_t2w_writeid",
        "txn_to_write_id",
        ["t2w_database", "t2w_table", "t2w_writeid"],
        unique=True,
    )
    op.create_table(
        "next_write_id",
        sa.Column("nwi_database", NAME, nullable=False),
        sa.Column("nwi_table", NAME, nullable=False),
        sa.Column("nwi_next", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("nwi_database", "nwi_table", name="pk_next_write_id"),
    )
    op.create_table(
        "write_set",
        sa.Column("ws_database", NAME, nullable=False),
        sa.Column("ws_table", NAME, nullable=False),
        sa.Column("ws_partition", PART_NAME, nullable=True),
        sa.Column("ws_txnid", sa.BigInteger(), nullable=False),
        sa.Column("ws_commit_id", sa.BigInteger(), nullable=False),
        sa.Column("ws_operation_type", CHAR1, nullable=False),
    )
    op.create_index("ix_ws_commit_id", "write_set", ["ws_commit_id"], unique=False)
    op.create_index("ix_ws_table", "write_set", ["ws_database", "ws_table"], unique=False)

    # ------------------------------------------------------------------ locks
    op.create_table(
        "hive_locks",
        sa.Column("hl_lock_ext_id", sa.BigInteger(), nullable=False),
        sa.Column("hl_lock_int_id", sa.BigInteger(), nullable=False),
        sa.Column("hl_txnid", sa.BigInteger(), nullable=False),
        sa.Column("hl_db", NAME, nullable=False),
        sa.Column("hl_table", NAME, nullable=True),
        sa.Column("hl_partition", PART_NAME, nullable=True),
        sa.Column("hl_lock_state", CHAR1, nullable=False),
        sa.Column("hl_lock_type", CHAR1, nullable=False),
        sa.Column("hl_last_heartbeat", sa.BigInteger(), nullable=False),
        sa.Column("hl_acquired_at", sa.BigInteger(), nullable=True),
        sa.Column("hl_user", sa.String(length=128), nullable=True),
        sa.Column("hl_host", sa.String(length=128), nullable=True),
        sa.Column("hl_agent_info", sa.String(length=128), nullable=True),
        sa.Column("hl_heartbeat_count", sa.Integer(), nullable=False),
        sa.Column("hl_blockedby_ext_id", sa.BigInteger(), nullable=True),
        sa.Column("hl_blockedby_int_id", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("hl_lock_ext_id", "hl_lock_int_id", name="pk_hive_locks"),
    )
    op.create_index("ix_hl_db", "hive_locks", ["hl_db"], unique=False)
    op.create_index("ix_hl_txnid", "hive_locks", ["hl_txnid"], unique=False)

    # ------------------------------------------------------------------ compaction
    op.create_table(
        "compaction_queue",
        sa.Column("cq_id", sa.BigInteger(), autoincrement=False, nullable=False),
        *_compaction_columns("cq"),
        sa.PrimaryKeyConstraint("cq_id"),
    )
    op.create_index("ix_cq_state", "compaction_queue", ["cq_state"], unique=False)
    op.create_index("ix_cq_table", "compaction_queue", ["cq_database", "cq_table"], unique=False)
    op.create_table(
        "completed_compactions",
        sa.Column("cc_id", sa.BigInteger(), autoincrement=False, nullable=False),
        *_compaction_columns("cc"),
        sa.Column("cc_end", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("cc_id"),
    )
    op.create_index(
        "ix_cc_table", "completed_compactions", ["cc_database", "cc_table"], unique=False
    )

    # ------------------------------------------------------------------ reader leases
    op.create_table(
        "read_leases",
        sa.Column("rl_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("rl_valid_txns", sa.Text(), nullable=False),
        sa.Column("rl_txn_hwm", sa.BigInteger(), nullable=False),
        sa.Column("rl_created", sa.BigInteger(), nullable=False),
        sa.Column("rl_last_heartbeat", sa.BigInteger(), nullable=False),
        sa.Column("rl_ttl_ms", sa.BigInteger(), nullable=False),
        sa.Column("rl_expires_at", sa.BigInteger(), nullable=False),
        sa.Column("rl_user", sa.String(length=128), nullable=True),
        sa.Column("rl_host", sa.String(length=128), nullable=True),
        sa.Column("rl_agent_info", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("rl_id"),
    )
    op.create_index("ix_rl_expires_at", "read_leases", ["rl_expires_at"], unique=False)


def downgrade() -> None:
    for table in (
        "read_leases",
        "completed_compactions",
        "compaction_queue",
        "hive_locks",
        "write_set",
        "next_write_id",
        "txn_to_write_id",
        "completed_txn_components",
        "txn_components",
        "txns",
        "partitions",
        "tbls",
        "dbs",
        "acid_sequences",
    ):
        op.drop_table(table)
