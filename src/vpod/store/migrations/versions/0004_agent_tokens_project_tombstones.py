"""Agent registration tokens and the agent each binds; deleted projects keep their id.

``agent_tokens`` holds the registration tokens an administrator issues (only
a hash of the secret); ``agent_bindings`` ties an agent id to the token it
first registered with, so another token cannot take it over. A deleted
cloud project keeps its row with ``deleted_at`` set: its id is never handed
to a new project, whose tasks, invoices and metering would otherwise be
the old one's.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "agent_tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("key_hash", sa.String(255), nullable=False, comment="scrypt of the secret part"),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "agent_bindings",
        sa.Column(
            "agent_id",
            sa.String(63),
            sa.ForeignKey("agents.id", ondelete="CASCADE"),
            primary_key=True,
            comment="an agent id answers to the one token it first registered with",
        ),
        sa.Column(
            "token_id",
            sa.String(32),
            sa.ForeignKey("agent_tokens.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("bound_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.add_column(
        "cloud_projects",
        sa.Column(
            "deleted_at",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="set when deleted: the id stays taken, so it never names another tenant",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("cloud_projects") as batch:
        batch.drop_column("deleted_at")
    op.drop_table("agent_bindings")
    op.drop_table("agent_tokens")
