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

from sqlalchemy import Column, ForeignKeyConstraint, Integer, PrimaryKeyConstraint, String, Table

from .columns import LABEL, NAME, UtcDateTime, id_key, metadata, optional, reference, required

PRICE = String(32)

cloud_reservations = Table(
    "cloud_reservations",
    metadata,
    id_key(),
    reference("project_id", "cloud_projects.id", index=True),
    *required(flavor=LABEL, pool=LABEL),
    Column("units", Integer, nullable=False, comment="clusters (or GPU servers) reserved"),
    Column("per_unit", Integer, nullable=False, comment="pool units each takes"),
    Column("term", NAME, nullable=False),
    Column("price_per_unit_month", PRICE, nullable=False, comment="decimal text"),
    *required(starts_at=UtcDateTime, ends_at=UtcDateTime),
    *optional(cancelled_at=UtcDateTime, billed_until=UtcDateTime),
)


cloud_pool_units = Table(
    "cloud_pool_units",
    metadata,
    *required(pool=LABEL, unit=Integer),
    PrimaryKeyConstraint("pool", "unit"),
)

cloud_reserved_units = Table(
    "cloud_reserved_units",
    metadata,
    *required(pool=LABEL, unit=Integer),
    reference("reservation_id", "cloud_reservations.id", cascade=True, index=True),
    PrimaryKeyConstraint("pool", "unit"),
    ForeignKeyConstraint(
        ["pool", "unit"],
        ["cloud_pool_units.pool", "cloud_pool_units.unit"],
        name="fk_cloud_reserved_units_pool_unit",
    ),
)
