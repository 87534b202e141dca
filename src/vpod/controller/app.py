"""The composition root: one :class:`Controller` holding every use-case.

Transports receive a Controller and call its services; nothing here listens
on a port (see :mod:`.server`).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from vpod.domain.entities import Cluster
from vpod.placement import Snapshot
from vpod.store.store import Store

from .agent_gateway import AgentGateway
from .auth import Authenticator
from .change_feed import ChangeFeed
from .clock import Clock, SystemClock
from .context import Context
from .db import Db
from .fleet import Fleet
from .inventory import Inventory
from .occupancy import OccupancyCache
from .partition_repair import PartitionRepair
from .partition_views import AgentFactsCache, PartitionViews
from .partitions import PartitionService
from .pod_map import PodMapService
from .settings import Settings
from .teardown import Teardown
from .tenancy import Tenancy


@dataclass
class Controller:
    settings: Settings
    ctx: Context
    inventory: Inventory
    partitions: PartitionService
    views: PartitionViews
    facts: AgentFactsCache
    auth: Authenticator
    fleet: Fleet
    repair: PartitionRepair
    teardown: Teardown
    pod_map: PodMapService
    changes: ChangeFeed
    tenancy: Tenancy

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def store(self) -> Store:
        """The database, for a server extension's own tables (``CloudStore.of``): the V-IPU
        facts in it are reached through the use-cases above, never through this."""
        return self.ctx.db.store

    def close(self) -> None:
        self.ctx.db.close()
        self.ctx.db.store.close()


def build_controller(
    settings: Settings,
    gateway: AgentGateway,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
) -> Controller:
    """Open the store (migrating it), and wire the use-cases together."""
    if store is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store.open(settings.store_url())
        store.migrate()
    if not settings.replica_id:
        settings = _with_replica_id(settings)
    # SQLite: calls run on the event loop (see Db). PostgreSQL: a small pool of threads.
    db = Db(store, workers=8)

    fleets: list[Fleet] = []  # set below; the loader needs the fleet's fault view

    async def load(cluster: Cluster) -> Snapshot:
        occupancy = await db(store.occupancy, cluster.id)
        faulty = fleets[0].faulty_slots(cluster) if fleets else frozenset()
        return occupancy.snapshot(unavailable_slots=faulty)

    ctx = Context(
        settings=settings,
        clock=clock or SystemClock(),
        db=db,
        gateway=gateway,
        occupancy=OccupancyCache(load),
    )
    inventory = Inventory(ctx)
    ctx.inventory = inventory
    facts = AgentFactsCache(ctx)
    fleet = Fleet(ctx, facts)
    fleets.append(fleet)
    partitions = PartitionService(ctx)
    auth = Authenticator(ctx)
    return Controller(
        settings=settings,
        ctx=ctx,
        inventory=inventory,
        partitions=partitions,
        views=PartitionViews(ctx, facts),
        facts=facts,
        auth=auth,
        fleet=fleet,
        repair=PartitionRepair(ctx, partitions, fleet.steadily_answering),
        teardown=Teardown(inventory, partitions),
        pod_map=PodMapService(ctx, partitions, fleet),
        changes=ChangeFeed(ctx, fleet),
        tenancy=Tenancy(ctx, inventory, partitions, auth),
    )


def _with_replica_id(settings: Settings) -> Settings:
    from dataclasses import replace

    return replace(settings, replica_id=f"{socket.gethostname()}:{os.getpid()}")
