"""What an agent knows and says about its machine, as plain values.

These types are shared by the backend (which keeps the machine's state), the
gRPC service (which turns them into ``vpod.agent.v1`` messages) and the client
(which turns messages back into them), so the controller never handles
protobuf objects for agents. Times are seconds since the epoch from the
injected clock. Routing and sync types are the domain's enums; ``None`` means
unset (the wire's ``*_UNDEFINED``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from vpod.domain.catalog import MachineType
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType


class FaultKind(enum.Enum):
    """What can be made to go wrong; values are the wire numbers."""

    IPU = 1
    """One IPU fails: its application is detached; configure, attach and reset refuse it."""
    LINK_DOWN = 2
    """One link goes down: link training over it fails."""
    AGENT_HANG = 3
    """The agent stops answering management calls until the fault is cleared."""
    AGENT_SLOW = 4
    """The agent answers management calls only after a delay."""


class LinkKind(enum.Enum):
    IPU_LINK = 1
    GW_LINK = 2
    SYNC_LINK = 3


class LinkTestKind(enum.Enum):
    """The tests ``vipu-admin test cluster`` runs, in the order it shows them."""

    CABLING = 1
    IPU_LINK = 2
    GW_LINK = 3
    SYNC_LINK = 4
    TRAFFIC = 5

    @property
    def display_name(self) -> str:
        return _TEST_NAMES[self]


_TEST_NAMES = {
    LinkTestKind.CABLING: "cabling",
    LinkTestKind.IPU_LINK: "IPU-Link",
    LinkTestKind.GW_LINK: "GW-Link",
    LinkTestKind.SYNC_LINK: "Sync-Link",
    LinkTestKind.TRAFFIC: "traffic",
}


class EventKind(enum.Enum):
    ATTACHED = 1
    DETACHED = 2
    CONFIGURED = 3
    RELEASED = 4
    RESET = 5
    FAULT_INJECTED = 6
    FAULT_CLEARED = 7


@dataclass(frozen=True, slots=True)
class IpuIdentity:
    """One IPU of a machine as IPUoF clients and the controller see it."""

    device_id: int
    chip_id: str
    serial: str
    ipu_id: int
    ipu_arch_id: int
    server_port: int
    rdma_port: int


@dataclass(frozen=True, slots=True)
class MachineEndpoints:
    """Where a machine is reached: the agent's gRPC address and the IPUoF ports by device id."""

    management_address: str = ""
    ipuof_address: str = "127.0.0.1"
    server_ports: tuple[int, ...] = (50052, 50053, 50054, 50055)
    rdma_ports: tuple[int, ...] = (7471, 7472, 7473, 7474)


@dataclass(frozen=True, slots=True)
class MachineIdentity:
    """Who an agent is. ``boot_id`` changes at every start: configurations did not survive."""

    agent_id: str
    machine_type: MachineType
    serial: str
    management_address: str
    ipuof_address: str
    ipus: tuple[IpuIdentity, ...]
    firmware_version: str
    driver_version: str
    gateway_sw_version: str
    ipum_sw_version: str
    agent_version: str
    boot_id: str

    def ipu(self, device_id: int) -> IpuIdentity:
        for ipu in self.ipus:
            if ipu.device_id == device_id:
                return ipu
        raise KeyError(f"machine {self.agent_id} has no IPU with device id {device_id}")


@dataclass(frozen=True, slots=True)
class IpuAssignment:
    """One IPU of this machine in a partition."""

    device_id: int
    routing_id: int
    segment_id: int = 0
    gcd_id: int = 0


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """This machine's part of a partition, as the controller sends it.

    ``generation`` grows each time the controller changes the partition
    (relocation); the pair (partition_id, generation) names one configuration,
    which is what makes configure idempotent.
    """

    partition_id: str
    generation: int
    ipus: tuple[IpuAssignment, ...]
    partition_size: int = 0
    """IPUs in the whole partition; 0 means just the IPUs listed here."""
    num_ipulink_segments: int = 1
    ipulink_routing: IpuLinkRouting | None = None
    sync_type: SyncType | None = None
    gw_routing: GwRouting | None = None
    isolate_from_neighbours: bool = True
    reconfigurable: bool = False

    @property
    def device_ids(self) -> tuple[int, ...]:
        return tuple(sorted(ipu.device_id for ipu in self.ipus))

    def normalised(self) -> PartitionConfig:
        """The same configuration with defaults filled in and IPUs in device order."""
        return replace(
            self,
            ipus=tuple(sorted(self.ipus, key=lambda ipu: ipu.device_id)),
            partition_size=self.partition_size or len(self.ipus),
            num_ipulink_segments=self.num_ipulink_segments or 1,
        )


@dataclass(frozen=True, slots=True)
class ConfiguredPartition:
    """A partition as the machine holds it."""

    config: PartitionConfig
    attached_device_ids: tuple[int, ...] = ()
    reset_count: int = 0
    configured_at: float = 0.0
    allowed_hosts: tuple[str, ...] = ()
    """Who may attach over IPUoF (CIDRs); the agent's service fills it in, not the machine."""


@dataclass(frozen=True, slots=True)
class ConfigureOutcome:
    partition: ConfiguredPartition
    changed: bool
    """False when the same configuration was already in force (a repeated call)."""


@dataclass(frozen=True, slots=True)
class Fault:
    """An injected fault. Two faults with the same :attr:`target` are the same fault."""

    kind: FaultKind
    device_id: int | None = None
    link_id: str | None = None
    delay_s: float = 0.0
    reason: str = ""

    @classmethod
    def of_kind(
        cls,
        kind: FaultKind,
        *,
        device_id: int | None,
        link_id: str | None,
        delay_s: float,
        reason: str,
    ) -> Fault:
        """A fault keeping only what its kind uses: an IPU's device, a link, a delay."""
        return cls(
            kind=kind,
            device_id=device_id if kind is FaultKind.IPU else None,
            link_id=link_id if kind is FaultKind.LINK_DOWN else None,
            delay_s=delay_s if kind is FaultKind.AGENT_SLOW else 0.0,
            reason=reason,
        )

    @property
    def target(self) -> tuple[FaultKind, int | None, str | None]:
        return (self.kind, self.device_id, self.link_id)

    def describe(self) -> str:
        """A phrase for health reports and messages, e.g. ``IPU 2 faulted (overheating)``."""
        match self.kind:
            case FaultKind.IPU:
                text = f"IPU {self.device_id} faulted"
            case FaultKind.LINK_DOWN:
                text = f"link {self.link_id} down"
            case FaultKind.AGENT_HANG:
                text = "agent hanging"
            case FaultKind.AGENT_SLOW:
                text = f"agent slow ({self.delay_s:g} s per call)"
        return f"{text} ({self.reason})" if self.reason else text


@dataclass(frozen=True, slots=True)
class Holder:
    """The process holding an IPU, as the application said when it attached (all optional)."""

    pid: int = 0
    host: str = ""
    command: str = ""

    def describe(self, client: str = "") -> str:
        """``pid 4242 on host1 (python train.py)``, or the connection's address if unknown."""
        if not self.pid and not self.host:
            return client or "an unknown application"
        text = f"pid {self.pid}" if self.pid else "a process"
        if self.host:
            text += f" on {self.host}"
        if self.command:
            text += f" ({self.command})"
        return text


@dataclass(frozen=True, slots=True)
class IpuAttachment:
    """An application attached to one IPU over IPUoF."""

    attachment_id: int
    partition_id: str
    device_id: int
    routing_id: int
    client: str
    """The application's address (``host:port`` of its connection)."""
    holder: Holder = Holder()
    attached_at: float = 0.0


@dataclass(frozen=True, slots=True)
class IpuTelemetry:
    """What an IPU's sensors and counters say (emulated: see :mod:`vpod.agent.telemetry`)."""

    utilisation: float = 0.0
    """0..1: the share of the IPU's tiles busy."""
    temperature_c: float = 0.0
    power_w: float = 0.0
    link_errors: int = 0
    """IPU-Link errors counted on the IPU's links since the agent started."""
    links_down: int = 0
    """The IPU's IPU-Links that are down now."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """Something that happened on the machine; sequences start at 1 for each boot."""

    sequence: int
    kind: EventKind
    time: float
    partition_id: str = ""
    device_id: int | None = None
    generation: int = 0
    client: str = ""
    evicted: bool = False
    """DETACHED only: the agent ended the attachment; False means the application left."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class EventBatch:
    """Events after some sequence number."""

    boot_id: str
    events: tuple[AgentEvent, ...]
    last_event: int
    truncated: bool = False
    """Some events after the requested sequence were dropped from the agent's buffer."""

    @property
    def news(self) -> bool:
        """Something happened after the requested sequence: events, or word of lost ones."""
        return bool(self.events) or self.truncated


@dataclass(frozen=True, slots=True)
class IpuHealth:
    device_id: int
    healthy: bool
    fault: str = ""
    partition_id: str = ""
    attached_client: str = ""
    holder: Holder = Holder()
    attached_since: float = 0.0
    routing_id: int = 0
    """Routing id of the IPU in its partition (meaningful when ``partition_id`` is set)."""
    telemetry: IpuTelemetry = IpuTelemetry()
    serial: str = ""

    @property
    def attached(self) -> bool:
        return bool(self.attached_client)


@dataclass(frozen=True, slots=True)
class LinkHealth:
    link_id: str
    kind: LinkKind
    device_id: int | None
    up: bool
    fault: str = ""


@dataclass(frozen=True, slots=True)
class MachineHealth:
    """A heartbeat: per-IPU and per-link state, active faults, recent events."""

    agent_id: str
    boot_id: str
    ipus: tuple[IpuHealth, ...]
    links: tuple[LinkHealth, ...]
    faults: tuple[Fault, ...] = ()
    events: EventBatch | None = None
    fleet_id: str = ""
    """The agent process hosting the machine, shared by every machine it hosts ("": its own)."""

    @property
    def healthy(self) -> bool:
        return all(ipu.healthy for ipu in self.ipus) and all(link.up for link in self.links)


@dataclass(frozen=True, slots=True)
class LinkTestResult:
    test: LinkTestKind
    passed: bool
    summary: str
    details: tuple[str, ...] = field(default=())
