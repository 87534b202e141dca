"""SSH keypairs: a project's OpenSSH public keys and the clusters each may log in to; see
``vpod/store/keypair_schema.py``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "cloud_keypairs",
        sa.Column("id", sa.String(63), nullable=False),
        sa.Column("project_id", sa.String(63), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column(
            "key_type",
            sa.String(64),
            nullable=False,
            comment="ssh-ed25519, ssh-rsa, ecdsa-sha2-...",
        ),
        sa.Column("public_key", sa.Text(), nullable=False, comment="one authorized_keys line"),
        sa.Column(
            "fingerprint",
            sa.String(64),
            nullable=False,
            comment="SHA256:... as ssh-keygen -l shows",
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["cloud_projects.id"],
            name="fk_cloud_keypairs_project_id_cloud_projects",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_cloud_keypairs"),
        sa.UniqueConstraint("project_id", "name", name="uq_cloud_keypairs_project_id_name"),
    )
    op.create_index("ix_cloud_keypairs_project_id", "cloud_keypairs", ["project_id"])
    op.create_table(
        "cloud_cluster_keypairs",
        sa.Column("cluster_id", sa.String(63), nullable=False),
        sa.Column("keypair_id", sa.String(63), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["cloud_clusters.id"],
            ondelete="CASCADE",
            name="fk_cloud_cluster_keypairs_cluster_id_cloud_clusters",
        ),
        sa.ForeignKeyConstraint(
            ["keypair_id"],
            ["cloud_keypairs.id"],
            name="fk_cloud_cluster_keypairs_keypair_id_cloud_keypairs",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "keypair_id", name="pk_cloud_cluster_keypairs"),
    )
    op.create_index(
        "ix_cloud_cluster_keypairs_keypair_id", "cloud_cluster_keypairs", ["keypair_id"]
    )


def downgrade() -> None:
    op.drop_table("cloud_cluster_keypairs")
    op.drop_table("cloud_keypairs")
