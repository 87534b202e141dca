"""Request and response bodies of the user part of the HTTP API (they define its OpenAPI).

Field names follow the wire API (``ipulink_routing_type``,
``num_ipulink_segments`` ...), so one vocabulary serves gRPC and JSON.
Enumerations are strings: requests take the CLI spellings (``dnc``,
``ringswnc``, ``ring``, ``c2-compatible``) or the wire names (``IRT_DNC``,
``GRT_RING``, ``ST_GS2_DEFAULT``), case-insensitive, ``-`` and ``_``
ignored; responses give the CLI spellings for routing and sync types and
the wire names without prefix for states (``ACTIVE``, ``IDLE``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from vpod.domain.errors import InvalidSpec
from vpod.domain.naming import ID_MAX_LENGTH, ID_RULE, check_id
from vpod.domain.routing import (
    SUPPORTED_SYNC_TYPES,
    GwRouting,
    IpuLinkRouting,
    SyncType,
    parse_gw_routing,
    parse_ipulink_routing,
    parse_sync_type,
)

MAX_IPUS = 65536
"""Upper bound on any IPU count in a request (a pod of 1,024 machines has 4,096)."""
MAX_LIST = 1024
"""Upper bound on list lengths in a request (agents of a cluster, addresses to probe)."""

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

E = TypeVar("E")


def _id_of(kind: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            return check_id(kind, value)
        except InvalidSpec as exc:
            raise ValueError(str(exc)) from None

    return check


def _id_schema(kind: str) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": ID_MAX_LENGTH,
            "pattern": ID_PATTERN,
            "description": f"A {kind} id: {ID_RULE}.",
        }
    )


PartitionId = Annotated[str, AfterValidator(_id_of("partition")), _id_schema("partition")]
AllocationId = Annotated[str, AfterValidator(_id_of("allocation")), _id_schema("allocation")]
ClusterId = Annotated[str, AfterValidator(_id_of("cluster")), _id_schema("cluster")]
AgentId = Annotated[str, AfterValidator(_id_of("agent")), _id_schema("agent")]
UserId = Annotated[str, AfterValidator(_id_of("user")), _id_schema("user")]
"""Ids checked by the domain's rule (its message on failure), with the rule in the schema."""


def _parser(parse: Callable[[str], E], prefix: str) -> Callable[[object], E | object]:
    """Accept a CLI spelling or a wire name (``IRT_DNC``): strip the prefix, then parse."""

    def before(value: object) -> E | object:
        if not isinstance(value, str):
            return value  # an enum member already, or a type error the model reports
        text = value.strip()
        if text.upper().startswith(prefix):
            text = text[len(prefix) :]
        try:
            return parse(text)
        except InvalidSpec as exc:
            raise ValueError(str(exc)) from None

    return before


def _choices(*names: str) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(names)})


RoutingIn = Annotated[
    IpuLinkRouting,
    BeforeValidator(_parser(parse_ipulink_routing, "IRT_")),
    _choices(*(r.cli_name for r in IpuLinkRouting), *(f"IRT_{r.name}" for r in IpuLinkRouting)),
]
GwRoutingIn = Annotated[
    GwRouting,
    BeforeValidator(_parser(parse_gw_routing, "GRT_")),
    _choices(*(r.cli_name for r in GwRouting), *(f"GRT_{r.name}" for r in GwRouting)),
]
SyncTypeIn = Annotated[
    SyncType,
    BeforeValidator(_parser(parse_sync_type, "ST_")),
    _choices(
        *(s.cli_name for s in SUPPORTED_SYNC_TYPES), *(f"ST_{s.name}" for s in SUPPORTED_SYNC_TYPES)
    ),
]


class StrictBody(BaseModel):
    """Request bodies refuse unknown fields: a typo must not be silently ignored."""

    model_config = ConfigDict(extra="forbid")


# -- requests -----------------------------------------------------------------------------


class RequestedIpu(StrictBody):
    """One IPU the user chooses for a partition (the wire's ``PartitionIpu``)."""

    ipulink_domain_topology_id: int = Field(ge=0, le=MAX_IPUS, description="IPU-Link domain.")
    topology_id: int = Field(ge=0, le=MAX_IPUS, description="The IPU's place in its domain.")
    routing_id: int = Field(ge=0, le=MAX_IPUS, description="Its logical id in the partition.")


class CreatePartitionBody(StrictBody):
    """What ``vipu create partition`` asks for: the wire's ``PartitionRequirements`` and options.

    Omitted (or 0) fields take the defaults of vipu-system.md §3.
    """

    id: PartitionId
    size: int = Field(ge=1, le=MAX_IPUS, description="IPUs: 1, 2, 4, 8, 16, 64 or k x 64.")
    allocation_id: AllocationId | None = Field(
        default=None, description="Allocation to place it in; default: any you may use."
    )
    cluster_id: ClusterId | None = Field(
        default=None, description="Cluster (deprecated, use allocation); required with `ipus`."
    )
    num_ipulink_segments: int = Field(default=0, ge=0, le=MAX_IPUS)
    num_gcds: int = Field(default=0, ge=0, le=MAX_IPUS)
    num_replicas: int = Field(default=0, ge=0, le=MAX_IPUS)
    reconfigurable: bool = False
    ipulink_routing_type: RoutingIn | None = None
    gw_routing_type: GwRoutingIn | None = None
    sync_type: SyncTypeIn | None = None
    ipus: list[RequestedIpu] | None = Field(
        default=None, max_length=MAX_IPUS, description="Explicit IPUs; default: placement picks."
    )
    disable_auto_reset: bool = False
    relocatable: bool = False


# -- responses ----------------------------------------------------------------------------


class Version(BaseModel):
    version: str = Field(description="The V-IPU release whose API this controller serves.")
    ipuof_server_version: str


class PartitionIpuOut(BaseModel):
    """One IPU of a partition: where it is in the fabric and on which machine."""

    routing_id: int
    ipulink_domain_topology_id: int
    ipulink_domain_routing_id: int = Field(description="The partition's segment holding it.")
    topology_id: int
    gcd: int
    agent_id: str
    device_id: int


class Partition(BaseModel):
    id: str
    allocation_id: str
    cluster_id: str
    size: int
    num_ipulink_segments: int
    num_gcds: int
    num_replicas: int
    reconfigurable: bool
    ipulink_routing_type: str = Field(examples=["dnc"])
    gw_routing_type: str | None = Field(description="Multi-segment partitions only.")
    sync_type: str = Field(examples=["c2-compatible"])
    ready_state: str = Field(examples=["ACTIVE"])
    operation_state: str = Field(examples=["IDLE"])
    disable_auto_reset: bool
    relocatable: bool
    ipuof_server_version: str
    created_at: datetime
    updated_at: datetime
    ipus: list[PartitionIpuOut] = Field(description="In routing order.")


class PartitionList(BaseModel):
    partitions: list[Partition]


class PartitionStatus(BaseModel):
    partition_id: str
    ready_state: str = Field(examples=["ACTIVE"])
    operation_state: str = Field(examples=["IDLE"])
    errors: list[str]
    max_auto_reset_retries: int
    auto_reset_retry_count: int
    last_auto_reset_time: datetime | None


class IpuofDevice(BaseModel):
    """One device of a static IPUoF config file (vipu-system.md §5)."""

    ip: str
    server_port: int
    rdma_port: int
    device_id: int
    ipulink_segment_id: int
    routing_id: int
    ipu_arch_id: int
    ipu_id: int
    chip_id: str
    gwsw_version: str


class IpuofConfigFile(BaseModel):
    """One GCD's static IPUoF config: save it as ``<partition>_gcd<N>.conf``."""

    devices: list[IpuofDevice]
    attributes: dict[str, str]


class IpuofConfigSet(BaseModel):
    """Every GCD's config file of a partition, by file name."""

    partition_id: str
    ipuof_server_version: str
    files: dict[str, IpuofConfigFile] = Field(
        description="`<partition>_gcd<N>.conf` -> its content."
    )


class AllocationOut(BaseModel):
    id: str
    cluster_id: str
    agent_ids: list[str]
    size: int = Field(description="IPUs.")
    user_ids: list[str] = Field(
        description="Users granted it (shown to admins, and to all without --secure)."
    )
    num_partitions: int
    hosts: list[str] = Field(
        default_factory=list,
        description="CIDRs whose applications may attach to its IPUs over IPUoF; empty: the"
        " controller's trusted hosts (`vipu-server --trusted-hosts`).",
    )


class AllocationList(BaseModel):
    allocations: list[AllocationOut]


class IpuAttributesOut(BaseModel):
    device_id: int
    attributes: dict[str, str]


class AgentIpuAttributes(BaseModel):
    agent_id: str
    ipus: list[IpuAttributesOut] = Field(description="Empty when the agent did not answer.")


class IpuAttributeList(BaseModel):
    agents: list[AgentIpuAttributes]
