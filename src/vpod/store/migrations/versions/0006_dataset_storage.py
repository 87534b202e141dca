"""Dataset storage: a project's S3-compatible buckets (credentials sealed) and the cluster
each is given to; see ``vpod/store/dataset_schema.py``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "cloud_dataset_storages",
        sa.Column("id", sa.String(63), nullable=False),
        sa.Column("project_id", sa.String(63), nullable=False),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column(
            "endpoint", sa.String(64), nullable=False, comment="an endpoint name of cloud.toml"
        ),
        sa.Column("bucket", sa.String(64), nullable=False),
        sa.Column("access_key_masked", sa.String(64), nullable=False, comment="e.g. AKIA…WXYZ"),
        sa.Column("access_key_sealed", sa.Text(), nullable=False, comment="Fernet token"),
        sa.Column("secret_key_sealed", sa.Text(), nullable=False, comment="Fernet token"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["cloud_projects.id"],
            name="fk_cloud_dataset_storages_project_id_cloud_projects",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_cloud_dataset_storages"),
        sa.UniqueConstraint("project_id", "name", name="uq_cloud_dataset_storages_project_id_name"),
    )
    op.create_index(
        "ix_cloud_dataset_storages_project_id", "cloud_dataset_storages", ["project_id"]
    )
    op.create_table(
        "cloud_dataset_attachments",
        sa.Column("cluster_id", sa.String(63), nullable=False),
        sa.Column("storage_id", sa.String(63), nullable=False),
        sa.Column(
            "mount_path", sa.String(255), nullable=True, comment="absolute path on the servers"
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["cloud_clusters.id"],
            ondelete="CASCADE",
            name="fk_cloud_dataset_attachments_cluster_id_cloud_clusters",
        ),
        sa.ForeignKeyConstraint(
            ["storage_id"],
            ["cloud_dataset_storages.id"],
            name="fk_cloud_dataset_attachments_storage_id_cloud_dataset_storages",
        ),
        sa.PrimaryKeyConstraint("cluster_id", name="pk_cloud_dataset_attachments"),
    )
    op.create_index(
        "ix_cloud_dataset_attachments_storage_id", "cloud_dataset_attachments", ["storage_id"]
    )


def downgrade() -> None:
    op.drop_table("cloud_dataset_attachments")
    op.drop_table("cloud_dataset_storages")
