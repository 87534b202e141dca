"""The tables of reservation plans (migration ``0005_reservations``).

What the database enforces, so that the hardware cannot be overbooked
whatever the code above it does:

- ``cloud_pool_units`` has one row per unit of hardware a pool sells (an
  IPU-Machine of the cloud's V-IPU clusters, a bare-metal GPU server of one
  model), numbered ``0 .. N-1``; the cloud writes ``N`` from the live
  hardware before each purchase, and a unit a reservation holds is never
  deleted (foreign key without cascade);
- ``cloud_reserved_units`` ties a unit to the one reservation holding it:
  primary key ``(pool, unit)`` (a unit is held at most once) and a foreign key
  to ``cloud_pool_units`` (only units that exist can be held). So the units
  reserved in a pool never exceed the units it has: two purchases racing for
  the last units cannot both get them, one transaction fails.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
)

from .columns import ID, LABEL, NAME, UtcDateTime, metadata

PRICE = String(32)

cloud_reservations = Table(
    "cloud_reservations",
    metadata,
    Column("id", ID, primary_key=True),
    Column("project_id", ID, ForeignKey("cloud_projects.id"), nullable=False, index=True),
    Column("flavor", LABEL, nullable=False),
    Column("pool", LABEL, nullable=False),
    Column("units", Integer, nullable=False, comment="clusters (or GPU servers) reserved"),
    Column("per_unit", Integer, nullable=False, comment="pool units each takes"),
    Column("term", NAME, nullable=False),
    Column("price_per_unit_month", PRICE, nullable=False, comment="decimal text"),
    Column("starts_at", UtcDateTime, nullable=False),
    Column("ends_at", UtcDateTime, nullable=False),
    Column("cancelled_at", UtcDateTime, nullable=True),
    Column("billed_until", UtcDateTime, nullable=True),
)

cloud_pool_units = Table(
    "cloud_pool_units",
    metadata,
    Column("pool", LABEL, nullable=False),
    Column("unit", Integer, nullable=False),
    PrimaryKeyConstraint("pool", "unit"),
)

cloud_reserved_units = Table(
    "cloud_reserved_units",
    metadata,
    Column("pool", LABEL, nullable=False),
    Column("unit", Integer, nullable=False),
    Column(
        "reservation_id",
        ID,
        ForeignKey("cloud_reservations.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    PrimaryKeyConstraint("pool", "unit"),
    ForeignKeyConstraint(
        ["pool", "unit"],
        ["cloud_pool_units.pool", "cloud_pool_units.unit"],
        name="fk_cloud_reserved_units_pool_unit",
    ),
)
