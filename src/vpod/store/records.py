"""Values the store keeps that are not pure domain entities.

Agents, clusters, allocations and users travel as the domain's own entities
(:mod:`vpod.domain.entities`). What the controller adds around them lives
here: an agent's health, a stored partition (its resolved spec, its IPUs,
its life-cycle state and the bookkeeping the wire's ``PartitionStatus``
reports), the occupancy of a cluster as placement needs it, audit events and
leader leases. All are frozen values; the store never hands out ORM rows.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict

from vpod.domain.catalog import IPUS_PER_MACHINE
from vpod.domain.entities import Cluster
from vpod.domain.partition_states import PartitionState
from vpod.domain.partitions import PartitionSpec
from vpod.placement.results import PartitionPlacement
from vpod.placement.snapshot import PartitionFootprint, Snapshot

# -- agents ---------------------------------------------------------------------------------


class AgentHealthState(enum.Enum):
    """Whether the controller can reach an agent."""

    UNKNOWN = "unknown"
    """Never heard from since it was registered."""
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True, slots=True)
class AgentHealth:
    """The last thing the controller learnt about an agent's reachability."""

    agent_id: str
    state: AgentHealthState = AgentHealthState.UNKNOWN
    last_heartbeat: datetime | None = None
    """When the agent last answered (given by the caller's clock)."""
    reason: str = ""
    """Why it is unreachable, as a sentence; empty when reachable."""
    device_faults: tuple[tuple[int, str], ...] = ()
    """The faulty IPUs its machine last reported, as (device id, why) by device id."""


# -- partitions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionIpu:
    """One IPU of a stored partition: where it is and its place in the partition."""

    slot: int
    """The IPU's slot in its cluster's pod (``4 * machine + ladder rank``)."""
    routing_id: int
    """Logical id in the partition, ``0..size-1``."""
    segment: int
    """IPU-Link segment of the partition (the wire's ``ipulink_domain_routing_id``)."""
    gcd: int
    """Graph compile domain the IPU belongs to."""

    @property
    def machine(self) -> int:
        return self.slot // IPUS_PER_MACHINE


def ipus_of_placement(placement: PartitionPlacement) -> tuple[PartitionIpu, ...]:
    """The IPU rows of a placement, in routing order."""
    segment_of: dict[int, int] = {}
    for index, segment in enumerate(placement.segments):
        for slot in segment.slots:
            segment_of[slot] = index
    gcd_of = {rid: g for g, rids in enumerate(placement.gcds) for rid in rids}
    return tuple(
        PartitionIpu(slot=slot, routing_id=rid, segment=segment_of[slot], gcd=gcd_of[rid])
        for rid, slot in enumerate(placement.slots)
    )


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition as stored: spec, IPUs, state and auto-reset bookkeeping.

    ``spec.allocation_id`` and ``spec.cluster_id`` say where the partition
    lives and must be set. ``ipus`` are in routing order. ``version`` is 0 on
    a record not stored yet; the store sets it to 1 on reservation and bumps
    it on every update (compare-and-set, see ``Store.update_partition``).
    """

    spec: PartitionSpec
    ipus: tuple[PartitionIpu, ...]
    state: PartitionState
    created_at: datetime
    updated_at: datetime
    errors: tuple[str, ...] = ()
    disable_auto_reset: bool = False
    relocatable: bool = False
    max_auto_reset_retries: int = 0
    auto_reset_retry_count: int = 0
    last_auto_reset_time: datetime | None = None
    version: int = 0
    operation_owner: str | None = None
    """The controller running its operation (``replica/boot``); None when idle or unknown."""

    def __post_init__(self) -> None:
        if self.spec.allocation_id is None or self.spec.cluster_id is None:
            raise ValueError(
                f"partition {self.spec.id} must name its allocation and cluster to be stored"
            )
        check_partition_ipus(self.spec, self.ipus)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def allocation_id(self) -> str:
        assert self.spec.allocation_id is not None
        return self.spec.allocation_id

    @property
    def cluster_id(self) -> str:
        assert self.spec.cluster_id is not None
        return self.spec.cluster_id

    @property
    def slots(self) -> tuple[int, ...]:
        """The IPU slots in routing order."""
        return tuple(ipu.slot for ipu in self.ipus)

    def footprint(self) -> PartitionFootprint:
        """What placement needs to know about this partition."""
        return PartitionFootprint(
            allocation_id=self.allocation_id,
            slots=self.slots,
            num_gcds=self.spec.num_gcds,
            reconfigurable=self.spec.reconfigurable,
        )


def check_partition_ipus(spec: PartitionSpec, ipus: tuple[PartitionIpu, ...]) -> None:
    """Refuse IPU lists that cannot belong to ``spec`` (a caller bug, hence ``ValueError``)."""
    if len(ipus) != spec.size:
        raise ValueError(f"partition {spec.id} has size {spec.size} but {len(ipus)} IPUs")
    if [ipu.routing_id for ipu in ipus] != list(range(spec.size)):
        raise ValueError(f"the IPUs of partition {spec.id} must be in routing order 0..size-1")
    if len({ipu.slot for ipu in ipus}) != len(ipus):
        raise ValueError(f"partition {spec.id} lists an IPU slot twice")


class PartitionChanges(TypedDict, total=False):
    """What ``Store.update_partition`` may change; every key is optional."""

    state: PartitionState
    errors: tuple[str, ...]
    disable_auto_reset: bool
    relocatable: bool
    max_auto_reset_retries: int
    auto_reset_retry_count: int
    last_auto_reset_time: datetime | None
    ipus: tuple[PartitionIpu, ...]
    """New IPUs (relocation): the old IPU rows are released in the same transaction."""
    operation_owner: str | None


# -- occupancy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Occupancy:
    """Everything placement needs about one cluster, read in one consistent snapshot.

    Field names match :meth:`vpod.placement.Snapshot.build`; :meth:`snapshot`
    builds it. ``unavailable_machines`` are the machines whose agent is
    unreachable (an agent never heard from counts as available);
    ``faulty_slots`` the IPUs whose agent last reported them faulty (or with
    an IPU-Link down), as the leader stored them from heartbeats.
    """

    cluster: Cluster
    allocations: Mapping[str, tuple[int, ...]]
    partitions: Mapping[str, PartitionFootprint]
    unavailable_machines: frozenset[int]
    faulty_slots: frozenset[int] = frozenset()

    @property
    def machine_names(self) -> tuple[str, ...]:
        """The agent of each machine, for messages."""
        return self.cluster.agent_ids

    def snapshot(self, *, unavailable_slots: frozenset[int] = frozenset()) -> Snapshot:
        """The placement snapshot of this occupancy.

        Placement avoids the stored ``faulty_slots`` and ``unavailable_slots``
        too (the caller's fresher view, e.g. the leader's latest heartbeats).
        """
        return Snapshot.build(
            self.cluster.pod(),
            allocations=self.allocations,
            partitions=self.partitions,
            unavailable_slots=self.faulty_slots | unavailable_slots,
            unavailable_machines=self.unavailable_machines,
            machine_names=self.machine_names,
        )


# -- audit events and leases ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One entry of the audit log: who did what to which target, and how it went."""

    time: datetime
    actor: str
    """Who asked: a user id, ``admin``, or a component such as ``controller``."""
    action: str
    """What was asked, e.g. ``partition.create``."""
    target: str
    """What it was done to, e.g. ``partition/p1``."""
    outcome: str
    """How it ended, e.g. ``ok``, ``refused``, ``failed``."""
    source: str = ""
    """Where the request came from: transport and peer address."""
    detail: str = ""
    """A sentence with the particulars (a refusal's reason, an error)."""
    id: int = 0
    """Assigned by the store in append order; 0 before it is stored."""


class AuditEntry(TypedDict):
    """What a caller gives ``Store.append_event``: an :class:`AuditEvent` but its ``id``, with
    ``source`` and ``detail`` optional as there."""

    time: datetime
    actor: str
    action: str
    target: str
    outcome: str
    source: NotRequired[str]
    detail: NotRequired[str]


@dataclass(frozen=True, slots=True)
class Lease:
    """A named lease (leader election): who holds it, until when, in which term."""

    name: str
    holder: str
    expires_at: datetime
    term: int
    """Fencing token: grows by one each time the lease passes to a new holder."""


@dataclass(frozen=True)
class PartitionKeyRecord:
    """A key that may use one partition: who minted it, for which, and when."""

    id: str
    owner_id: str
    partition_id: str
    created_at: datetime
