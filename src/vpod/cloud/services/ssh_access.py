"""How tenants reach their servers' sshd: host keys to pin, and tunnel connections.

Each server runs its own OpenSSH daemon, started per connection inside its
sandbox (see ``drivers/ssh_server.py``); nothing listens on a port of the
host. :meth:`SshAccess.info` lists, per server, the name ``vpod cluster
ssh-config`` gives it, the user to log in as and its public host keys with
their OpenSSH fingerprints; :meth:`SshAccess.connect` starts the sshd of one
server for the cloud API's tunnel (``api/ssh_tunnel.py``). A project reaches
only its own clusters' servers; a suspended cluster's servers have no sshd
until resumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..drivers import DriverError, ShellSession
from ..drivers.sandbox import SERVER_USER
from ..model import errors
from ..model.records import Server
from ..ssh_keys import HostKey
from ..states import ClusterStatus
from .cluster_views import ClusterViews
from .context import CloudContext
from .projects import Principal


@dataclass(frozen=True)
class ServerSsh:
    position: int
    name: str
    status: str
    user: str
    host_keys: tuple[HostKey, ...]
    direct_port: int | None = None
    """Its direct SSH port on the controller's host (None unless the operator set a range)."""


class SshAccess:
    def __init__(self, ctx: CloudContext, views: ClusterViews) -> None:
        self._ctx = ctx
        self._views = views

    async def info(self, principal: Principal, cluster_ref: str) -> list[ServerSsh]:
        view = await self._views.get(principal, cluster_ref)
        return [
            ServerSsh(
                position=s.position,
                name=s.name,
                status=str(s.status),
                user=SERVER_USER,
                host_keys=view.host_keys.get(s.id, ()),
                direct_port=view.ssh_ports.get(s.id),
            )
            for s in sorted(view.servers, key=lambda s: s.position)
        ]

    async def server(self, principal: Principal, cluster_ref: str, server_ref: str) -> Server:
        """The cluster's server ``server_ref`` (its number or its name), ready for a
        connection."""
        view = await self._views.get(principal, cluster_ref)
        server = next(
            (
                s
                for s in view.servers
                if s.name == server_ref or (server_ref.isdigit() and s.position == int(server_ref))
            ),
            None,
        )
        if server is None:
            names = ", ".join(s.name for s in sorted(view.servers, key=lambda s: s.position))
            raise errors.NotFound(
                f"cluster {view.cluster.name} has no server {server_ref[:70]!r}: give its number"
                f" or its name ({names or 'it has none'})"
            )
        if view.cluster.status == ClusterStatus.SUSPENDED:
            raise errors.FailedPrecondition(
                f"cluster {view.cluster.name} is SUSPENDED: resume it first (`vpod cluster resume`)"
            )
        return server

    async def connect(
        self, principal: Principal, cluster_ref: str, server_ref: str
    ) -> ShellSession:
        """Start the server's sshd on a connection of its own; the caller ends it."""
        server = await self.server(principal, cluster_ref, server_ref)
        try:
            return await self._ctx.compute.open_ssh(server.id)
        except DriverError as exc:
            raise errors.FailedPrecondition(str(exc)) from None


__all__ = ["ServerSsh", "SshAccess"]
