"""The cloud's one door into the V-IPU controller, called in-process.

Everything a vPOD needs from the controller goes through :class:`VipuPort`:
allocations (by size, in the V-IPU clusters the settings name), the V-IPU
user scoped to a vPOD's allocation and its access keys, how many vPODs of a
size fit now, which machines are unreachable, and the partitions suspension
saves and resume re-creates. It calls the controller's tenancy use-cases
(:class:`vpod.controller.tenancy.Tenancy`), which keep the controller's
caches right, and hands the controller's errors over here, once, as the
plain kinds of the service layers' one tree (:mod:`.model.errors`). Every
method is idempotent: a task interrupted by a restart calls them again.

Partition specs are saved as plain dicts (:func:`saved_spec`): size, shape
and flags, but not the IPUs they sat on, because resume may land the
allocation on other machines.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from vpod.controller import errors as controller_errors
from vpod.controller.caller import Caller
from vpod.controller.tenancy import NoAllocationFits, Tenancy, TenantPartition
from vpod.domain.entities import Allocation
from vpod.domain.partitions import PartitionRequirements
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType

from .model import errors


def cloud_error(exc: controller_errors.ServiceError) -> errors.ServiceError:
    """The controller's error as the plain kind it is, with the same sentence (the service
    errors are one tree: the controller's subclass, with its details, stays the cause)."""
    for kind in controller_errors.KINDS:
        if isinstance(exc, kind):
            return kind(str(exc))
    return errors.Unavailable(str(exc))


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    try:
        yield
    except controller_errors.ServiceError as exc:
        raise cloud_error(exc) from exc


CLOUD_CALLER = Caller(user_id="vpod-cloud", admin=True, source="cloud")


def allocation_id_of(cluster_id: str) -> str:
    return f"vpod-{cluster_id}"


def user_id_of(cluster_id: str) -> str:
    return f"vpod-{cluster_id}"


def saved_spec(record: TenantPartition) -> dict[str, Any]:
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
    def __init__(self, tenancy: Tenancy, clusters: Sequence[str] = ()) -> None:
        self._tenancy = tenancy
        self._clusters = tuple(clusters)
        self._api: tuple[str, int] | None = None
        self._api_known = asyncio.Event()
        self._cloud_api: tuple[str, int] | None = None

    # -- where servers reach the user API -----------------------------------------------------

    def user_api_listening(self, host: str, port: int, http_port: int = 0) -> None:
        """Told by the server once the user gRPC API listens (its port may be picked then),
        with the HTTP port the cloud API is on (0: not known yet)."""
        self._api = (host, port)
        if http_port:
            self._cloud_api = (host, http_port)
        self._api_known.set()

    @property
    def cloud_api(self) -> tuple[str, int] | None:
        """Where servers reach the cloud API (the controller's HTTP), once known."""
        return self._cloud_api

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
        async with _translated():
            return await self._tenancy.cluster_ids()

    async def find_allocation(self, allocation_id: str) -> Allocation | None:
        async with _translated():
            return await self._tenancy.find_allocation(allocation_id)

    async def ensure_allocation(
        self, allocation_id: str, size: int, *, prefer: str | None = None
    ) -> Allocation:
        """The allocation, created in the first V-IPU cluster with room if it does not exist."""
        candidates = await self.cluster_ids()
        if prefer in candidates:
            candidates.remove(prefer)
            candidates.insert(0, prefer)
        try:
            async with _translated():
                return await self._tenancy.ensure_allocation(
                    CLOUD_CALLER, allocation_id, size, candidates
                )
        except errors.NoCapacity as exc:
            refused = exc.__cause__
            reasons = list(refused.reasons) if isinstance(refused, NoAllocationFits) else [str(exc)]
            if not candidates:
                reasons.append("the cloud has no V-IPU cluster to allocate from")
            raise errors.NoCapacity(
                f"no IPU capacity for a vPOD of {size} IPUs now: " + "; ".join(reasons)
            ) from None

    async def remove_allocation(self, allocation_id: str) -> None:
        async with _translated():
            await self._tenancy.remove_allocation(CLOUD_CALLER, allocation_id)

    async def set_allocation_hosts(self, allocation_id: str, hosts: Sequence[str]) -> None:
        """Let only ``hosts`` (IP addresses or CIDRs: the vPOD's servers) attach to the
        allocation's IPUs over IPUoF; pushed at once to its partitions' agents, and given
        to partitions created later (idempotent; ``Tenancy.set_allocation_hosts``)."""
        async with _translated():
            await self._tenancy.set_allocation_hosts(allocation_id, hosts)

    async def capacity(self, size: int, *, limit: int = 64) -> int:
        """How many allocations of ``size`` IPUs fit now, one after another."""
        clusters = await self.cluster_ids()
        async with _translated():
            return await self._tenancy.allocation_capacity(size, clusters, limit=limit)

    async def unreachable_agents(self, allocation: Allocation) -> list[str]:
        """Agents of the allocation's machines that the controller cannot reach."""
        async with _translated():
            return await self._tenancy.unreachable_agents(allocation)

    async def ipuof_addresses(self, allocation_id: str) -> list[str]:
        """Where the IPUoF endpoints of the allocation's machines listen (none if it is gone)."""
        async with _translated():
            allocation = await self._tenancy.find_allocation(allocation_id)
            if allocation is None:
                return []
            return await self._tenancy.ipuof_addresses(allocation)

    # -- agent registration tokens (GPU host agents) ------------------------------------------

    async def admit_agent(self, agent_id: str, token: str, *, source: str) -> str | None:
        """The id of the agent token ``token`` (None: open mode, no token); the cloud's
        Unauthenticated or PermissionDenied with the controller's sentence otherwise."""
        async with _translated():
            return await self._tenancy.admit_agent(agent_id, token, source=source)

    async def agent_token_id(self, token: str) -> str | None:
        return await self._tenancy.agent_token_id(token)

    @property
    def agent_tokens_required(self) -> bool:
        return self._tenancy.agent_tokens_required

    async def vipu_admin(self, user_id: str, access_key: str, *, source: str) -> None:
        async with _translated():
            await self._tenancy.vipu_admin(user_id, access_key, source=source)

    async def agent_registered(
        self, agent_id: str, token_id: str | None, message: str, *, source: str
    ) -> None:
        async with _translated():
            await self._tenancy.agent_registered(agent_id, token_id, message, source=source)

    # -- the vPOD's V-IPU user ----------------------------------------------------------------

    async def ensure_user(self, user_id: str, allocation_id: str) -> str | None:
        """Create the user with the allocation granted (returns its new access key), or grant
        the allocation to the user that exists (returns None: its key is unchanged)."""
        async with _translated():
            return await self._tenancy.ensure_user(CLOUD_CALLER, user_id, allocation_id)

    async def grant(self, user_id: str, allocation_id: str) -> None:
        async with _translated():
            await self._tenancy.grant(CLOUD_CALLER, user_id, allocation_id)

    async def revoke(self, user_id: str, allocation_id: str) -> None:
        async with _translated():
            await self._tenancy.revoke(CLOUD_CALLER, user_id, allocation_id)

    async def new_key(self, user_id: str) -> str:
        """Issue the user a new access key (the old one stops working)."""
        async with _translated():
            return await self._tenancy.rotate_key(CLOUD_CALLER, user_id)

    async def remove_user(self, user_id: str) -> None:
        async with _translated():
            await self._tenancy.remove_user(CLOUD_CALLER, user_id)

    # -- partitions ---------------------------------------------------------------------------

    async def partitions(self, allocation_id: str) -> list[TenantPartition]:
        async with _translated():
            return await self._tenancy.partitions(CLOUD_CALLER, allocation_id)

    async def remove_partition(self, partition_id: str) -> None:
        """Remove (forcing it if an agent does not answer); a partition already gone is fine."""
        async with _translated():
            await self._tenancy.remove_partition(CLOUD_CALLER, partition_id)

    async def restore_partition(self, saved: dict[str, Any], allocation_id: str) -> None:
        """Create a saved partition again in ``allocation_id`` (nothing if it is there)."""
        async with _translated():
            await self._tenancy.restore_partition(
                CLOUD_CALLER,
                requirements_of(saved, allocation_id),
                disable_auto_reset=bool(saved.get("disable_auto_reset")),
                relocatable=bool(saved.get("relocatable")),
            )
