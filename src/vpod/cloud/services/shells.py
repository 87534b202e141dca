"""Shells on a cluster's servers: the compute driver's access for `vpod cluster ssh`, and a
session for the cloud API's shell relay (``api/shell_relay.py``).

A project reaches only its own clusters' servers; a suspended cluster's
servers have no shell until resumed.
"""

from __future__ import annotations

from ..drivers import DriverError, ShellAccess, ShellRequest, ShellSession
from ..model import errors
from ..states import ClusterStatus
from .cluster_views import ClusterViews
from .context import CloudContext
from .projects import Principal


class Shells:
    def __init__(self, ctx: CloudContext, views: ClusterViews) -> None:
        self._ctx = ctx
        self._views = views

    async def shell(self, principal: Principal, ref: str, position: int = 1) -> ShellAccess:
        server_id = await self._shell_server(principal, ref, position)
        try:
            return await self._ctx.compute.shell(server_id)
        except DriverError as exc:
            raise errors.FailedPrecondition(str(exc)) from None

    async def open_shell(
        self, principal: Principal, ref: str, position: int, request: ShellRequest
    ) -> ShellSession:
        """Start a shell (or a command) on the server, for the relay; the caller ends it."""
        server_id = await self._shell_server(principal, ref, position)
        try:
            return await self._ctx.compute.open_shell(server_id, request)
        except DriverError as exc:
            raise errors.FailedPrecondition(str(exc)) from None

    async def _shell_server(self, principal: Principal, ref: str, position: int) -> str:
        view = await self._views.get(principal, ref)
        server = next((s for s in view.servers if s.position == position), None)
        if server is None:
            raise errors.NotFound(
                f"cluster {view.cluster.name} has no server {position}: it has {len(view.servers)}"
            )
        if view.cluster.status == ClusterStatus.SUSPENDED:
            raise errors.FailedPrecondition(
                f"cluster {view.cluster.name} is SUSPENDED: resume it first (`vpod cluster resume`)"
            )
        return server.id
