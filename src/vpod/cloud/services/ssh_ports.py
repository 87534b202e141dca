"""Direct SSH ports: a host port per server, forwarded to its sshd (an operator option).

With ``ssh_direct_ports`` set, creating a cluster (or growing one) first
checks that the range has a free port for every new server, else it is
refused at once (:class:`NoCapacity`: 409 ``RESOURCE_EXHAUSTED``, no
task); the ports are recorded with the servers right after, and again,
idempotently, when the task builds them (a race with another controller
is caught there). The store keeps them: restarts and suspend/resume keep
a server's port; deleting the server frees it. :meth:`SshPorts.connect`
is what a connection to a port starts: the same per-connection ``sshd -i``
inside the server's sandbox and network the tunnel starts, for the server
holding that port only. The listeners themselves are in ``ssh_direct.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from ..direct_ports import PortRange, exhausted
from ..drivers import DriverError, ShellSession
from ..model import errors
from ..states import ClusterStatus
from .context import CloudContext

log = logging.getLogger("vpod.cloud.ssh")

WILDCARDS = ("0.0.0.0", "::")


async def require_ports(ctx: CloudContext, count: int, what: str) -> None:
    """Refuse (NoCapacity) when the range has fewer than ``count`` free ports."""
    ports = ctx.settings.direct_ports
    if ports is None or count <= 0:
        return
    free = await ctx.records.free_ssh_ports(ports.first, ports.last)
    if free < count:
        raise exhausted(ports, free, count, what)


async def assign_ports(ctx: CloudContext, server_ids: Collection[str], what: str) -> None:
    """Give each server a port of the range (idempotent); NoCapacity when it ran out."""
    ports = ctx.settings.direct_ports
    if ports is None or not server_ids:
        return
    got = await ctx.records.assign_ssh_ports(server_ids, ports.first, ports.last, ctx.clock.now())
    missing = len(set(server_ids)) - len(got)
    if missing > 0:
        free = await ctx.records.free_ssh_ports(ports.first, ports.last)
        raise exhausted(ports, free, missing, what)


class SshPorts:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx
        self.range: PortRange | None = ctx.settings.direct_ports
        """None: the option is off (no ports shown, none listening)."""

    @property
    def bind(self) -> str:
        return self._ctx.settings.ssh_direct_bind

    def host_for(self, api_host: str) -> str:
        """The host name clients dial for the ports: the setting, else the bind address,
        else (binding every address) the host name the client reached the API at."""
        settings = self._ctx.settings
        if settings.ssh_direct_host:
            return settings.ssh_direct_host
        return api_host if settings.ssh_direct_bind in WILDCARDS else settings.ssh_direct_bind

    async def of_servers(self, server_ids: Collection[str]) -> dict[str, int]:
        """Server id -> its direct port; empty when the option is off."""
        if self.range is None or not server_ids:
            return {}
        held = await self._ctx.records.ssh_ports_of(server_ids)
        return {s: p for s, p in held.items() if p in self.range}

    async def listening(self) -> dict[int, str]:
        """Port -> server id, for every port of the range a server holds."""
        if self.range is None:
            return {}
        held = await self._ctx.records.held_ssh_ports()
        return {p: s for p, s in held.items() if p in self.range}

    async def backfill(self) -> None:
        """Give a port to every server holding none in the range (made before the option
        was on, or under another range); those the range cannot serve are logged."""
        ports = self.range
        if ports is None:
            return
        waiting = await self._ctx.records.servers_needing_ssh_ports(*_ends(ports))
        if not waiting:
            return
        got = await self._ctx.records.assign_ssh_ports(
            waiting, *_ends(ports), self._ctx.clock.now()
        )
        if len(got) < len(waiting):
            log.warning(
                "ssh_direct_ports %s is full: %d server(s) have no direct SSH port (widen it)",
                ports,
                len(waiting) - len(got),
            )

    async def connect(self, port: int) -> ShellSession:
        """Start the sshd of the server holding ``port``; the caller ends it."""
        held = await self._ctx.records.ssh_port_holder(port)
        if held is None or self.range is None or port not in self.range:
            raise errors.NotFound(f"no server holds direct SSH port {port}")
        server_id, cluster_id = held
        cluster = await self._ctx.records.get_cluster(cluster_id)
        if cluster.status == ClusterStatus.SUSPENDED:
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} is SUSPENDED: resume it first (`vpod cluster resume`)"
            )
        try:
            return await self._ctx.compute.open_ssh(server_id)
        except DriverError as exc:
            raise errors.FailedPrecondition(str(exc)) from None


def _ends(ports: PortRange) -> tuple[int, int]:
    return ports.first, ports.last


__all__ = ["SshPorts", "assign_ports", "require_ports"]
