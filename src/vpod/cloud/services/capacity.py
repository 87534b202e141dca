"""Live capacity: how many more clusters of a flavor fit now, and refusing what does not.

vPODs need a V-IPU allocation of their size (placement tried on each
cloud V-IPU cluster's current snapshot, one allocation after another) and,
when dedicated, whole bare-metal Poplar hosts; GPU clusters need host slots
(see :mod:`..host_placement`). Virtual Poplar servers need no registered
host: the local compute driver has no limit. These are answers for now: the
task that creates the cluster reserves for real and may still find the room
gone, and then ends in ERROR with the reason.
"""

from __future__ import annotations

import asyncio

from vpod.placement import Rejected

from ..flavors import CATALOG, Flavor
from ..host_placement import HostView, capacity, place_servers
from ..model import errors
from .context import CloudContext
from .gpu_hosts import host_views
from .reservations import Reservations

MAX_COUNTED = 64
"""Capacity is counted up to this many clusters per flavor."""


class Capacity:
    def __init__(self, ctx: CloudContext, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations

    async def _hosts(self) -> list[HostView]:
        return await host_views(self._ctx)

    async def of(self, flavor: Flavor, hosts: list[HostView] | None = None) -> int:
        """Clusters of ``flavor`` (one server each for GPU flavors) that fit now."""
        if hosts is None and flavor.host_role is not None:
            hosts = await self._hosts()
        if flavor.is_vpod:
            fits = await self._ctx.vipu.capacity(flavor.ipus, limit=MAX_COUNTED)
            if flavor.host_role is not None:
                assert hosts is not None
                fits = min(fits, capacity(hosts, flavor) // max(flavor.poplar_count, 1))
            return fits
        assert hosts is not None
        return min(capacity(hosts, flavor), MAX_COUNTED)

    async def catalog(self, project_id: str | None = None) -> list[tuple[Flavor, int]]:
        """Every flavor with what fits now; for a project, reservations applied: its own
        unused reserved units plus on-demand capacity that nobody has reserved."""
        hosts = await self._hosts()
        fits = [(flavor, await self.of(flavor, hosts)) for flavor in CATALOG]
        if project_id is None:
            return fits
        views = await self._reservations.pools()
        return [
            (flavor, await self._reservations.capacity_for(project_id, flavor, n, views))
            for flavor, n in fits
        ]

    def admission(self) -> asyncio.Lock:
        """Hold from :meth:`require` until what it admitted is recorded (see
        :meth:`.Reservations.admission`)."""
        return self._reservations.admission()

    async def require(
        self,
        flavor: Flavor,
        count: int,
        *,
        fabric: str | None = None,
        project_id: str | None = None,
        resuming: bool = False,
    ) -> None:
        """NoCapacity with the reason unless ``count`` servers of ``flavor`` fit now (for
        ``project_id``: within its reservations and capacity others have not reserved).
        ``resuming``: a suspended vPOD coming back needs a V-IPU allocation again, not hosts
        (its servers kept theirs)."""
        if project_id is not None:
            await self._reservations.require(
                project_id, flavor, 1 if flavor.is_vpod else count, resuming=resuming
            )
        if flavor.is_vpod:
            if await self._ctx.vipu.capacity(flavor.ipus, limit=1) == 0:
                raise errors.NoCapacity(
                    f"no capacity for {flavor.name} now: no V-IPU cluster of the cloud has"
                    f" {flavor.ipus} free IPUs in one allocation; try a smaller flavor or later"
                )
            if flavor.host_role is None or resuming:
                return
            count = flavor.poplar_count
        hosts = await self._hosts()
        placed = place_servers(hosts, flavor, count, fabric=fabric)
        if isinstance(placed, Rejected):
            raise errors.NoCapacity(f"no capacity for {flavor.name} now: {placed}")
