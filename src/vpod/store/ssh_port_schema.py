"""The table of direct SSH ports (migration ``0014_ssh_direct_ports``).

``cloud_ssh_ports``: which host port of the operator's ``ssh_direct_ports``
range forwards to which server's sshd. The port is the primary key, so the
database refuses one port to two servers; a server holds at most one
(unique ``server_id``); the row goes with its server (``ON DELETE
CASCADE``), which frees the port when the server is deleted.
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Integer, Table

from .columns import ID, UtcDateTime, metadata

cloud_ssh_ports = Table(
    "cloud_ssh_ports",
    metadata,
    Column("port", Integer, primary_key=True, autoincrement=False),
    Column(
        "server_id",
        ID,
        ForeignKey("cloud_servers.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("assigned_at", UtcDateTime, nullable=False),
)
