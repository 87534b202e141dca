"""The pod as an operator sees it: clusters → IPU-Link domains → machines → IPUs.

One read-only use-case for every view of the whole fabric (the web console's
map, a script drawing its own): each cluster with its domains in order, each
domain's machines in ladder order, each machine's four IPUs with the
partition holding them, their health and, when the agents report it, their
utilisation; allocations as runs of machines; GW-Links between domains.

Also the fragmentation of an allocation: its largest free aligned block and
what a partition of each size would get right now (placement asked on the
cluster's current snapshot, nothing reserved).

The views are the REST shapes (:mod:`vpod.wire.rest.pod_map`), defined once
for this use-case, the transport and the client.

Health comes from the store (reachability and faulty IPUs, written by the
leader's heartbeats, so every replica answers alike) and, for GW-Links and
Sync-Links that are down, from this controller's last heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vpod.agent.model import MachineHealth
from vpod.domain.entities import Allocation, Cluster
from vpod.domain.sizes import DOMAIN_MAX_IPUS, SEGMENT_SIZES
from vpod.placement import PartitionRequest, Rejected, place
from vpod.placement.results import PartitionPlacement
from vpod.store.records import AgentHealth, AgentHealthState, PartitionRecord
from vpod.wire.rest.pod_map import (
    AllocationMap,
    ClusterMap,
    DomainMap,
    Fragmentation,
    GwLink,
    IpuCell,
    MachineMap,
    PartitionSummary,
    SizeOutlook,
)

from . import errors
from .caller import Caller
from .context import Context
from .inventory import Inventory
from .partitions import PartitionService


class LinkHealth(Protocol):
    """What heartbeats know beyond the store (:class:`.agent_health.AgentHealthBook`): links
    down on each machine, and each IPU's telemetry and holder."""

    def machine_link_faults(self, agent_id: str) -> list[str]: ...

    def last_health(self, agent_id: str) -> tuple[MachineHealth, float] | None: ...


def ipu_telemetry(health: MachineHealth | None, device_id: int) -> tuple[float | None, str]:
    """An IPU's utilisation in percent (None when unknown) and who holds it ("" when free)."""
    if health is None:
        return None, ""
    for ipu in health.ipus:
        if ipu.device_id == device_id:
            holder = ipu.holder.describe(ipu.attached_client) if ipu.attached else ""
            return round(ipu.telemetry.utilisation * 100, 1), holder
    return None, ""


def partition_summary(record: PartitionRecord) -> PartitionSummary:
    return PartitionSummary(
        id=record.id,
        allocation_id=record.allocation_id,
        cluster_id=record.cluster_id,
        size=record.spec.size,
        ready_state=record.state.ready.name,
        operation_state=record.state.operation.name,
        slots=tuple(sorted(ipu.slot for ipu in record.ipus)),
    )


def gw_links(cluster: Cluster) -> tuple[GwLink, ...]:
    """Neighbouring domains are cabled; looped closes the ring, switched joins all to a switch
    (shown as the chain of neighbours: every pair reaches every other through it)."""
    n = cluster.num_domains
    links = [GwLink(a=i, b=i + 1) for i in range(n - 1)]
    if cluster.gw_topology.value == "looped" and n > 2:
        links.append(GwLink(a=n - 1, b=0))
    return tuple(links)


def partition_sizes_up_to(size: int) -> tuple[int, ...]:
    """Every partition size a partition of an allocation of ``size`` IPUs may take."""
    small = tuple(s for s in SEGMENT_SIZES if s <= size)
    large = tuple(range(2 * DOMAIN_MAX_IPUS, size + 1, DOMAIN_MAX_IPUS))
    return small + large


@dataclass(eq=False)
class PodMapService:
    """Read-only views of the whole fabric, for administrators."""

    _ctx: Context
    _inventory: Inventory
    _partitions: PartitionService
    _links: LinkHealth

    async def pod_map(self, caller: Caller, cluster_id: str | None = None) -> list[ClusterMap]:
        _require_admin(caller)
        inventory = self._inventory
        clusters = await inventory.list_clusters()
        if cluster_id:
            clusters = [c for c in clusters if c.id == cluster_id]
            if not clusters:
                raise errors.NotFound(
                    f"cluster {cluster_id} does not exist: `vipu-admin list clusters` shows them"
                )
        allocations = await inventory.list_allocations()
        records = await self._partitions.list_partitions(caller)
        store = self._ctx.db.store
        health = {h.agent_id: h for h in await self._ctx.db(store.list_agent_health)}
        faults = await self._ctx.db(store.agent_faults)
        views = []
        for cluster in clusters:
            views.append(
                self._cluster_view(
                    cluster,
                    [a for a in allocations if a.cluster_id == cluster.id],
                    [r for r in records if r.cluster_id == cluster.id],
                    health,
                    faults,
                )
            )
        return views

    def _cluster_view(
        self,
        cluster: Cluster,
        allocations: list[Allocation],
        records: list[PartitionRecord],
        health: dict[str, AgentHealth],
        faults: dict[str, dict[int, str]],
    ) -> ClusterMap:
        pod = cluster.pod()
        holder = {ipu.slot: r.id for r in records for ipu in r.ipus}
        allocation_of = {m: a.id for a in allocations for m in a.machines}
        domains = []
        for domain in pod.domains:
            machines = []
            for machine in domain.machines:
                agent_id = cluster.agent_ids[machine]
                known = health.get(agent_id)
                state = known.state if known is not None else AgentHealthState.UNKNOWN
                device_faults = faults.get(agent_id, {})
                heard = self._links.last_health(agent_id)
                ipus = []
                for slot in pod.machine_slots(machine):
                    ref = pod.ipu(slot)
                    utilisation, process = ipu_telemetry(
                        heard[0] if heard is not None else None, ref.device_id
                    )
                    ipus.append(
                        IpuCell(
                            slot=slot,
                            device_id=ref.device_id,
                            position=ref.position,
                            partition_id=holder.get(slot),
                            fault=device_faults.get(ref.device_id, ""),
                            utilisation=utilisation,
                            process=process,
                        )
                    )
                machines.append(
                    MachineMap(
                        index=machine,
                        agent_id=agent_id,
                        allocation_id=allocation_of.get(machine),
                        reachable=state is not AgentHealthState.UNREACHABLE,
                        state=state.name.lower(),
                        reason=known.reason if known is not None else "",
                        links_down=tuple(self._links.machine_link_faults(agent_id)),
                        ipus=tuple(ipus),
                    )
                )
            domains.append(
                DomainMap(
                    index=domain.index, topology=domain.topology.value, machines=tuple(machines)
                )
            )
        return ClusterMap(
            id=cluster.id,
            machine_type=cluster.machine_type.value,
            ild_topology=cluster.ild_topology.value,
            gw_topology=cluster.gw_topology.value,
            num_ipus=cluster.num_ipus,
            domains=tuple(domains),
            gw_links=gw_links(cluster),
            allocations=tuple(
                AllocationMap(id=a.id, machines=a.machines, size=a.size)
                for a in sorted(allocations, key=lambda a: a.machines[0] if a.machines else 0)
            ),
            partitions=tuple(partition_summary(r) for r in records),
        )

    async def fragmentation(self, caller: Caller, allocation_id: str) -> Fragmentation:
        _require_admin(caller)
        allocation = await self._inventory.allocation_for(caller, allocation_id)
        cluster = await self._inventory.cluster(allocation.cluster_id)
        snapshot = await self._ctx.occupancy.get(cluster, fresh=True)
        block = snapshot.largest_free_block(allocation.id)
        outlook = []
        for size in partition_sizes_up_to(allocation.size):
            request = PartitionRequest(id="what-if", size=size, allocation_id=allocation.id)
            result = place(snapshot, request)
            if isinstance(result, Rejected):
                outlook.append(SizeOutlook(size=size, fits=False, slots=(), reasons=result.reasons))
            elif isinstance(result, PartitionPlacement):
                outlook.append(
                    SizeOutlook(size=size, fits=True, slots=tuple(sorted(result.slots)), reasons=())
                )
        unavailable = snapshot.unavailable_ipus(allocation.id)
        return Fragmentation(
            allocation_id=allocation.id,
            cluster_id=cluster.id,
            size=allocation.size,
            free_ipus=len(snapshot.free_slots(allocation.id)),
            unavailable_ipus=unavailable,
            largest_free_block=block.size if block is not None else 0,
            largest_free_block_slots=tuple(block.slots) if block is not None else (),
            free_blocks={
                size: n for size, n in snapshot.free_block_counts(allocation.id).items() if n
            },
            sizes=tuple(outlook),
        )


def _require_admin(caller: Caller) -> None:
    if not caller.admin:
        raise errors.PermissionDenied(
            f"user {caller.user_id} is not an administrator: the pod map is for admins only"
        )


__all__ = [
    "ClusterMap",
    "Fragmentation",
    "PartitionSummary",
    "PodMapService",
    "partition_summary",
]
