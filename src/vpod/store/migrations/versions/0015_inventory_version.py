"""An inventory version: one counter the database bumps whenever the inventory changes.

Every controller keeps a view of the agents, clusters and allocations and
checked it against the store every second by reading all of them again (1,024
agents on a pod4096). Triggers now bump ``inventory_version.version`` in the
same transaction as any change to what that view holds, so a controller reads
one row a second and reloads only when it moved. Triggers rather than the
writers: no writer, present or future, can forget to bump it. An agent's health
columns (written every few seconds) are not part of the view and do not bump it.

Revision ID: 0015_inventory_version
Revises: 0014_ssh_direct_ports
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015_inventory_version"
down_revision: str | None = "0014_ssh_direct_ports"
branch_labels: str | None = None
depends_on: str | None = None

WATCHED: dict[str, tuple[str, ...]] = {
    "agents": ("host", "port", "machine_type", "serial"),
    "agent_keys": (),
    "clusters": (),
    "cluster_agents": (),
    "allocations": (),
    "allocation_machines": (),
}
"""Tables the inventory view is read from, and (where not every column is part of it) the
columns whose update changes it."""

BUMP = (
    "INSERT INTO inventory_version (id, version) VALUES (1, 1)"
    " ON CONFLICT (id) DO UPDATE SET version = inventory_version.version + 1"
)
"""An upsert: a database emptied row by row (a restore, a test) still counts from 1 again."""


def upgrade() -> None:
    op.create_table(
        "inventory_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_inventory_version"),
        sa.CheckConstraint("id = 1", name="ck_inventory_version_one_row"),
    )
    op.execute("INSERT INTO inventory_version (id, version) VALUES (1, 1)")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION vpod_inventory_changed() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$ BEGIN {BUMP}; RETURN NULL; END $$"
        )
        for table, columns in WATCHED.items():
            update = f"UPDATE OF {', '.join(columns)}" if columns else "UPDATE"
            op.execute(
                f"CREATE TRIGGER inventory_changed AFTER INSERT OR DELETE OR {update}"
                f" ON {table} FOR EACH STATEMENT EXECUTE FUNCTION vpod_inventory_changed()"
            )
        return
    for table, columns in WATCHED.items():  # SQLite: a trigger per event, per row
        update = f"UPDATE OF {', '.join(columns)}" if columns else "UPDATE"
        for event, name in (("INSERT", "insert"), ("DELETE", "delete"), (update, "update")):
            op.execute(
                f"CREATE TRIGGER inventory_changed_{table}_{name} AFTER {event} ON {table}"
                f" BEGIN {BUMP}; END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in WATCHED:
            op.execute(f"DROP TRIGGER inventory_changed ON {table}")
        op.execute("DROP FUNCTION vpod_inventory_changed()")
    else:
        for table in WATCHED:
            for name in ("insert", "delete", "update"):
                op.execute(f"DROP TRIGGER inventory_changed_{table}_{name}")
    op.drop_table("inventory_version")
