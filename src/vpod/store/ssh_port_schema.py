"""The table of direct SSH ports (migration ``0014_ssh_direct_ports``).

``cloud_ssh_ports``: which host port of the operator's ``ssh_direct_ports``
range forwards to which server's sshd. The port is the primary key, so the
database refuses one port to two servers; a server holds at most one
(unique ``server_id``); the row goes with its server (``ON DELETE
CASCADE``), which frees the port when the server is deleted.
"""

from __future__ import annotations

from sqlalchemy import Column, Integer, Table

from .columns import UtcDateTime, metadata, reference

cloud_ssh_ports = Table(
    "cloud_ssh_ports",
    metadata,
    Column("port", Integer, primary_key=True, autoincrement=False),
    reference("server_id", "cloud_servers.id", cascade=True, unique=True),
    Column("assigned_at", UtcDateTime, nullable=False),
)
