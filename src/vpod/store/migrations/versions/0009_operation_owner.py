"""Partitions name the controller running their operation (its owner lease).

``partitions.operation_owner`` holds ``replica/boot`` of the controller that
moved the partition into CREATING, REMOVING or RESETTING, and NULL once it
is idle again. Recovery finishes an operation only when its owner's lease
(``operations:<replica>`` in ``leases``) has expired: a live but slow
controller keeps its operation. Rows older than this revision have NULL and
fall back to the age rule (``operation_deadline_s``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column(
        "partitions",
        sa.Column(
            "operation_owner",
            sa.String(255),
            nullable=True,
            comment="controller running the operation (replica/boot); NULL: idle or before 0007",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("partitions") as batch:
        batch.drop_column("operation_owner")
