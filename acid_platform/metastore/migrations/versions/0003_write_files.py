"""What each write id wrote (directories, files, sizes, rows), and the metastore's identity.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Frozen copies of the column types of this revision (never import the live schema here).
NAME = sa.String(length=128)
PART_NAME = sa.String(length=767).with_variant(sa.String(length=512), "mysql", "mariadb")
FILE_NAME = sa.String(length=255)


def upgrade() -> None:
    op.create_table(
        "write_files",
        sa.Column("wf_database", NAME, nullable=False),
        sa.Column("wf_table", NAME, nullable=False),
        sa.Column("wf_partition", PART_NAME, nullable=False),
        sa.Column("wf_directory", FILE_NAME, nullable=False),
        sa.Column("wf_file", FILE_NAME, nullable=False),
        sa.Column("wf_txnid", sa.BigInteger(), nullable=False),
        sa.Column("wf_writeid", sa.BigInteger(), nullable=False),
        sa.Column("wf_size", sa.BigInteger(), nullable=False),
        sa.Column("wf_rows", sa.BigInteger(), nullable=False),
    )
    # no key over the whole path: MySQL caps an index key at 3072 bytes (the writer keeps a
    # directory's rows unique; see metastore.file_records.record)
    op.create_index("ix_wf_table", "write_files", ["wf_database", "wf_table"])
    op.create_index("ix_wf_txnid", "write_files", ["wf_txnid"])
    op.create_table(
        "metastore_identity",
        sa.Column("mi_key", sa.String(length=16), nullable=False),
        sa.Column("mi_id", sa.String(length=64), nullable=False),
        sa.Column("mi_created", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("mi_key", name="pk_metastore_identity"),
    )


def downgrade() -> None:
    op.drop_table("metastore_identity")
    op.drop_index("ix_wf_txnid", table_name="write_files")
    op.drop_index("ix_wf_table", table_name="write_files")
    op.drop_table("write_files")
