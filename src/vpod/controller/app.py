"""The composition root: every use-case built once, its collaborators passed in.

Nothing here listens on a port (see :mod:`.server`); nothing is set on an
object after it is built.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace

from vpod.store.store import Store

from .agent_gateway import AgentGateway
from .agent_health import AgentHealthBook
from .agent_tokens import AgentTokens
from .allocation_hosts import AllocationHosts
from .audit_log import AuditLog
from .auth import Authenticator
from .change_feed import ChangeFeed
from .clock import Clock, SystemClock
from .context import Context
from .db import Db
from .fleet import Fleet
from .heartbeats import HeartbeatMonitor
from .inventory import Inventory
from .leader import LeaderLoop
from .listings import Listings
from .occupancy import OccupancyCache, snapshot_loader
from .operation_owners import OwnerLease, owner_token
from .partition_keys import PartitionKeys
from .partition_repair import PartitionRepair
from .partition_views import AgentFactsCache, PartitionViews
from .partitions import PartitionService
from .pod_map import PodMapService
from .settings import Settings
from .status import ControllerStatus
from .teardown import Teardown
from .telemetry import IpuTelemetryView
from .tenancy import Tenancy


@dataclass
class Controller:
    """Every use-case of one controller, built by :func:`build_controller`.

    Only the process that serves them (:mod:`.server`), the HTTP application
    factory and the layers above that run in the same process get this
    whole; each use-case gets the collaborators it needs in its constructor.
    """

    settings: Settings
    ctx: Context
    inventory: Inventory
    partitions: PartitionService
    views: PartitionViews
    facts: AgentFactsCache
    auth: Authenticator
    health: AgentHealthBook
    fleet: Fleet
    repair: PartitionRepair
    teardown: Teardown
    listings: Listings
    audit_log: AuditLog
    status: ControllerStatus
    leader: LeaderLoop
    pod_map: PodMapService
    changes: ChangeFeed
    tenancy: Tenancy
    agent_tokens: AgentTokens
    partition_keys: PartitionKeys
    allocation_hosts: AllocationHosts

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def store(self) -> Store:
        """The database, for a server extension's own tables (``CloudStore.of``): the V-IPU
        facts in it are reached through the use-cases above, never through this."""
        return self.ctx.db.store

    telemetry: IpuTelemetryView

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
    """Open the store (migrating it), and wire the use-cases together, each once."""
    if store is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = Store.open(settings.store_url())
        store.migrate()
    if not settings.replica_id:
        settings = _with_replica_id(settings)
    # SQLite: calls run on the event loop (see Db). PostgreSQL: a small pool of threads.
    db = Db(store, workers=8)
    health = AgentHealthBook()
    ctx = Context(
        settings=settings,
        clock=clock or SystemClock(),
        db=db,
        gateway=gateway,
        occupancy=OccupancyCache(snapshot_loader(db, health.faulty_slots)),
        owner=owner_token(settings.replica_id),
    )
    inventory = Inventory(ctx)
    facts = AgentFactsCache(ctx)
    fleet = Fleet(ctx, inventory, facts, health)
    partitions = PartitionService(ctx, inventory, facts, fleet.reconcile)
    allocation_hosts = AllocationHosts(ctx, inventory, partitions)
    owners = OwnerLease(ctx)
    repair = PartitionRepair(ctx, inventory, partitions, health.steadily_answering, owners)
    monitor = HeartbeatMonitor(ctx, inventory, health, fleet, repair)
    auth = Authenticator(ctx)
    agent_tokens = AgentTokens(ctx)
    return Controller(
        settings=settings,
        ctx=ctx,
        inventory=inventory,
        partitions=partitions,
        views=PartitionViews(ctx, inventory, facts),
        facts=facts,
        auth=auth,
        health=health,
        fleet=fleet,
        repair=repair,
        teardown=Teardown(inventory, partitions),
        listings=Listings(settings, inventory, partitions, fleet),
        audit_log=AuditLog(ctx),
        status=ControllerStatus(db, inventory, partitions),
        leader=LeaderLoop(ctx, inventory, health, fleet, repair, monitor, owners),
        pod_map=PodMapService(ctx, inventory, partitions, health),
        changes=ChangeFeed(ctx, inventory, health),
        tenancy=Tenancy(ctx, inventory, partitions, auth, agent_tokens, allocation_hosts),
        agent_tokens=agent_tokens,
        partition_keys=PartitionKeys(ctx, partitions),
        allocation_hosts=allocation_hosts,
        telemetry=IpuTelemetryView(health.last_health, inventory.cached_agents_and_clusters),
    )


def _with_replica_id(settings: Settings) -> Settings:
    return replace(settings, replica_id=f"{socket.gethostname()}:{os.getpid()}")
