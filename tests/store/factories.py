"""Small builders of domain values for the store tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.entities import Agent, Allocation, Cluster
from vpod.domain.partition_states import OperationState, PartitionState, ReadyState
from vpod.domain.partitions import PartitionSpec
from vpod.domain.routing import IpuLinkRouting, SyncType
from vpod.store import PartitionIpu, PartitionRecord, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CREATING = PartitionState(ReadyState.PENDING, OperationState.CREATING)
ACTIVE = PartitionState(ReadyState.ACTIVE, OperationState.IDLE)


def at(seconds: float) -> datetime:
    """A time ``seconds`` after T0."""
    return T0 + timedelta(seconds=seconds)


def agent_ids(cluster_id: str, machines: int) -> tuple[str, ...]:
    return tuple(f"{cluster_id}-m{i}" for i in range(machines))


def add_cluster(
    store: Store, cluster_id: str = "c1", machines: int = 16, num_domains: int = 1
) -> Cluster:
    """Register ``machines`` agents and a cluster of them."""
    ids = agent_ids(cluster_id, machines)
    for i, agent_id in enumerate(ids):
        store.add_agent(Agent(agent_id, f"10.0.0.{i + 1}", 8091))
    return store.add_cluster(Cluster(cluster_id, ids, num_domains=num_domains))


def add_allocation(
    store: Store, allocation_id: str, machines: tuple[int, ...], cluster_id: str = "c1"
) -> Allocation:
    return store.add_allocation(Allocation(allocation_id, cluster_id, machines))


def spec(
    partition_id: str, size: int, allocation_id: str = "al1", cluster_id: str = "c1"
) -> PartitionSpec:
    return PartitionSpec(
        id=partition_id,
        size=size,
        num_segments=1,
        num_gcds=1,
        num_replicas=1,
        reconfigurable=False,
        routing=IpuLinkRouting.DNC if size <= IPUS_PER_MACHINE else IpuLinkRouting.SWNC,
        gw_routing=None,
        sync_type=SyncType.GS2_DEFAULT,
        allocation_id=allocation_id,
        cluster_id=cluster_id,
    )


def record(
    partition_id: str,
    slots: tuple[int, ...] | range,
    allocation_id: str = "al1",
    cluster_id: str = "c1",
    *,
    now: datetime = T0,
) -> PartitionRecord:
    """A new partition on ``slots`` (routing order), one segment, one GCD."""
    slots = tuple(slots)
    return PartitionRecord(
        spec=spec(partition_id, len(slots), allocation_id, cluster_id),
        ipus=tuple(
            PartitionIpu(slot=s, routing_id=i, segment=0, gcd=0) for i, s in enumerate(slots)
        ),
        state=CREATING,
        created_at=now,
        updated_at=now,
    )
