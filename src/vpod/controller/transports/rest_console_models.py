"""Response bodies of the fabric views: who am I, the pod map, fragmentation.

They mirror the dataclasses of :mod:`vpod.controller.pod_map` field for field
(read with ``from_attributes``), so the map a script reads is the one the
web console draws.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _FromAttributes(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Identity(BaseModel):
    user_id: str = Field(description="`anonymous` without --secure and without a user id.")
    admin: bool
    allocation_ids: list[str] | None = Field(
        description="Allocations the caller may use; null: every allocation."
    )
    secure: bool = Field(description="Whether the controller authenticates callers.")


class IpuCellOut(_FromAttributes):
    slot: int = Field(description="4 × machine + rank in ladder order.")
    device_id: int = Field(description="The IPU's id on its machine (3, 2, 1, 0 in ladder order).")
    position: int = Field(description="Position in ladder order inside its IPU-Link domain.")
    partition_id: str | None
    fault: str = Field(description="Why the IPU is out of placement; empty when healthy.")
    utilisation: float | None = Field(
        description="Percent busy from the agent's telemetry; null when not reported."
    )
    process: str = Field(description="The application attached over IPUoF; empty when none.")


class MachineOut(_FromAttributes):
    index: int
    agent_id: str
    allocation_id: str | None
    reachable: bool
    state: str = Field(description="`reachable`, `unreachable` or `unknown` (never heard from).")
    reason: str
    links_down: list[str] = Field(description="GW-Links and Sync-Links down, as sentences.")
    ipus: list[IpuCellOut]


class DomainOut(_FromAttributes):
    index: int
    topology: str
    machines: list[MachineOut] = Field(description="In ladder order.")


class GwLinkOut(_FromAttributes):
    a: int
    b: int


class AllocationMapOut(_FromAttributes):
    id: str
    machines: list[int]
    size: int


class PartitionSummaryOut(_FromAttributes):
    id: str
    allocation_id: str
    cluster_id: str
    size: int
    ready_state: str
    operation_state: str
    slots: list[int]


class ClusterMapOut(_FromAttributes):
    id: str
    machine_type: str
    ild_topology: str
    gw_topology: str
    num_ipus: int
    domains: list[DomainOut]
    gw_links: list[GwLinkOut] = Field(description="Pairs of IPU-Link domains joined by GW-Links.")
    allocations: list[AllocationMapOut]
    partitions: list[PartitionSummaryOut]


class PodMap(BaseModel):
    clusters: list[ClusterMapOut]


class SizeOutlookOut(_FromAttributes):
    size: int
    fits: bool
    slots: list[int] = Field(description="Where placement would put it now.")
    reasons: list[str] = Field(description="Why it does not fit, when it does not.")


class FragmentationOut(_FromAttributes):
    allocation_id: str
    cluster_id: str
    size: int
    free_ipus: int
    unavailable_ipus: int = Field(description="Free but faulty or on unreachable machines.")
    largest_free_block: int = Field(description="IPUs in the largest free aligned block.")
    largest_free_block_slots: list[int]
    free_blocks: dict[int, int] = Field(description="Maximal free aligned blocks per size.")
    sizes: list[SizeOutlookOut]
