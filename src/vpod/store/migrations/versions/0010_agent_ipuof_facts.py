"""Agents keep the IPUoF details they reported, so a dead agent's partitions can be read.

``agents.ipuof_facts`` holds what the agent answered to ``GetIdentity`` (its
IPUoF address, software versions, each IPU's ports and ids) as JSON, written
the first time the controller reads them after a boot (at the latest when a
partition is configured on the agent). A partition's IPUoF configuration is
served from it when the agent cannot be reached. NULL: not read yet.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column(
        "agents",
        sa.Column(
            "ipuof_facts",
            sa.JSON(),
            nullable=True,
            comment="the IPUoF details the agent reported (addresses, ports, ids); NULL: not yet",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("ipuof_facts")
