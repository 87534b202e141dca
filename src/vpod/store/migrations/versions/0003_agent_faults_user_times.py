"""Agents keep the IPU faults they last reported; users keep when they were created.

``agents.device_faults`` lets every controller replica, not only the leader
that reads the heartbeats, keep faulty IPUs out of placement. Existing agents
start with NULL, read as no faults (the leader writes them at its next
heartbeat round).
``users.created_at`` stays NULL for users created before this revision: their
time is not known.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Nullable columns: a plain ADD COLUMN on both databases, no table rebuild. (A JSON
    # server default would do for agents, but Alembic cannot compare json values on
    # PostgreSQL, so NULL stands for "no faults" in rows older than this revision.)
    op.add_column(
        "agents",
        sa.Column(
            "device_faults",
            sa.JSON(),
            nullable=True,
            comment="[[device_id, reason], ...] last reported; NULL (older rows): none",
        ),
    )
    op.add_column(
        "users",
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="NULL for users older than 0003",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("created_at")
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("device_faults")
