"""Reservation plans: reservations, the hardware units of each pool, the units held.

``cloud_reserved_units`` (primary key ``(pool, unit)``, foreign key to
``cloud_pool_units``) makes overbooking a pool impossible in the database
itself; see ``vpod/store/reservation_schema.py``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "cloud_reservations",
        sa.Column("id", sa.String(63), primary_key=True),
        sa.Column(
            "project_id",
            sa.String(63),
            sa.ForeignKey(
                "cloud_projects.id", name="fk_cloud_reservations_project_id_cloud_projects"
            ),
            nullable=False,
        ),
        sa.Column("flavor", sa.String(64), nullable=False),
        sa.Column("pool", sa.String(64), nullable=False),
        sa.Column(
            "units", sa.Integer(), nullable=False, comment="clusters (or GPU servers) reserved"
        ),
        sa.Column("per_unit", sa.Integer(), nullable=False, comment="pool units each takes"),
        sa.Column("term", sa.String(32), nullable=False),
        sa.Column("price_per_unit_month", sa.String(32), nullable=False, comment="decimal text"),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("billed_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_cloud_reservations"),
    )
    op.create_index("ix_cloud_reservations_project_id", "cloud_reservations", ["project_id"])
    op.create_table(
        "cloud_pool_units",
        sa.Column("pool", sa.String(64), nullable=False),
        sa.Column("unit", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("pool", "unit", name="pk_cloud_pool_units"),
    )
    op.create_table(
        "cloud_reserved_units",
        sa.Column("pool", sa.String(64), nullable=False),
        sa.Column("unit", sa.Integer(), nullable=False),
        sa.Column(
            "reservation_id",
            sa.String(63),
            sa.ForeignKey(
                "cloud_reservations.id",
                ondelete="CASCADE",
                name="fk_cloud_reserved_units_reservation_id_cloud_reservations",
            ),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("pool", "unit", name="pk_cloud_reserved_units"),
        sa.ForeignKeyConstraint(
            ["pool", "unit"],
            ["cloud_pool_units.pool", "cloud_pool_units.unit"],
            name="fk_cloud_reserved_units_pool_unit",
        ),
    )
    op.create_index(
        "ix_cloud_reserved_units_reservation_id", "cloud_reserved_units", ["reservation_id"]
    )


def downgrade() -> None:
    op.drop_table("cloud_reserved_units")
    op.drop_table("cloud_pool_units")
    op.drop_table("cloud_reservations")
