"""Use-cases for a layer that hands V-IPU hardware to tenants (the cloud's vPODs).

A tenant gets an allocation sized on demand in one of a set of clusters, a
V-IPU user scoped to it whose key can be rotated, and its partitions saved
and re-created across a suspension. Every method is idempotent (creating
what exists or removing what is gone succeeds), because the cloud's tasks
run again from the start after a restart, and every change drops the caches
it makes stale (the inventory view, remembered verifications of the user)
so the next call, on any transport, sees it.

Grants, revokes and key rotations are audited like the inventory's own
changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from vpod.agent.errors import AgentError
from vpod.domain.entities import Agent, Allocation
from vpod.domain.partitions import PartitionRequirements, PartitionSpec
from vpod.placement import AllocationRequest, Rejected, place
from vpod.store.records import AgentHealthState

from . import errors
from .agent_tokens import AgentTokens
from .allocation_hosts import AllocationHosts
from .auth import Authenticator
from .caller import SYSTEM, Caller
from .context import Context
from .inventory import Inventory, NewUser
from .partitions import PartitionService


class NoAllocationFits(errors.NoCapacity):
    """No cluster of those asked has room for the allocation; ``reasons`` says why, per cluster."""

    def __init__(self, size: int, reasons: Sequence[str]) -> None:
        self.size = size
        self.reasons = tuple(reasons)
        why = "; ".join(self.reasons) or "no V-IPU cluster was named to allocate from"
        super().__init__(f"no IPU capacity for {size} IPUs now: {why}")


@dataclass(frozen=True)
class TenantPartition:
    """What it takes to create a partition again: its id, shape and flags (not its IPUs)."""

    id: str
    spec: PartitionSpec
    disable_auto_reset: bool
    relocatable: bool


@dataclass(eq=False)
class Tenancy:
    """What a tenant layer may ask of V-IPU: allocations, users, grants and partitions."""

    _ctx: Context
    _inventory: Inventory
    _partitions: PartitionService
    _auth: Authenticator
    _agent_tokens: AgentTokens
    _allocation_hosts: AllocationHosts

    # ---------------------------------------------------------- allocations

    async def cluster_ids(self) -> list[str]:
        return [c.id for c in await self._inventory.list_clusters()]

    async def find_allocation(self, allocation_id: str) -> Allocation | None:
        found: Allocation | None = await self._ctx.db(
            self._ctx.db.store.find_allocation, allocation_id
        )
        return found

    async def ensure_allocation(
        self, caller: Caller, allocation_id: str, size: int, cluster_ids: Sequence[str]
    ) -> Allocation:
        """The allocation if it exists, else a new one of ``size`` IPUs in the first of
        ``cluster_ids`` with room (:class:`NoAllocationFits` says why each cluster refused)."""
        existing = await self.find_allocation(allocation_id)
        if existing is not None:
            return existing
        reasons = []
        for cluster_id in cluster_ids:
            try:
                return await self._inventory.create_allocation(
                    caller, allocation_id, cluster_id, size=size
                )
            except (errors.NoCapacity, errors.NotFound) as exc:
                reasons.append(str(exc))
            except errors.AlreadyExists:
                again = await self.find_allocation(allocation_id)
                if again is not None:
                    return again
        raise NoAllocationFits(size, reasons)

    async def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> None:
        """Let only ``hosts`` attach to the allocation's IPUs over IPUoF (idempotent).

        ``hosts`` are IP addresses or CIDRs (a tenant vPOD's own servers' addresses).
        They are persisted and pushed at once to the agents of every partition of the
        allocation (an agent unreachable now gets them at the next reconciliation);
        partitions created later get them at configure. An empty list, or an allocation
        whose hosts were never set, means the operator's trusted host network
        (``Settings.trusted_hosts``). NotFound for an unknown allocation, InvalidArgument
        for an entry that is neither an address nor a CIDR.
        """
        await self._allocation_hosts.set(SYSTEM, allocation_id, hosts)

    async def remove_allocation(self, caller: Caller, allocation_id: str) -> None:
        """Remove the allocation (its partitions must be gone); nothing if it is gone."""
        if await self.find_allocation(allocation_id) is None:
            return
        with contextlib.suppress(errors.NotFound):
            await self._inventory.remove_allocation(caller, allocation_id)

    async def allocation_capacity(
        self, size: int, cluster_ids: Sequence[str], *, limit: int = 64
    ) -> int:
        """How many allocations of ``size`` IPUs fit now in ``cluster_ids``, one after another
        (at most ``limit``); clusters that do not exist count nothing."""
        total = 0
        occupancy = self._ctx.occupancy
        for cluster_id in cluster_ids:
            try:
                cluster = await self._inventory.cluster(cluster_id)
            except errors.NotFound:
                continue
            snapshot = await occupancy.get(cluster)
            for n in range(limit - total):
                placed = place(snapshot, AllocationRequest(id=f"capacity-probe-{n}", size=size))
                if isinstance(placed, Rejected):
                    break
                snapshot = snapshot.apply(placed)
                total += 1
        return total

    async def unreachable_agents(self, allocation: Allocation) -> list[str]:
        """Agents of the allocation's machines that the controller cannot reach now."""
        cluster = await self._inventory.cluster(allocation.cluster_id)
        agents = {cluster.agent_of(m) for m in allocation.machines}
        health = await self._ctx.db(self._ctx.db.store.list_agent_health)
        return sorted(
            h.agent_id
            for h in health
            if h.agent_id in agents and h.state is AgentHealthState.UNREACHABLE
        )

    async def ipuof_addresses(self, allocation: Allocation) -> list[str]:
        """Where the IPUoF endpoints of the allocation's machines listen (the addresses a
        tenant network must let its servers reach); machines that do not answer now are
        left out (they are asked again at the cluster's next setup)."""
        cluster = await self._inventory.cluster(allocation.cluster_id)
        wanted = {cluster.agent_of(m) for m in allocation.machines}
        agents = [a for a in await self._inventory.list_agents() if a.id in wanted]
        timeout = self._ctx.settings.agent_timeout_s

        async def address(agent: Agent) -> str | None:
            try:
                identity = await self._ctx.gateway.identity(agent, timeout=timeout)
            except AgentError:
                return None
            return identity.ipuof_address or None

        found = await asyncio.gather(*(address(a) for a in agents))
        return sorted({a for a in found if a})

    # ---------------------------------------------------------------- agent tokens

    async def admit_agent(self, agent_id: str, token: str, *, source: str) -> str | None:
        """Check the registration token of an agent the cloud registers (a GPU host agent),
        as the IPU agents' are checked: the token's id, or ``None`` in the open mode without
        one; Unauthenticated or PermissionDenied with a sentence otherwise."""
        return await self._agent_tokens.admit(agent_id, token, source=source)

    async def agent_token_id(self, token: str) -> str | None:
        """The id of a valid agent token (None: unknown, wrong or removed)."""
        return await self._agent_tokens.token_of(token) if token else None

    async def agent_registered(
        self, agent_id: str, token_id: str | None, message: str, *, source: str
    ) -> None:
        """Audit an agent's registration (the cloud keeps the agent's binding itself)."""
        await self._agent_tokens.registered(agent_id, token_id, message, source=source)

    @property
    def agent_tokens_required(self) -> bool:
        return self._agent_tokens.required

    async def vipu_admin(self, user_id: str, access_key: str, *, source: str) -> None:
        """Unauthenticated or PermissionDenied unless these are a V-IPU administrator's
        credentials (the operators' web console shows the cloud's GPU hosts with them)."""
        await self._auth.caller(user_id, access_key, source=source, admin=True)

    # ---------------------------------------------------------------- users

    async def user_exists(self, user_id: str) -> bool:
        found = await self._ctx.db(self._ctx.db.store.find_user_with_hash, user_id)
        return found is not None

    async def ensure_user(self, caller: Caller, user_id: str, allocation_id: str) -> str | None:
        """Create the user with the allocation granted (returns its new access key), or grant
        the allocation to the user that exists (returns None: its key is unchanged)."""
        if not await self.user_exists(user_id):
            try:
                created: NewUser = await self._inventory.create_user(
                    caller, user_id, [allocation_id]
                )
            except errors.AlreadyExists:
                pass
            else:
                return created.access_key
        await self.grant(caller, user_id, allocation_id)
        return None

    async def grant(self, caller: Caller, user_id: str, allocation_id: str) -> None:
        """Let the user use the allocation (granting twice is harmless)."""
        await self._inventory.grant_allocation(caller, user_id, allocation_id)
        self._auth.forget(user_id)

    async def revoke(self, caller: Caller, user_id: str, allocation_id: str) -> None:
        """Stop the user using the allocation (nothing if the user is gone)."""
        if not await self.user_exists(user_id):
            return
        await self._ctx.db(self._ctx.db.store.revoke_allocation, user_id, allocation_id)
        self._changed(user_id)
        await self._ctx.audit(caller, "revoke_allocation", user_id, "ok", allocation_id)

    async def rotate_key(self, caller: Caller, user_id: str) -> str:
        """Issue the user a new access key, returned once; the old one stops working now."""
        rotated = await self._inventory.rotate_user_key(caller, user_id)
        self._changed(user_id)
        return rotated.access_key

    async def remove_user(self, caller: Caller, user_id: str) -> None:
        if not await self.user_exists(user_id):
            return
        with contextlib.suppress(errors.NotFound):
            await self._inventory.remove_user(caller, user_id)
        self._changed(user_id)

    def _changed(self, user_id: str) -> None:
        self._inventory.invalidate()
        self._auth.forget(user_id)

    # ----------------------------------------------------------- partitions

    async def partitions(self, caller: Caller, allocation_id: str) -> list[TenantPartition]:
        """The allocation's partitions (none if the allocation is gone)."""
        if await self.find_allocation(allocation_id) is None:
            return []
        records = await self._partitions.list_partitions(caller, allocation_id=allocation_id)
        return [
            TenantPartition(
                id=r.id,
                spec=r.spec,
                disable_auto_reset=r.disable_auto_reset,
                relocatable=r.relocatable,
            )
            for r in records
        ]

    async def remove_partition(self, caller: Caller, partition_id: str) -> None:
        """Remove (forcing it if an agent does not answer); a partition already gone is fine."""
        try:
            await self._partitions.remove(caller, partition_id)
        except errors.NotFound:
            return
        except (errors.Unavailable, errors.FailedPrecondition):
            with contextlib.suppress(errors.NotFound):
                await self._partitions.remove(caller, partition_id, force=True)

    async def restore_partition(
        self,
        caller: Caller,
        requirements: PartitionRequirements,
        *,
        disable_auto_reset: bool,
        relocatable: bool,
    ) -> None:
        """Create a partition again with its id (nothing if it is there with that shape)."""
        await self._partitions.create(
            caller,
            requirements,
            disable_auto_reset=disable_auto_reset,
            relocatable=relocatable,
        )
