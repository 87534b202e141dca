"""Typed records of the admin API's replies (``vpod.admin.v1``).

Like :mod:`.records`: read from the wire once, domain enums where the domain
has one, ``raw`` keeps the wire message for tools that print it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from vpod.domain.topology import GwTopology, IldTopology
from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb
from vpod.wire import field_copy

from .raw_record import RawRecord
from .records import FromWire, Partition, PartitionStatus, copy_fields


class AgentState(enum.Enum):
    """Whether the controller hears from an agent; values are the wire numbers."""

    ONLINE = 1
    OFFLINE = 2
    DISCOVERED = 3
    """Registered itself; no administrator has created it yet."""


class FaultKind(enum.Enum):
    """Faults an emulated machine can be told to have; values are the wire numbers."""

    IPU = 1
    LINK_DOWN = 2
    AGENT_HANG = 3
    AGENT_SLOW = 4


class LinkTest(enum.Enum):
    """The cluster tests; values are the wire numbers."""

    CABLING = 1
    IPU_LINK = 2
    GW_LINK = 3
    SYNC_LINK = 4
    TRAFFIC = 5


_ILD_TOPOLOGY = {
    apb.ILD_TOPOLOGY_TORUS: IldTopology.TORUS,
    apb.ILD_TOPOLOGY_MESH: IldTopology.MESH,
}
_GW_TOPOLOGY = {
    apb.CLUSTER_TOPOLOGY_LOOPED: GwTopology.LOOPED,
    apb.CLUSTER_TOPOLOGY_SWITCHED: GwTopology.SWITCHED,
}
WIRE_ILD_TOPOLOGY = {value: key for key, value in _ILD_TOPOLOGY.items()}
WIRE_GW_TOPOLOGY = {value: key for key, value in _GW_TOPOLOGY.items()}


@dataclass(frozen=True)
class Fault:
    """A fault to inject or clear; which target field matters depends on ``kind``."""

    kind: FaultKind
    device_id: int = 0
    link_id: str = ""
    delay_ms: int = 0
    reason: str = ""

    def to_wire(self) -> agpb.Fault:
        return field_copy.copy_fields(
            agpb.Fault, self, kind=agpb.FaultKind.ValueType(self.kind.value)
        )

    @classmethod
    def from_wire(cls, message: agpb.Fault) -> Fault:
        return copy_fields(cls, message, kind=FaultKind(message.kind))


@dataclass(frozen=True)
class Agent(RawRecord):
    """The V-IPU agent of one IPU-Machine as the controller knows it."""

    id: str
    host: str
    port: int
    machine_type: str
    serial: str
    ipuof_address: str
    cluster_id: str
    allocation_id: str
    state: AgentState | None
    state_detail: str
    last_seen: datetime | None
    boot_id: str
    faults: tuple[Fault, ...]

    @classmethod
    def from_wire(cls, message: apb.Agent) -> Agent:
        return copy_fields(
            cls,
            message,
            state=AgentState(message.state) if message.state else None,
            faults=tuple(Fault.from_wire(f) for f in message.faults if f.kind),
        )


@dataclass(frozen=True)
class DiscoveredAgent(FromWire):
    """One address probed (or one self-registered agent) by a discovery."""

    agent_id: str
    host: str
    port: int
    machine_type: str
    serial: str
    known: bool
    added: bool
    error: str


@dataclass(frozen=True)
class Cluster(RawRecord):
    """Agents cabled into IPU-Link domains."""

    id: str
    agent_ids: tuple[str, ...]
    num_ipulinkdomains: int
    topology: IldTopology | None
    cluster_topology: GwTopology | None
    num_ipus: int
    machine_type: str

    @classmethod
    def from_wire(cls, message: apb.Cluster) -> Cluster:
        return copy_fields(
            cls,
            message,
            topology=_ILD_TOPOLOGY.get(message.topology),
            cluster_topology=_GW_TOPOLOGY.get(message.cluster_topology),
        )


@dataclass(frozen=True)
class ClusterTestResult:
    """One test over every agent of a cluster."""

    test: LinkTest | None
    name: str
    passed: bool
    summary: str
    details: tuple[str, ...]
    agents_tested: int
    agents_failed: int


@dataclass(frozen=True)
class ClusterTestReport(RawRecord):
    """The results of a cluster test run, in the order cabling .. traffic."""

    cluster_id: str
    passed: bool
    results: tuple[ClusterTestResult, ...]

    @classmethod
    def from_wire(cls, message: apb.TestClusterReply) -> ClusterTestReport:
        results = tuple(
            copy_fields(ClusterTestResult, r, test=LinkTest(r.test) if r.test else None)
            for r in message.results
        )
        return copy_fields(cls, message, results=results)


@dataclass(frozen=True)
class Allocation(RawRecord):
    """Machines of a cluster granted to users."""

    id: str
    cluster_id: str
    agent_ids: tuple[str, ...]
    size: int
    user_ids: tuple[str, ...]
    num_partitions: int
    hosts: tuple[str, ...] = ()
    """CIDRs that may attach to its IPUs over IPUoF; empty: the controller's trusted hosts."""

    @classmethod
    def from_wire(cls, message: apb.AllocationInfo) -> Allocation:
        return copy_fields(cls, message, message.allocation, message.allocation.spec)


@dataclass(frozen=True)
class User(FromWire):
    """A holder of an access key."""

    id: str
    allocation_ids: tuple[str, ...]
    admin: bool
    created_at: datetime | None


@dataclass(frozen=True)
class CreatedUser(RawRecord):
    """A new user and its access key (shown once: the controller keeps only a hash)."""

    user: User
    access_key: str = field(repr=False)


@dataclass(frozen=True)
class AgentToken(FromWire):
    """An agent registration token (never its secret) and the agents bound to it."""

    id: str
    label: str
    created_at: datetime | None
    agent_ids: tuple[str, ...]


@dataclass(frozen=True)
class IssuedAgentToken(RawRecord):
    """A new agent token and its text ``vat_ID.SECRET`` (shown once)."""

    agent_token: AgentToken
    token: str = field(repr=False)


@dataclass(frozen=True)
class IpuLocation:
    """Where one IPU of a partition sits: agent, device, routing id."""

    agent_id: str
    device_id: int
    routing_id: int


@dataclass(frozen=True)
class PartitionInfo(RawRecord):
    """A partition of any allocation, with its status and its IPUs' machines."""

    partition: Partition
    status: PartitionStatus
    locations: tuple[IpuLocation, ...]

    @classmethod
    def from_wire(cls, message: apb.PartitionInfo) -> PartitionInfo:
        return copy_fields(
            cls,
            message,
            partition=Partition.from_wire(message.partition),
            status=PartitionStatus.from_wire(message.status),
            locations=tuple(copy_fields(IpuLocation, loc) for loc in message.locations),
        )


@dataclass(frozen=True)
class AuditEvent(FromWire):
    """One entry of the audit log."""

    id: int
    time: datetime | None
    actor: str
    action: str
    target: str
    outcome: str
    source: str
    detail: str


@dataclass(frozen=True)
class AgentFaults(RawRecord):
    """An agent's active faults after an inject or clear."""

    agent_id: str
    active_faults: tuple[Fault, ...]
