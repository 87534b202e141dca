"""The fabric views' shapes: who am I, the pod map, fragmentation (docs/rest-api.md).

One definition serves three places: :mod:`vpod.controller.pod_map` builds
them, the REST transport answers with them (and documents them in OpenAPI),
and :mod:`vpod.client.fabric` reads the answers back into them, so the map a
script reads is the one the web console draws. Values are frozen.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field


class _Shape(BaseModel):
    # No docstrings on the shapes: a docstring would become the schema's description in
    # the OpenAPI document, which describes the fields alone.
    model_config = ConfigDict(frozen=True)


class Identity(_Shape):
    user_id: str = Field(description="`anonymous` without --secure and without a user id.")
    admin: bool
    allocation_ids: tuple[str, ...] | None = Field(
        description="Allocations the caller may use; null: every allocation."
    )
    secure: bool = Field(description="Whether the controller authenticates callers.")


class IpuCell(_Shape):
    slot: int = Field(description="4 × machine + rank in ladder order.")
    device_id: int = Field(description="The IPU's id on its machine (3, 2, 1, 0 in ladder order).")
    position: int = Field(description="Position in ladder order inside its IPU-Link domain.")
    partition_id: str | None
    fault: str = Field(description="Why the IPU is out of placement; empty when healthy.")
    utilisation: float | None = Field(
        description="Percent busy from the agent's telemetry; null when not reported."
    )
    process: str = Field(description="The application attached over IPUoF; empty when none.")


class MachineMap(_Shape):
    index: int
    agent_id: str
    allocation_id: str | None
    reachable: bool
    state: str = Field(description="`reachable`, `unreachable` or `unknown` (never heard from).")
    reason: str
    links_down: tuple[str, ...] = Field(description="GW-Links and Sync-Links down, as sentences.")
    ipus: tuple[IpuCell, ...]


class DomainMap(_Shape):
    index: int
    topology: str
    machines: tuple[MachineMap, ...] = Field(description="In ladder order.")


# Domain ``a`` is cabled to domain ``b`` through GW-Links.
class GwLink(_Shape):
    a: int
    b: int


class AllocationMap(_Shape):
    id: str
    machines: tuple[int, ...]
    size: int


# Enough of a partition to colour the map; details come from the partition endpoints.
class PartitionSummary(_Shape):
    id: str
    allocation_id: str
    cluster_id: str
    size: int
    ready_state: str
    operation_state: str
    slots: tuple[int, ...]


class ClusterMap(_Shape):
    id: str
    machine_type: str
    ild_topology: str
    gw_topology: str
    num_ipus: int
    domains: tuple[DomainMap, ...]
    gw_links: tuple[GwLink, ...] = Field(
        description="Pairs of IPU-Link domains joined by GW-Links."
    )
    allocations: tuple[AllocationMap, ...]
    partitions: tuple[PartitionSummary, ...]

    def ipus(self) -> Iterator[IpuCell]:
        """Every IPU, domain by domain, machines in ladder order."""
        for domain in self.domains:
            for machine in domain.machines:
                yield from machine.ipus

    def allocation_machines(self) -> dict[str, tuple[int, ...]]:
        """Allocation id → its machines."""
        return {a.id: a.machines for a in self.allocations}


class PodMap(_Shape):
    clusters: tuple[ClusterMap, ...]


# What a partition of ``size`` IPUs would get in the allocation now.
class SizeOutlook(_Shape):
    size: int
    fits: bool
    slots: tuple[int, ...] = Field(description="Where placement would put it now.")
    reasons: tuple[str, ...] = Field(description="Why it does not fit, when it does not.")


class Fragmentation(_Shape):
    allocation_id: str
    cluster_id: str
    size: int
    free_ipus: int
    unavailable_ipus: int = Field(description="Free but faulty or on unreachable machines.")
    largest_free_block: int = Field(description="IPUs in the largest free aligned block.")
    largest_free_block_slots: tuple[int, ...]
    free_blocks: dict[int, int] = Field(description="Maximal free aligned blocks per size.")
    sizes: tuple[SizeOutlook, ...]
