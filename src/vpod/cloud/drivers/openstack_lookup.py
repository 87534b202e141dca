"""How the OpenStack drivers find their own resources again: by tag (Nova) and name (Cinder).

A Nova server is tagged ``vpod-SERVER_ID`` and ``vpod-cluster-CLUSTER_ID``; a Cinder volume
is named ``vpod-VOLUME_ID``. A task that runs again after a restart finds what it made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import DriverError

if TYPE_CHECKING:
    from openstack.compute.v2.server import Server
    from openstack.connection import Connection


def server_tag(server_id: str) -> str:
    return f"vpod-{server_id}"


def cluster_tag(cluster_id: str) -> str:
    return f"vpod-cluster-{cluster_id}"


def volume_name(volume_id: str) -> str:
    return f"vpod-{volume_id}"


def find_server(conn: Connection, server_id: str) -> Server | None:
    found = list(conn.compute.servers(tags=server_tag(server_id)))
    return conn.compute.get_server(found[0].id) if found else None


def get_server(conn: Connection, server_id: str) -> Server:
    server = find_server(conn, server_id)
    if server is None:
        raise DriverError(f"OpenStack has no server {server_id} (tag {server_tag(server_id)})")
    return server


def find_volume(conn: Connection, volume_id: str) -> Any | None:
    found = list(conn.block_storage.volumes(name=volume_name(volume_id)))
    return conn.block_storage.get_volume(found[0].id) if found else None


def get_volume(conn: Connection, volume_id: str) -> Any:
    volume = find_volume(conn, volume_id)
    if volume is None:
        raise DriverError(f"Cinder has no volume {volume_name(volume_id)}")
    return volume
