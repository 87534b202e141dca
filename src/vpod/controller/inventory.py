"""Admin use-cases over the inventory: agents, clusters, allocations and users.

Also the lookups other use-cases share: which allocations a caller may use,
a cluster by id, agents by id. Reads go to the store every time (it is the
authority when several controllers share one database); only placement
snapshots are cached (see :mod:`.occupancy`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from vpod.agent.trust import check_agent_key
from vpod.domain.catalog import MachineType
from vpod.domain.entities import Agent, Allocation, Cluster, User
from vpod.domain.errors import DomainError
from vpod.domain.host_networks import normalise_hosts
from vpod.domain.naming import check_id, natural_key
from vpod.domain.topology import GwTopology, IldTopology
from vpod.placement import AllocationRequest, Rejected, place
from vpod.placement.results import AllocationPlacement
from vpod.store.errors import Conflict
from vpod.store.errors import NotFound as StoreNotFound
from vpod.store.store import Store

from . import errors
from .caller import Caller
from .context import Context
from .credentials import hash_key, new_access_key
from .inventory_cache import InventoryCache


@dataclass(frozen=True)
class NewUser:
    user: User
    access_key: str
    """Shown once; only its hash is stored."""
    created_at: datetime | None = None


def _invalid(exc: DomainError) -> errors.InvalidArgument:
    return errors.InvalidArgument(str(exc))


class Inventory:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._cache = InventoryCache(ctx.clock, ctx.db)

    def invalidate(self) -> None:
        """Forget the cached inventory (after a change this process made)."""
        self._cache.invalidate()

    # ---------------------------------------------------------------- lookups

    @property
    def _store(self) -> Store:
        return self._ctx.db.store

    async def cluster(self, cluster_id: str) -> Cluster:
        view = await self._cache.view()
        if cluster_id not in view.clusters:
            view = await self._cache.view(fresh=True)
        cluster = view.clusters.get(cluster_id)
        if cluster is None:
            raise errors.NotFound(
                f"cluster {cluster_id} does not exist: `vipu-admin list clusters` shows them"
            )
        return cluster

    async def cached_agents_and_clusters(self) -> tuple[list[Agent], list[Cluster]]:
        """Every agent and cluster from the short-lived view (at most a second old): for
        readers that poll, such as telemetry, and must not cost store reads each time."""
        view = await self._cache.view()
        return list(view.agents.values()), list(view.clusters.values())

    async def recent_agents(self) -> list[Agent]:
        """Every agent in id order, from the short-lived view (at most a second old; this
        process's own changes at once): for the background rounds that run every second,
        where a store read of every agent of a pod1024 each time was a large share of the
        controller's CPU under load."""
        return list((await self._cache.view()).sorted_agents)

    async def recent_clusters(self) -> list[Cluster]:
        """Every cluster in id order, from the short-lived view (see :meth:`recent_agents`)."""
        return list((await self._cache.view()).sorted_clusters)

    async def agents(self, agent_ids: Iterable[str]) -> list[Agent]:
        wanted = list(agent_ids)
        view = await self._cache.view()
        if any(a not in view.agents for a in wanted):
            view = await self._cache.view(fresh=True)
        missing = [a for a in wanted if a not in view.agents]
        if missing:
            raise errors.FailedPrecondition(
                f"agent {missing[0]} is not registered any more: re-create it with"
                " `vipu-admin create agent`"
            )
        return [view.agents[a] for a in wanted]

    async def allocation_for(self, caller: Caller, allocation_id: str) -> Allocation:
        """An allocation the caller may use (NOT_FOUND also when it exists but is not theirs)."""
        view = await self._cache.view()
        if allocation_id not in view.allocations:
            view = await self._cache.view(fresh=True)
        found = view.allocations.get(allocation_id)
        if found is None or not caller.may_use(allocation_id):
            raise errors.NotFound(
                f"allocation {allocation_id} does not exist or is not granted to you:"
                " `vipu list allocations` shows yours"
            )
        return found

    async def visible_allocations(self, caller: Caller) -> list[Allocation]:
        view = await self._cache.view()
        return sorted(
            (a for a in view.allocations.values() if caller.may_use(a.id)),
            key=lambda a: natural_key(a.id),
        )

    async def candidate_allocations(
        self, caller: Caller, allocation_id: str | None, cluster_id: str | None
    ) -> list[tuple[Allocation, Cluster]]:
        """Where a partition may go: the named allocation, else every one the caller may use."""
        if allocation_id:
            allocations = [await self.allocation_for(caller, allocation_id)]
        else:
            allocations = await self.visible_allocations(caller)
        if cluster_id:
            allocations = [a for a in allocations if a.cluster_id == cluster_id]
        if not allocations:
            where = f" in cluster {cluster_id}" if cluster_id else ""
            raise errors.NotFound(
                f"you have no allocation{where} to create partitions in: ask an administrator"
                " for one (`vipu-admin create allocation`)"
            )
        clusters = (await self._cache.view()).clusters
        return [(a, clusters[a.cluster_id]) for a in allocations if a.cluster_id in clusters]

    # ----------------------------------------------------------------- agents

    async def create_agent(
        self,
        caller: Caller,
        agent_id: str,
        host: str,
        port: int,
        *,
        machine_type: MachineType = MachineType.BOW2000,
        serial: str = "",
        key: str = "",
    ) -> Agent:
        """Add an agent by address. ``key`` is the one it answers to (``vipu-agent
        --key-file``); empty: the key it last registered with, if any (it outlives a removal),
        else none, and every call to it is refused until it registers."""
        try:
            agent = Agent(
                id=agent_id, host=host, port=port, machine_type=machine_type, serial=serial
            )
            if key:
                check_agent_key(key, source="the agent key")
        except DomainError as exc:
            raise _invalid(exc) from None
        except ValueError as exc:
            raise errors.InvalidArgument(str(exc)) from None
        await self._ctx.db(self._store.add_agent, agent)
        if key:
            await self._set_key(agent, key)
        self.invalidate()
        await self._ctx.audit(caller, "create_agent", agent_id, "ok", agent.address)
        return agent

    async def register_agent(self, agent: Agent) -> tuple[bool, str]:
        """An agent announced itself: add it, or update where it is and the key it answers
        to (an empty key keeps the stored one). Returns (known, message)."""
        existing = await self._ctx.db(self._store.find_agent, agent.id)
        if existing is None:
            await self._ctx.db(self._store.add_agent, agent)
            if agent.key:
                await self._set_key(agent, agent.key)
            self.invalidate()
            return False, f"agent {agent.id} registered at {agent.address}"
        if (existing.host, existing.port, existing.serial) != (
            agent.host,
            agent.port,
            agent.serial,
        ):
            await self._ctx.db(self._store.update_agent, agent)
            self.invalidate()
        if agent.key and agent.key != existing.key:
            await self._set_key(agent, agent.key)
            self.invalidate()
        return True, f"agent {agent.id} known; address {agent.address}"

    async def _set_key(self, agent: Agent, key: str) -> None:
        at = self._ctx.clock.now()
        await self._ctx.db(self._store.set_agent_key, agent.id, agent.host, agent.port, key, at=at)

    async def key_at(self, host: str, port: int) -> str:
        """The key of the agent that last registered from ``host:port`` ("" if none)."""
        return await self._ctx.db(self._store.agent_key_at, host, port) or ""

    async def list_agents(self) -> list[Agent]:
        return sorted(await self._ctx.db(self._store.list_agents), key=lambda a: natural_key(a.id))

    async def remove_agent(self, caller: Caller, agent_id: str) -> None:
        try:
            await self._ctx.db(self._store.remove_agent, agent_id)
        except Conflict as exc:
            raise errors.FailedPrecondition(str(exc)) from None
        self.invalidate()
        await self._ctx.audit(caller, "remove_agent", agent_id, "ok")

    # --------------------------------------------------------------- clusters

    async def create_cluster(
        self,
        caller: Caller,
        cluster_id: str,
        agent_ids: list[str],
        *,
        num_domains: int = 1,
        ild_topology: IldTopology = IldTopology.TORUS,
        gw_topology: GwTopology | None = None,
    ) -> Cluster:
        agents = {a.id: a for a in await self._ctx.db(self._store.list_agents)}
        machine_type = (
            agents[agent_ids[0]].machine_type
            if agent_ids and agent_ids[0] in agents
            else MachineType.BOW2000
        )
        try:
            from vpod.domain.entities import default_gw_topology

            cluster = Cluster(
                id=cluster_id,
                agent_ids=tuple(agent_ids),
                num_domains=num_domains,
                ild_topology=ild_topology,
                gw_topology=gw_topology or default_gw_topology(len(agent_ids)),
                machine_type=machine_type,
            )
            cluster.check_agents(agents)
        except DomainError as exc:
            raise _invalid(exc) from None
        try:
            await self._ctx.db(self._store.add_cluster, cluster)
        except Conflict as exc:
            raise errors.FailedPrecondition(str(exc)) from None
        self.invalidate()
        await self._ctx.audit(
            caller,
            "create_cluster",
            cluster_id,
            "ok",
            f"{len(agent_ids)} agents, {num_domains} domains",
        )
        return cluster

    async def list_clusters(self) -> list[Cluster]:
        return sorted(
            await self._ctx.db(self._store.list_clusters), key=lambda c: natural_key(c.id)
        )

    async def remove_cluster(self, caller: Caller, cluster_id: str) -> None:
        try:
            await self._ctx.db(self._store.remove_cluster, cluster_id)
        except Conflict as exc:
            raise errors.FailedPrecondition(str(exc)) from None
        self._ctx.occupancy.forget(cluster_id)
        self.invalidate()
        await self._ctx.audit(caller, "remove_cluster", cluster_id, "ok")

    # ------------------------------------------------------------ allocations

    async def create_allocation(
        self,
        caller: Caller,
        allocation_id: str,
        cluster_id: str,
        *,
        size: int | None = None,
        agent_ids: list[str] | None = None,
        hosts: Sequence[str] = (),
    ) -> Allocation:
        """Allocate machines of a cluster; ``hosts`` (addresses or CIDRs) may attach to its
        IPUs over IPUoF (none: the trusted host network)."""
        try:
            check_id("allocation", allocation_id)
            normalise_hosts(hosts)
        except DomainError as exc:
            raise _invalid(exc) from None
        if not size and not agent_ids:
            raise errors.InvalidArgument(
                "give the allocation a size (--size 4, 8, 16, 32, 64 or a multiple of 64)"
                " or its agents (--agents a,b,...)"
            )
        cluster = await self.cluster(cluster_id)
        try:
            machines = tuple(cluster.machine_of(a) for a in agent_ids) if agent_ids else None
        except DomainError as exc:
            raise _invalid(exc) from None
        request = AllocationRequest(id=allocation_id, size=size or None, machines=machines)
        occupancy = self._ctx.occupancy
        async with occupancy.lock(cluster.id):
            for attempt in range(3):
                snapshot = await occupancy.get(cluster, fresh=attempt > 0)
                try:
                    placed = place(snapshot, request)
                except DomainError as exc:
                    raise _invalid(exc) from None
                if isinstance(placed, Rejected):
                    if attempt == 0:
                        continue
                    raise errors.NoCapacity(
                        f"allocation {allocation_id} does not fit in cluster {cluster_id}: {placed}"
                    )
                assert isinstance(placed, AllocationPlacement)
                allocation = Allocation(
                    id=allocation_id,
                    cluster_id=cluster.id,
                    machines=placed.machines,
                    hosts=tuple(hosts),
                )
                try:
                    await self._ctx.db(self._store.add_allocation, allocation)
                except Conflict:
                    continue
                occupancy.put(cluster.id, snapshot.apply(placed))
                self.invalidate()
                await self._ctx.audit(
                    caller,
                    "create_allocation",
                    allocation_id,
                    "ok",
                    f"{allocation.size} IPUs in cluster {cluster_id}",
                )
                return allocation
        raise errors.Unavailable(
            f"allocation {allocation_id}: the cluster kept changing under the request; retry"
        )

    async def allocation_hosts(self, allocation_id: str) -> tuple[str, ...]:
        """Who may attach to the allocation's partitions over IPUoF: its own hosts, else the
        trusted host network (also for an allocation that is gone: it admits nobody new)."""
        view = await self._cache.view()
        found = view.allocations.get(allocation_id)
        if found is None:
            found = (await self._cache.view(fresh=True)).allocations.get(allocation_id)
        if found is not None and found.hosts:
            return found.hosts
        return normalise_hosts(self._ctx.settings.trusted_hosts)

    async def store_allocation_hosts(
        self, caller: Caller, allocation_id: str, hosts: Sequence[str]
    ) -> Allocation:
        """Persist an allocation's IPUoF hosts (normalised; none: the trusted hosts)."""
        try:
            normalised = normalise_hosts(hosts)
        except DomainError as exc:
            raise _invalid(exc) from None
        try:
            await self._ctx.db(self._store.set_allocation_hosts, allocation_id, normalised)
        except StoreNotFound:
            raise errors.NotFound(
                f"allocation {allocation_id} does not exist: `vipu-admin list allocations`"
                " shows them"
            ) from None
        self.invalidate()
        shown = ",".join(normalised) or "the trusted hosts"
        await self._ctx.audit(caller, "set_allocation_hosts", allocation_id, "ok", shown)
        return await self._ctx.db(self._store.get_allocation, allocation_id)

    async def list_allocations(self, cluster_id: str | None = None) -> list[Allocation]:
        allocations = await self._ctx.db(self._store.list_allocations)
        return sorted(
            (a for a in allocations if not cluster_id or a.cluster_id == cluster_id),
            key=lambda a: natural_key(a.id),
        )

    async def remove_allocation(self, caller: Caller, allocation_id: str) -> None:
        allocation = await self.allocation_for(caller, allocation_id)
        async with self._ctx.occupancy.lock(allocation.cluster_id):
            try:
                await self._ctx.db(self._store.remove_allocation, allocation_id)
            except Conflict as exc:
                raise errors.FailedPrecondition(f"{exc}: remove its partitions first") from None
            self._ctx.occupancy.forget(allocation.cluster_id)
        self.invalidate()
        await self._ctx.audit(caller, "remove_allocation", allocation_id, "ok")

    # ------------------------------------------------------------------ users

    async def create_user(
        self, caller: Caller, user_id: str, allocation_ids: list[str], *, admin: bool = False
    ) -> NewUser:
        try:
            user = User(id=user_id, allocation_ids=tuple(allocation_ids), admin=admin)
        except DomainError as exc:
            raise _invalid(exc) from None
        for allocation_id in allocation_ids:
            await self.allocation_for(caller, allocation_id)
        key = new_access_key()
        now = self._ctx.clock.now()
        key_hash = await asyncio.to_thread(hash_key, key)  # scrypt: ~50 ms, off the loop
        await self._ctx.db(self._store.add_user, user, key_hash, created_at=now)
        self.invalidate()
        await self._ctx.audit(
            caller,
            "create_user",
            user_id,
            "ok",
            f"allocations: {', '.join(allocation_ids) or 'none'}",
        )
        return NewUser(user=user, access_key=key, created_at=now)

    async def rotate_user_key(self, caller: Caller, user_id: str) -> NewUser:
        """Issue an existing user a new access key, returned once; the old key stops working
        at its next call on every controller sharing the store (the store bumps the user's
        access version). Its grants and its admin right stay as they are."""
        key = new_access_key()
        key_hash = await asyncio.to_thread(hash_key, key)  # scrypt: ~50 ms, off the loop
        await self._ctx.db(self._store.set_user_key_hash, user_id, key_hash)
        self.invalidate()
        await self._ctx.audit(caller, "rotate_key", user_id, "ok")
        user = await self._ctx.db(self._store.get_user, user_id)
        times = await self.user_times()
        return NewUser(user=user, access_key=key, created_at=times.get(user_id))

    async def list_users(self) -> list[User]:
        return sorted(await self._ctx.db(self._store.list_users), key=lambda u: natural_key(u.id))

    async def user_times(self) -> dict[str, datetime | None]:
        """When each user was created; None for users created before vpod kept it."""
        return await self._ctx.db(self._store.user_times)

    async def grant_allocation(self, caller: Caller, user_id: str, allocation_id: str) -> User:
        """Let an existing user use the allocation too; its access key stays as it is.

        Granting twice is harmless. It applies at the user's next call, on every
        controller sharing the store (the store bumps the user's access version).
        """
        user = await self._ctx.db(self._store.grant_allocation, user_id, allocation_id)
        self.invalidate()
        await self._ctx.audit(caller, "grant_allocation", user_id, "ok", allocation_id)
        return user

    async def revoke_allocation(self, caller: Caller, user_id: str, allocation_id: str) -> User:
        """Stop a user using the allocation (at its next call); its key and other grants stay.

        Revoking an allocation that was not granted is harmless; one that does not exist
        is NOT_FOUND, as is a user that does not exist.
        """
        user = await self._ctx.db(self._store.get_user, user_id)
        if allocation_id not in user.allocation_ids:
            if await self._ctx.db(self._store.find_allocation, allocation_id) is None:
                raise errors.NotFound(
                    f"allocation {allocation_id} does not exist:"
                    " `vipu-admin list allocations` shows them"
                )
            return user
        user = await self._ctx.db(self._store.revoke_allocation, user_id, allocation_id)
        self.invalidate()
        await self._ctx.audit(caller, "revoke_allocation", user_id, "ok", allocation_id)
        return user

    async def remove_user(self, caller: Caller, user_id: str) -> None:
        await self._ctx.db(self._store.remove_user, user_id)
        self.invalidate()
        await self._ctx.audit(caller, "remove_user", user_id, "ok")
