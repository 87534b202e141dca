"""Initial schema: agents, clusters, allocations, users, partitions, events, leases.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.String(length=63)
NAME = sa.String(length=32)
LABEL = sa.String(length=64)
TEXT_SHORT = sa.String(length=255)
TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", ID, nullable=False),
        sa.Column("host", TEXT_SHORT, nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("machine_type", NAME, nullable=False),
        sa.Column("serial", sa.String(length=128), nullable=False),
        sa.Column("health", NAME, nullable=False),
        sa.Column("last_heartbeat", TIME, nullable=True),
        sa.Column("health_reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
    )
    op.create_table(
        "clusters",
        sa.Column("id", ID, nullable=False),
        sa.Column("num_domains", sa.Integer(), nullable=False),
        sa.Column("ild_topology", NAME, nullable=False),
        sa.Column("gw_topology", NAME, nullable=False),
        sa.Column("machine_type", NAME, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clusters")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("time", TIME, nullable=False),
        sa.Column("actor", TEXT_SHORT, nullable=False),
        sa.Column("action", LABEL, nullable=False),
        sa.Column("target", TEXT_SHORT, nullable=False),
        sa.Column("outcome", LABEL, nullable=False),
        sa.Column("source", TEXT_SHORT, nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    for column in ("action", "actor", "target", "time"):
        op.create_index(op.f(f"ix_events_{column}"), "events", [column], unique=False)
    op.create_table(
        "leases",
        sa.Column("name", LABEL, nullable=False),
        sa.Column("holder", TEXT_SHORT, nullable=False),
        sa.Column("expires_at", TIME, nullable=False),
        sa.Column(
            "term", sa.BigInteger(), nullable=False, comment="fencing token: +1 per new holder"
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "users",
        sa.Column("id", ID, nullable=False),
        sa.Column("key_hash", TEXT_SHORT, nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    op.create_table(
        "allocations",
        sa.Column("id", ID, nullable=False),
        sa.Column("cluster_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"], ["clusters.id"], name=op.f("fk_allocations_cluster_id_clusters")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_allocations")),
        sa.UniqueConstraint("id", "cluster_id", name=op.f("uq_allocations_id_cluster_id")),
    )
    op.create_index(op.f("ix_allocations_cluster_id"), "allocations", ["cluster_id"], unique=False)
    op.create_table(
        "cluster_agents",
        sa.Column("cluster_id", ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False, comment="machine index: cabling order"),
        sa.Column("agent_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_cluster_agents_agent_id_agents")
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
            name=op.f("fk_cluster_agents_cluster_id_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "position", name=op.f("pk_cluster_agents")),
        sa.UniqueConstraint("agent_id", name=op.f("uq_cluster_agents_agent_id")),
    )
    op.create_table(
        "allocation_machines",
        sa.Column("cluster_id", ID, nullable=False),
        sa.Column("machine", sa.Integer(), nullable=False),
        sa.Column("allocation_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["allocation_id", "cluster_id"],
            ["allocations.id", "allocations.cluster_id"],
            name="fk_allocation_machines_allocation",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id", "machine"],
            ["cluster_agents.cluster_id", "cluster_agents.position"],
            name="fk_allocation_machines_cluster_machine",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "machine", name=op.f("pk_allocation_machines")),
        sa.UniqueConstraint(
            "allocation_id",
            "cluster_id",
            "machine",
            name=op.f("uq_allocation_machines_allocation_id_cluster_id_machine"),
        ),
    )
    op.create_table(
        "partitions",
        sa.Column("id", ID, nullable=False),
        sa.Column("cluster_id", ID, nullable=False),
        sa.Column("allocation_id", ID, nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("num_segments", sa.Integer(), nullable=False),
        sa.Column("num_gcds", sa.Integer(), nullable=False),
        sa.Column("num_replicas", sa.Integer(), nullable=False),
        sa.Column("reconfigurable", sa.Boolean(), nullable=False),
        sa.Column("routing", NAME, nullable=False),
        sa.Column("gw_routing", NAME, nullable=True),
        sa.Column("sync_type", NAME, nullable=False),
        sa.Column(
            "requested_ipus",
            sa.JSON(),
            nullable=True,
            comment="[[domain, position], ...] if given",
        ),
        sa.Column("ready_state", NAME, nullable=False),
        sa.Column("operation_state", NAME, nullable=False),
        sa.Column("errors", sa.JSON(), nullable=False),
        sa.Column("disable_auto_reset", sa.Boolean(), nullable=False),
        sa.Column("relocatable", sa.Boolean(), nullable=False),
        sa.Column("max_auto_reset_retries", sa.Integer(), nullable=False),
        sa.Column("auto_reset_retry_count", sa.Integer(), nullable=False),
        sa.Column("last_auto_reset_time", TIME, nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("updated_at", TIME, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False, comment="bumped by every update"),
        sa.ForeignKeyConstraint(
            ["allocation_id", "cluster_id"],
            ["allocations.id", "allocations.cluster_id"],
            name="fk_partitions_allocation",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partitions")),
        sa.UniqueConstraint(
            "id",
            "allocation_id",
            "cluster_id",
            name=op.f("uq_partitions_id_allocation_id_cluster_id"),
        ),
    )
    op.create_index(
        op.f("ix_partitions_allocation_id"), "partitions", ["allocation_id"], unique=False
    )
    op.create_index(op.f("ix_partitions_cluster_id"), "partitions", ["cluster_id"], unique=False)
    op.create_table(
        "user_allocations",
        sa.Column("user_id", ID, nullable=False),
        sa.Column("allocation_id", ID, nullable=False),
        sa.ForeignKeyConstraint(
            ["allocation_id"],
            ["allocations.id"],
            name=op.f("fk_user_allocations_allocation_id_allocations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_allocations_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "allocation_id", name=op.f("pk_user_allocations")),
    )
    op.create_index(
        op.f("ix_user_allocations_allocation_id"),
        "user_allocations",
        ["allocation_id"],
        unique=False,
    )
    op.create_table(
        "partition_ipus",
        sa.Column("cluster_id", ID, nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("partition_id", ID, nullable=False),
        sa.Column("allocation_id", ID, nullable=False),
        sa.Column("machine", sa.Integer(), nullable=False),
        sa.Column("routing_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("gcd", sa.Integer(), nullable=False),
        sa.CheckConstraint(
            "slot >= machine * 4 AND slot < (machine + 1) * 4 AND machine >= 0",
            name=op.f("ck_partition_ipus_slot_on_machine"),
        ),
        sa.ForeignKeyConstraint(
            ["allocation_id", "cluster_id", "machine"],
            [
                "allocation_machines.allocation_id",
                "allocation_machines.cluster_id",
                "allocation_machines.machine",
            ],
            name="fk_partition_ipus_allocation_machine",
        ),
        sa.ForeignKeyConstraint(
            ["partition_id", "allocation_id", "cluster_id"],
            ["partitions.id", "partitions.allocation_id", "partitions.cluster_id"],
            name="fk_partition_ipus_partition",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("cluster_id", "slot", name=op.f("pk_partition_ipus")),
        sa.UniqueConstraint(
            "partition_id", "routing_id", name=op.f("uq_partition_ipus_partition_id_routing_id")
        ),
    )
    op.create_index(
        "ix_partition_ipus_allocation_machine",
        "partition_ipus",
        ["allocation_id", "cluster_id", "machine"],
        unique=False,
    )


def downgrade() -> None:
    for table in (
        "partition_ipus",
        "user_allocations",
        "partitions",
        "allocation_machines",
        "cluster_agents",
        "allocations",
        "users",
        "leases",
        "events",
        "clusters",
        "agents",
    ):
        op.drop_table(table)
