"""The cloud layer: projects, tokens, clusters, servers, hosts, volumes, tasks, metering.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=63)
NAME = sa.String(length=32)
LABEL = sa.String(length=64)
TEXT_SHORT = sa.String(length=255)
TIME = sa.DateTime(timezone=True)


def _index(table: str, *columns: str) -> None:
    op.create_index(op.f(f"ix_{table}_{'_'.join(columns)}"), table, list(columns), unique=False)


def upgrade() -> None:
    op.create_table(
        "cloud_projects",
        sa.Column("id", ID, nullable=False),
        sa.Column("name", TEXT_SHORT, nullable=False),
        sa.Column("quotas", sa.JSON(), nullable=False, comment="{quota name: limit}, -1 unlimited"),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_projects")),
    )
    op.create_table(
        "cloud_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("project_id", ID, nullable=True, comment="NULL: an administrator's token"),
        sa.Column("key_hash", TEXT_SHORT, nullable=False),
        sa.Column("label", TEXT_SHORT, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["cloud_projects.id"],
            name=op.f("fk_cloud_tokens_project_id_cloud_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_tokens")),
    )
    _index("cloud_tokens", "project_id")
    op.create_table(
        "cloud_clusters",
        sa.Column("id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=False),
        sa.Column("name", ID, nullable=False),
        sa.Column("flavor", LABEL, nullable=False),
        sa.Column("kind", NAME, nullable=False),
        sa.Column("status", NAME, nullable=False),
        sa.Column("image", LABEL, nullable=False),
        sa.Column("server_count", sa.Integer(), nullable=False),
        sa.Column("ipus", sa.Integer(), nullable=False),
        sa.Column("gpu_family", NAME, nullable=True),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("interfaces", sa.JSON(), nullable=False),
        sa.Column("network", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("vipu_cluster_id", ID, nullable=True),
        sa.Column("allocation_id", ID, nullable=True),
        sa.Column("vipu_user_id", ID, nullable=True),
        sa.Column("saved_partitions", sa.JSON(), nullable=True),
        sa.Column("fabric", LABEL, nullable=True),
        sa.Column("active_task_id", ID, nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["cloud_projects.id"],
            name=op.f("fk_cloud_clusters_project_id_cloud_projects"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_clusters")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_cloud_clusters_project_id_name")),
    )
    _index("cloud_clusters", "project_id")
    op.create_table(
        "cloud_hosts",
        sa.Column("id", ID, nullable=False),
        sa.Column("role", NAME, nullable=False),
        sa.Column("model", LABEL, nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("fabric", LABEL, nullable=True),
        sa.Column("address", TEXT_SHORT, nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("registered_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_hosts")),
    )
    op.create_table(
        "cloud_servers",
        sa.Column("id", ID, nullable=False),
        sa.Column("cluster_id", ID, nullable=False),
        sa.Column(
            "position",
            sa.Integer(),
            nullable=False,
            comment="1, 2, ...: the server's number in its cluster",
        ),
        sa.Column("name", ID, nullable=False),
        sa.Column("status", NAME, nullable=False),
        sa.Column("image", LABEL, nullable=False),
        sa.Column("host_id", ID, nullable=True),
        sa.Column("address", TEXT_SHORT, nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["cloud_clusters.id"],
            name=op.f("fk_cloud_servers_cluster_id_cloud_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_servers")),
        sa.UniqueConstraint(
            "cluster_id", "position", name=op.f("uq_cloud_servers_cluster_id_position")
        ),
    )
    op.create_table(
        "cloud_host_slots",
        sa.Column("host_id", ID, nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("server_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["host_id"], ["cloud_hosts.id"], name=op.f("fk_cloud_host_slots_host_id_cloud_hosts")
        ),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["cloud_servers.id"],
            name=op.f("fk_cloud_host_slots_server_id_cloud_servers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("host_id", "slot", name=op.f("pk_cloud_host_slots")),
    )
    _index("cloud_host_slots", "server_id")
    op.create_table(
        "cloud_volumes",
        sa.Column("id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=False),
        sa.Column("name", ID, nullable=False),
        sa.Column("size_gib", sa.Integer(), nullable=False),
        sa.Column("volume_type", NAME, nullable=False),
        sa.Column("boot", sa.Boolean(), nullable=False),
        sa.Column("status", NAME, nullable=False),
        sa.Column("image", LABEL, nullable=True),
        sa.Column("cluster_id", ID, nullable=True),
        sa.Column("server_id", ID, nullable=True),
        sa.Column("delete_with_cluster", sa.Boolean(), nullable=False),
        sa.Column("active_task_id", ID, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["cloud_projects.id"],
            name=op.f("fk_cloud_volumes_project_id_cloud_projects"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_volumes")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_cloud_volumes_project_id_name")),
    )
    _index("cloud_volumes", "cluster_id")
    _index("cloud_volumes", "project_id")
    op.create_table(
        "cloud_tasks",
        sa.Column("id", ID, nullable=False),
        sa.Column("project_id", ID, nullable=False),
        sa.Column("operation", NAME, nullable=False),
        sa.Column("resource_type", NAME, nullable=False),
        sa.Column("resource_id", ID, nullable=False),
        sa.Column("resource_name", ID, nullable=False),
        sa.Column("state", NAME, nullable=False),
        sa.Column("detailed_state", NAME, nullable=True),
        sa.Column("phases", sa.JSON(), nullable=False, comment="[[phase, ISO time], ...]"),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("finished_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_tasks")),
    )
    for column in ("project_id", "resource_id", "state"):
        _index("cloud_tasks", column)
    op.create_table(
        "cloud_metering",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("time", TIME, nullable=False),
        sa.Column("project_id", ID, nullable=False),
        sa.Column("resource_type", NAME, nullable=False),
        sa.Column("resource_id", ID, nullable=False),
        sa.Column("resource_name", ID, nullable=False),
        sa.Column("item", LABEL, nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column(
            "unit_price_per_hour", sa.String(length=32), nullable=False, comment="decimal text"
        ),
        sa.Column("billable", sa.Boolean(), nullable=False),
        sa.Column("state", NAME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cloud_metering")),
    )
    op.create_index(
        "ix_cloud_metering_project_id_time", "cloud_metering", ["project_id", "time"], unique=False
    )


def downgrade() -> None:
    for table in (
        "cloud_metering",
        "cloud_tasks",
        "cloud_volumes",
        "cloud_host_slots",
        "cloud_servers",
        "cloud_hosts",
        "cloud_clusters",
        "cloud_tokens",
        "cloud_projects",
    ):
        op.drop_table(table)
