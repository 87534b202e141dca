"""A partition's shapes: the request that creates one, the partition, its status.

Field names follow the wire API (``ipulink_routing_type``,
``num_ipulink_segments`` ...), so one vocabulary serves gRPC and JSON.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import (
    MAX_IPUS,
    AllocationId,
    ClusterId,
    GwRoutingIn,
    PartitionId,
    RoutingIn,
    StrictBody,
    SyncTypeIn,
)


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


class PartitionWithStatus(BaseModel):
    partition: Partition
    status: PartitionStatus


class AdminPartitionList(BaseModel):
    partitions: list[PartitionWithStatus]
