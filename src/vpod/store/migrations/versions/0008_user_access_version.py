"""Users carry an access version: every change to what a user may do bumps it.

``users.access_version`` is bumped in the same transaction as a new key, a
change of the admin flag, a grant or revoke, and the removal of an allocation
granted to the user. Every controller replica reads it with the key hash at
each call (one primary-key read), so a verification it remembers stops
applying the moment another replica changes the user. Existing users start
at 0.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # NOT NULL with a server default: a plain ADD COLUMN on both databases, no rebuild.
    op.add_column(
        "users",
        sa.Column(
            "access_version",
            sa.Integer(),
            nullable=False,
            server_default="0",
            comment="bumped by every change to what the user may do (key, admin, grants)",
        ),
    )


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("access_version")
