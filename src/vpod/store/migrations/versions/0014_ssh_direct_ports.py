"""Direct SSH ports: the host port of the operator's range each server's sshd is forwarded
from; see ``vpod/store/ssh_port_schema.py``.

Revision ID: 0014_ssh_direct_ports
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0014_ssh_direct_ports"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "cloud_ssh_ports",
        sa.Column("port", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("server_id", sa.String(63), nullable=False),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["server_id"],
            ["cloud_servers.id"],
            ondelete="CASCADE",
            name="fk_cloud_ssh_ports_server_id_cloud_servers",
        ),
        sa.PrimaryKeyConstraint("port", name="pk_cloud_ssh_ports"),
        sa.UniqueConstraint("server_id", name="uq_cloud_ssh_ports_server_id"),
    )


def downgrade() -> None:
    op.drop_table("cloud_ssh_ports")
