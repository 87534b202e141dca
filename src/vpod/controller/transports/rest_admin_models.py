"""Request and response bodies of the admin part of the HTTP API (``/api/v1/admin``).

They mirror the admin gRPC API (``vpod.admin.v1``, :mod:`.admin_grpc`) with
JSON spellings: topologies as ``torus``/``mesh`` and ``looped``/``switched``,
link tests as ``cabling``, ``ipu-link``, ``gw-link``, ``sync-link``,
``traffic``, fault kinds as ``ipu``, ``link-down``, ``agent-hang``,
``agent-slow``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, model_validator

from vpod.agent.addressing import split_host_port
from vpod.agent.model import Fault, FaultKind, LinkTestKind
from vpod.domain.catalog import IPUS_PER_MACHINE, MachineType
from vpod.domain.entities import HOST_MAX_LENGTH
from vpod.domain.host_networks import MAX_HOSTS
from vpod.domain.topology import GwTopology, IldTopology

from .rest_models import (
    MAX_LIST,
    AgentId,
    AllocationId,
    ClusterId,
    Partition,
    PartitionStatus,
    StrictBody,
    UserId,
)

MAX_DELAY_MS = 600_000
HostOrCidr = Annotated[str, Field(min_length=1, max_length=64, examples=["10.1.2.0/24"])]
"""Longest slowness a fault may inject: ten minutes."""


def _lower_dashed(value: object) -> object:
    """``IPU_LINK``, ``Ipu-Link`` and ``ipu-link`` are one spelling."""
    return value.strip().lower().replace("_", "-") if isinstance(value, str) else value


def kebab(name: str) -> str:
    return name.lower().replace("_", "-")


LinkTestName = Annotated[
    Literal["cabling", "ipu-link", "gw-link", "sync-link", "traffic"],
    BeforeValidator(_lower_dashed),
]
FaultKindName = Annotated[
    Literal["ipu", "link-down", "agent-hang", "agent-slow"], BeforeValidator(_lower_dashed)
]


def link_test_kind(name: str) -> LinkTestKind:
    return next(k for k in LinkTestKind if kebab(k.name) == name)


def fault_kind(name: str) -> FaultKind:
    return next(k for k in FaultKind if kebab(k.name) == name)


# -- agents -------------------------------------------------------------------------------


class CreateAgentBody(StrictBody):
    id: AgentId
    host: str = Field(min_length=1, max_length=HOST_MAX_LENGTH, description="Host or IP.")
    port: int = Field(ge=1, le=65535)
    machine_type: MachineType = Field(default=MachineType.BOW2000)
    serial: str = Field(default="", max_length=128)
    agent_key: str = Field(
        default="",
        max_length=256,
        description="The key the agent answers to (`vipu-agent --key-file`); empty: the key it"
        " registered with, if any. Never shown again.",
    )


class AgentOut(BaseModel):
    id: str
    host: str
    port: int
    machine_type: str
    serial: str
    cluster_id: str | None
    allocation_id: str | None
    reachable: bool = Field(description="False once the agent stopped answering heartbeats.")
    state_detail: str = Field(description="Why it is unreachable.")
    last_seen: datetime | None
    faults: list[FaultOut] = Field(description="Active injected faults, as last seen.")


class AgentList(BaseModel):
    agents: list[AgentOut]


def _host_port(address: str) -> str:
    split_host_port(address)  # raises ValueError with a sentence
    return address


Address = Annotated[
    str,
    Field(
        min_length=3,
        max_length=HOST_MAX_LENGTH + 8,
        pattern=r"^([^\s:\[\]]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$",
    ),
    AfterValidator(_host_port),
]


class DiscoverBody(StrictBody):
    addresses: list[Address] = Field(
        min_length=1, max_length=256, description="`HOST:PORT` addresses to probe."
    )
    add: bool = Field(default=False, description="Create the agents found.")
    agent_key: str = Field(
        default="",
        max_length=256,
        description="The agents' key (`vipu-agent --key-file`); empty: the key the agent at"
        " each address registered with.",
    )


class DiscoveredAgent(BaseModel):
    host: str
    port: int
    agent_id: str = ""
    machine_type: str = ""
    serial: str = ""
    known: bool = False
    added: bool = False
    error: str = Field(default="", description="Why the probe failed.")


class DiscoveredAgentList(BaseModel):
    agents: list[DiscoveredAgent]


# -- clusters -----------------------------------------------------------------------------


class CreateClusterBody(StrictBody):
    id: ClusterId
    agent_ids: list[AgentId] = Field(
        min_length=1, max_length=MAX_LIST, description="In cabling order."
    )
    num_ipulinkdomains: int = Field(default=1, ge=1, le=MAX_LIST)
    topology: IldTopology = IldTopology.TORUS
    cluster_topology: GwTopology | None = Field(
        default=None, description="Default: looped up to 256 IPUs, else switched."
    )


class ClusterOut(BaseModel):
    id: str
    agent_ids: list[str]
    num_ipulinkdomains: int
    topology: str
    cluster_topology: str
    num_ipus: int
    machine_type: str


class ClusterList(BaseModel):
    clusters: list[ClusterOut]


class TestClusterBody(StrictBody):
    tests: list[LinkTestName] = Field(
        default_factory=list, max_length=5, description="Which tests; empty: all five."
    )


class ClusterTestResult(BaseModel):
    test: str
    passed: bool
    summary: str
    details: list[str] = Field(description="One line per failure, prefixed by the agent id.")
    agents_tested: int
    agents_failed: int


class ClusterTestReport(BaseModel):
    cluster_id: str
    passed: bool
    results: list[ClusterTestResult]


# -- allocations --------------------------------------------------------------------------


class CreateAllocationBody(StrictBody):
    """Give ``size`` (the controller picks neighbouring machines) or ``agent_ids``."""

    id: AllocationId
    cluster_id: ClusterId
    size: int | None = Field(default=None, ge=1, le=65536, description="IPUs: 4, 8, 16, 32...")
    agent_ids: list[AgentId] | None = Field(default=None, max_length=MAX_LIST)
    hosts: list[HostOrCidr] = Field(
        default_factory=list,
        max_length=MAX_HOSTS,
        description="Who may attach to its IPUs over IPUoF (addresses or CIDRs); empty: the"
        " controller's trusted hosts.",
    )


class AllocationHostsBody(StrictBody):
    hosts: list[HostOrCidr] = Field(
        max_length=MAX_HOSTS,
        description="Addresses or CIDRs that may attach to the allocation's IPUs over IPUoF;"
        " empty: back to the controller's trusted hosts.",
    )


# -- users --------------------------------------------------------------------------------


class CreateUserBody(StrictBody):
    id: UserId
    allocation_ids: list[AllocationId] = Field(default_factory=list, max_length=MAX_LIST)
    admin: bool = False


class UserOut(BaseModel):
    id: str
    allocation_ids: list[str]
    admin: bool


class UserList(BaseModel):
    users: list[UserOut]


class CreatedUser(BaseModel):
    user: UserOut
    access_key: str = Field(
        description="Shown once: the controller keeps only a hash. Put it in vipu-cli.hcl."
    )


# -- partitions and faults ----------------------------------------------------------------


class PartitionWithStatus(BaseModel):
    partition: Partition
    status: PartitionStatus


class AdminPartitionList(BaseModel):
    partitions: list[PartitionWithStatus]


class FaultBody(StrictBody):
    """A fault to inject into an emulated machine; the fields a kind needs are required."""

    kind: FaultKindName
    device_id: int | None = Field(
        default=None, ge=0, lt=IPUS_PER_MACHINE, description="For `ipu`: which IPU (0-3)."
    )
    link_id: str | None = Field(
        default=None, min_length=1, max_length=64, description="For `link-down`, e.g. `gwlink0`."
    )
    delay_ms: int = Field(default=0, ge=0, le=MAX_DELAY_MS, description="For `agent-slow`.")
    reason: str = Field(default="", max_length=255)

    @model_validator(mode="after")
    def _needs_its_target(self) -> FaultBody:
        if self.kind == "ipu" and self.device_id is None:
            raise ValueError("an `ipu` fault needs device_id (0-3)")
        if self.kind == "link-down" and not self.link_id:
            raise ValueError("a `link-down` fault needs link_id (e.g. ipulink0, gwlink0)")
        return self

    def to_fault(self) -> Fault:
        kind = fault_kind(self.kind)
        return Fault(
            kind=kind,
            device_id=self.device_id if kind is FaultKind.IPU else None,
            link_id=self.link_id if kind is FaultKind.LINK_DOWN else None,
            delay_s=self.delay_ms / 1000 if kind is FaultKind.AGENT_SLOW else 0.0,
            reason=self.reason,
        )


class FaultOut(BaseModel):
    kind: str
    device_id: int | None
    link_id: str | None
    delay_ms: int
    reason: str
    description: str

    @classmethod
    def of(cls, fault: Fault) -> FaultOut:
        return cls(
            kind=kebab(fault.kind.name),
            device_id=fault.device_id,
            link_id=fault.link_id,
            delay_ms=round(fault.delay_s * 1000),
            reason=fault.reason,
            description=fault.describe(),
        )


class AgentFaults(BaseModel):
    agent_id: str
    active_faults: list[FaultOut]


# -- audit log ----------------------------------------------------------------------------


class EventOut(BaseModel):
    """One audit-log entry: who did what to which target, from where, and how it ended."""

    id: int = Field(description="Grows in append order; pass the smallest as `before_id`.")
    time: datetime
    actor: str = Field(description="A user id, `anonymous` (open mode) or `system`.")
    action: str = Field(description="e.g. `create_partition`, `authenticate`.")
    target: str
    outcome: str = Field(description="`ok`, `failed`, `denied`, `detected` ...")
    source: str = Field(description="Transport and peer, e.g. `http:10.0.0.5:51234`.")
    detail: str


class EventList(BaseModel):
    events: list[EventOut] = Field(description="Newest first.")
