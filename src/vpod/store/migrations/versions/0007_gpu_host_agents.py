"""GPU host agents: the agent of a registered host and the GPUs it found, with their
health; see ``vpod/store/gpu_schema.py``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "cloud_gpu_agents",
        sa.Column("host_id", sa.String(63), nullable=False),
        sa.Column(
            "token_id", sa.String(32), nullable=True, comment="the agent token it is bound to"
        ),
        sa.Column("boot_id", sa.String(64), nullable=False),
        sa.Column("hostname", sa.String(255), nullable=False),
        sa.Column("driver_version", sa.String(64), nullable=False),
        sa.Column("cuda_version", sa.String(64), nullable=False),
        sa.Column("backend", sa.String(32), nullable=False, comment="nvml or emulated"),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["host_id"],
            ["cloud_hosts.id"],
            ondelete="CASCADE",
            name="fk_cloud_gpu_agents_host_id_cloud_hosts",
        ),
        sa.PrimaryKeyConstraint("host_id", name="pk_cloud_gpu_agents"),
    )
    op.create_table(
        "cloud_host_gpus",
        sa.Column("host_id", sa.String(63), nullable=False),
        sa.Column(
            "idx", sa.Integer(), nullable=False, comment="the GPU's index: the host slot it is"
        ),
        sa.Column("uuid", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("pci_bus_id", sa.String(64), nullable=False),
        sa.Column(
            "details", sa.JSON(), nullable=False, comment="NVLinks, topology, MIG, device nodes"
        ),
        sa.Column("healthy", sa.Boolean(), nullable=False),
        sa.Column(
            "problems", sa.Text(), nullable=False, comment="why it is unhealthy, '; ' between"
        ),
        sa.Column(
            "changed_at",
            sa.DateTime(timezone=True),
            nullable=False,
            comment="when its health last changed",
        ),
        sa.ForeignKeyConstraint(
            ["host_id"],
            ["cloud_hosts.id"],
            ondelete="CASCADE",
            name="fk_cloud_host_gpus_host_id_cloud_hosts",
        ),
        sa.PrimaryKeyConstraint("host_id", "idx", name="pk_cloud_host_gpus"),
        sa.UniqueConstraint("uuid", name="uq_cloud_host_gpus_uuid"),
    )


def downgrade() -> None:
    op.drop_table("cloud_host_gpus")
    op.drop_table("cloud_gpu_agents")
