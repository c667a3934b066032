"""Sources loaded by transactions: pending with their transaction, committed per table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (never import the live schema here).
NAME = sa.String(length=128)
HASH = sa.String(length=64)


def upgrade() -> None:
    op.create_table(
        "txn_sources",
        sa.Column("ts_txnid", sa.BigInteger(), nullable=False),
        sa.Column("ts_database", NAME, nullable=False),
        sa.Column("ts_table", NAME, nullable=False),
        sa.Column("ts_source_hash", HASH, nullable=False),
        sa.Column("ts_source", sa.Text(), nullable=False),
        sa.Column("ts_info", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "ts_txnid", "ts_database", "ts_table", "ts_source_hash", name="pk_txn_sources"
        ),
    )
    op.create_table(
        "committed_sources",
        sa.Column("cs_database", NAME, nullable=False),
        sa.Column("cs_table", NAME, nullable=False),
        sa.Column("cs_source_hash", HASH, nullable=False),
        sa.Column("cs_source", sa.Text(), nullable=False),
        sa.Column("cs_info", sa.Text(), nullable=False),
        sa.Column("cs_txnid", sa.BigInteger(), nullable=False),
        sa.Column("cs_writeid", sa.BigInteger(), nullable=True),
        sa.Column("cs_committed", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "cs_database", "cs_table", "cs_source_hash", name="pk_committed_sources"
        ),
    )


def downgrade() -> None:
    op.drop_table("committed_sources")
    op.drop_table("txn_sources")
