"""The cloud's one door into the V-IPU controller, called in-process.

Everything a vPOD needs from the controller goes through :class:`VipuPort`:
allocations (by size, in the V-IPU clusters the settings name), the V-IPU
user scoped to a vPOD's allocation, and the partitions suspension saves and
resume re-creates. It calls the controller's use-cases (``Inventory``,
``PartitionService``) and, for the three operations they do not offer yet
(grant, revoke, new access key), the controller's store plus the caches a
use-case would refresh. Every method is idempotent: a task interrupted by a
restart calls them again.

Partition specs are saved as plain dicts (:func:`saved_spec`): size, shape
and flags, but not the IPUs they sat on, because resume may land the
allocation on other machines.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from vpod.controller import errors
from vpod.controller.app import Controller
from vpod.controller.caller import Caller
from vpod.controller.context import Context
from vpod.controller.credentials import hash_key, new_access_key
from vpod.domain.entities import Allocation
from vpod.domain.partitions import PartitionRequirements
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.placement import AllocationRequest, Rejected, place
from vpod.store.records import AgentHealthState, PartitionRecord

CLOUD_CALLER = Caller(user_id="vpod-cloud", admin=True, source="cloud")


def allocation_id_of(cluster_id: str) -> str:
    return f"vpod-{cluster_id}"


def user_id_of(cluster_id: str) -> str:
    return f"vpod-{cluster_id}"


def saved_spec(record: PartitionRecord) -> dict[str, Any]:
    """What resume needs to re-create a partition with the same id and shape."""
    spec = record.spec
    return {
        "id": spec.id,
        "size": spec.size,
        "num_segments": spec.num_segments,
        "num_gcds": spec.num_gcds,
        "num_replicas": spec.num_replicas,
        "reconfigurable": spec.reconfigurable,
        "routing": spec.routing.name,
        "gw_routing": spec.gw_routing.name if spec.gw_routing else None,
        "sync_type": spec.sync_type.name,
        "disable_auto_reset": record.disable_auto_reset,
        "relocatable": record.relocatable,
    }


def requirements_of(saved: dict[str, Any], allocation_id: str) -> PartitionRequirements:
    return PartitionRequirements(
        id=saved["id"],
        size=int(saved["size"]),
        allocation_id=allocation_id,
        num_segments=int(saved["num_segments"]),
        num_gcds=int(saved["num_gcds"]),
        num_replicas=int(saved["num_replicas"]),
        reconfigurable=bool(saved["reconfigurable"]),
        routing=IpuLinkRouting[saved["routing"]],
        gw_routing=GwRouting[saved["gw_routing"]] if saved.get("gw_routing") else None,
        sync_type=SyncType[saved["sync_type"]],
    )


class VipuPort:
    def __init__(self, controller: Controller, clusters: Sequence[str] = ()) -> None:
        self._controller = controller
        self._clusters = tuple(clusters)
        self._api: tuple[str, int] | None = None
        self._api_known = asyncio.Event()

    @property
    def _ctx(self) -> Context:
        return self._controller.ctx

    # -- where servers reach the user API -----------------------------------------------------

    def user_api_listening(self, host: str, port: int) -> None:
        """Told by the server once the user gRPC API listens (its port may be picked then)."""
        self._api = (host, port)
        self._api_known.set()

    @property
    def known_user_api(self) -> tuple[str, int] | None:
        """Where the user API listens, if the server said so already."""
        return self._api

    async def user_api(self, timeout_s: float = 30.0) -> tuple[str, int]:
        try:
            await asyncio.wait_for(self._api_known.wait(), timeout_s)
        except TimeoutError:
            raise errors.Unavailable(
                "the V-IPU user API is not listening yet: retry in a moment"
            ) from None
        assert self._api is not None
        return self._api

    # -- allocations --------------------------------------------------------------------------

    async def cluster_ids(self) -> list[str]:
        if self._clusters:
            return list(self._clusters)
        return [c.id for c in await self._controller.inventory.list_clusters()]

    async def find_allocation(self, allocation_id: str) -> Allocation | None:
        found: Allocation | None = await self._ctx.db(
            self._ctx.db.store.find_allocation, allocation_id
        )
        return found

    async def ensure_allocation(
        self, allocation_id: str, size: int, *, prefer: str | None = None
    ) -> Allocation:
        """The allocation, created in the first V-IPU cluster with room if it does not exist."""
        existing = await self.find_allocation(allocation_id)
        if existing is not None:
            return existing
        candidates = await self.cluster_ids()
        if prefer in candidates:
            candidates.remove(prefer)
            candidates.insert(0, prefer)
        reasons = []
        for cluster_id in candidates:
            try:
                return await self._controller.inventory.create_allocation(
                    CLOUD_CALLER, allocation_id, cluster_id, size=size
                )
            except (errors.NoCapacity, errors.NotFound) as exc:
                reasons.append(str(exc))
            except errors.AlreadyExists:
                again = await self.find_allocation(allocation_id)
                if again is not None:
                    return again
        if not candidates:
            reasons.append("the cloud has no V-IPU cluster to allocate from")
        raise errors.NoCapacity(
            f"no IPU capacity for a vPOD of {size} IPUs now: " + "; ".join(reasons)
        )

    async def remove_allocation(self, allocation_id: str) -> None:
        if await self.find_allocation(allocation_id) is None:
            return
        with contextlib.suppress(errors.NotFound):
            await self._controller.inventory.remove_allocation(CLOUD_CALLER, allocation_id)

    async def capacity(self, size: int, *, limit: int = 64) -> int:
        """How many allocations of ``size`` IPUs fit now, one after another."""
        total = 0
        occupancy = self._ctx.occupancy
        for cluster_id in await self.cluster_ids():
            try:
                cluster = await self._controller.inventory.cluster(cluster_id)
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
        """Agents of the allocation's machines that the controller cannot reach."""
        cluster = await self._controller.inventory.cluster(allocation.cluster_id)
        agents = {cluster.agent_of(m) for m in allocation.machines}
        health = await self._ctx.db(self._ctx.db.store.list_agent_health)
        return sorted(
            h.agent_id
            for h in health
            if h.agent_id in agents and h.state is AgentHealthState.UNREACHABLE
        )

    # -- the vPOD's V-IPU user ----------------------------------------------------------------

    async def _user_exists(self, user_id: str) -> bool:
        found = await self._ctx.db(self._ctx.db.store.find_user_with_hash, user_id)
        return found is not None

    async def ensure_user(self, user_id: str, allocation_id: str) -> str | None:
        """Create the user with the allocation granted (returns its new access key), or grant
        the allocation to the user that exists (returns None: its key is unchanged)."""
        if not await self._user_exists(user_id):
            try:
                created = await self._controller.inventory.create_user(
                    CLOUD_CALLER, user_id, [allocation_id]
                )
            except errors.AlreadyExists:
                pass
            else:
                return created.access_key
        await self.grant(user_id, allocation_id)
        return None

    async def grant(self, user_id: str, allocation_id: str) -> None:
        await self._ctx.db(self._ctx.db.store.grant_allocation, user_id, allocation_id)
        self._changed(user_id)

    async def revoke(self, user_id: str, allocation_id: str) -> None:
        if await self._user_exists(user_id):
            await self._ctx.db(self._ctx.db.store.revoke_allocation, user_id, allocation_id)
            self._changed(user_id)

    async def new_key(self, user_id: str) -> str:
        """Issue the user a new access key (the old one stops working)."""
        key = new_access_key()
        await self._ctx.db(self._ctx.db.store.set_user_key_hash, user_id, hash_key(key))
        self._changed(user_id)
        return key

    async def remove_user(self, user_id: str) -> None:
        if await self._user_exists(user_id):
            with contextlib.suppress(errors.NotFound):
                await self._controller.inventory.remove_user(CLOUD_CALLER, user_id)
            self._changed(user_id)

    def _changed(self, user_id: str) -> None:
        self._controller.inventory.invalidate()
        self._controller.auth.forget(user_id)

    # -- partitions ---------------------------------------------------------------------------

    async def partitions(self, allocation_id: str) -> list[PartitionRecord]:
        if await self.find_allocation(allocation_id) is None:
            return []
        return await self._controller.partitions.list_partitions(
            CLOUD_CALLER, allocation_id=allocation_id
        )

    async def remove_partition(self, partition_id: str) -> None:
        """Remove (forcing it if an agent does not answer); a partition already gone is fine."""
        service = self._controller.partitions
        try:
            await service.remove(CLOUD_CALLER, partition_id)
        except errors.NotFound:
            return
        except (errors.Unavailable, errors.FailedPrecondition):
            try:
                await service.remove(CLOUD_CALLER, partition_id, force=True)
            except errors.NotFound:
                return

    async def restore_partition(self, saved: dict[str, Any], allocation_id: str) -> None:
        """Create a saved partition again in ``allocation_id`` (nothing if it is there)."""
        await self._controller.partitions.create(
            CLOUD_CALLER,
            requirements_of(saved, allocation_id),
            disable_auto_reset=bool(saved.get("disable_auto_reset")),
            relocatable=bool(saved.get("relocatable")),
        )
