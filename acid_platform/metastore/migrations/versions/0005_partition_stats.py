"""Basic statistics per partition, kept by the commits (Hive's numRows, numFiles, totalSize).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29

Existing partitions get no row: their statistics are unknown (readers of the numbers count
them from the footers) until an INSERT OVERWRITE replaces them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (never import the live schema here).
NAME = sa.String(length=128)
PART_NAME = sa.String(length=767).with_variant(sa.String(length=512), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "partition_stats",
        sa.Column("ps_database", NAME, nullable=False),
        sa.Column("ps_table", NAME, nullable=False),
        sa.Column("ps_partition", PART_NAME, nullable=False),
        sa.Column("ps_num_rows", sa.BigInteger(), nullable=False),
        sa.Column("ps_num_files", sa.BigInteger(), nullable=False),
        sa.Column("ps_total_size", sa.BigInteger(), nullable=False),
        sa.Column("ps_delete_events", sa.BigInteger(), nullable=False),
        sa.Column("ps_deltas", sa.BigInteger(), nullable=False),
        sa.Column("ps_delete_deltas", sa.BigInteger(), nullable=False),
        sa.Column("ps_updated", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "ps_database", "ps_table", "ps_partition", name="pk_partition_stats"
        ),
    )


def downgrade() -> None:
    op.drop_table("partition_stats")
