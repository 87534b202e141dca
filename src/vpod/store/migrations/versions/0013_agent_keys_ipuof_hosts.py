"""Agent keys (the secret the controller presents on every call to an agent) and the
hosts each allocation admits over IPUoF; see ``vpod/store/schema.py``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "agent_keys",
        sa.Column(
            "agent_id",
            sa.String(63),
            nullable=False,
            comment="no foreign key: a removed agent added again keeps answering to its key",
        ),
        sa.Column(
            "host", sa.String(255), nullable=False, comment="where the agent registered from"
        ),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column(
            "agent_key", sa.String(255), nullable=False, comment="presented on every call to it"
        ),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", name="pk_agent_keys"),
    )
    op.add_column(
        "allocations",
        sa.Column(
            "hosts",
            sa.JSON(),
            nullable=True,
            comment="CIDRs that may attach over IPUoF; NULL or []: the trusted host network",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("allocations") as batch:
        batch.drop_column("hosts")
    op.drop_table("agent_keys")
