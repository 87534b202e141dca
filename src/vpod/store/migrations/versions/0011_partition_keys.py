"""Partition keys: access keys scoped to one partition (a Slurm job's credential), owned by
the user who minted them and removed with their partition; see ``vpod/store/partition_keys.py``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "partition_keys",
        sa.Column(
            "id",
            sa.String(63),
            primary_key=True,
            comment="the user id the key is presented with",
        ),
        sa.Column(
            "owner_id",
            sa.String(63),
            sa.ForeignKey("users.id", ondelete="CASCADE", name="fk_partition_keys_owner_id_users"),
            nullable=False,
        ),
        sa.Column(
            "partition_id",
            sa.String(63),
            sa.ForeignKey(
                "partitions.id",
                ondelete="CASCADE",
                name="fk_partition_keys_partition_id_partitions",
            ),
            nullable=False,
            comment="the one partition the key may use: it goes with the partition",
        ),
        sa.Column(
            "key_hash", sa.String(255), nullable=False, comment="sha256 of a 256-bit random key"
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_partition_keys_owner_id", "partition_keys", ["owner_id"])
    op.create_index("ix_partition_keys_partition_id", "partition_keys", ["partition_id"])


def downgrade() -> None:
    op.drop_index("ix_partition_keys_partition_id", table_name="partition_keys")
    op.drop_index("ix_partition_keys_owner_id", table_name="partition_keys")
    op.drop_table("partition_keys")
