"""The inventory version: one number that moves whenever the inventory changes.

Database triggers (migration ``0015_inventory_version``) bump it in the same
transaction as any insert, delete or update of agents (not their health
columns, written every few seconds), agent keys, clusters, cluster machines,
allocations and allocation machines. A controller that holds a view of the
inventory reads this one row to learn whether its view is still current,
instead of reading every agent again; no writer can forget to bump it.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from .schema import inventory_version


def read(conn: Connection) -> int:
    version = conn.scalar(select(inventory_version.c.version).where(inventory_version.c.id == 1))
    return int(version or 0)
