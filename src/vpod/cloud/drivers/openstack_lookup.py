"""How the OpenStack drivers find their own resources again: by tag (Nova) and name (Cinder).

A Nova server is tagged ``vpod-SERVER_ID`` and ``vpod-cluster-CLUSTER_ID``; a Cinder volume
is named ``vpod-VOLUME_ID``. A task that runs again after a restart finds what it made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .base import DriverError

if TYPE_CHECKING:
    from openstack.compute.v2.server import Server
    from openstack.connection import Connection

T = TypeVar("T")


def server_tag(server_id: str) -> str:
    return f"vpod-{server_id}"


def cluster_tag(cluster_id: str) -> str:
    return f"vpod-cluster-{cluster_id}"


def volume_name(volume_id: str) -> str:
    return f"vpod-{volume_id}"


def find_server(conn: Connection, server_id: str) -> Server | None:
    return _first(conn.compute.servers(tags=server_tag(server_id)), conn.compute.get_server)


def get_server(conn: Connection, server_id: str) -> Server:
    missing = f"OpenStack has no server {server_id} (tag {server_tag(server_id)})"
    return _required(find_server(conn, server_id), missing)


def find_volume(conn: Connection, volume_id: str) -> Any | None:
    volumes = conn.block_storage
    return _first(volumes.volumes(name=volume_name(volume_id)), volumes.get_volume)


def get_volume(conn: Connection, volume_id: str) -> Any:
    return _required(find_volume(conn, volume_id), f"Cinder has no volume {volume_name(volume_id)}")


def _first(listed: Iterable[Any], get: Callable[[str], T]) -> T | None:
    """The whole resource of the first match of a listing (listings carry less), or None."""
    found = list(listed)
    return get(found[0].id) if found else None


def _required(found: T | None, missing: str) -> T:
    if found is None:
        raise DriverError(missing)
    return found
