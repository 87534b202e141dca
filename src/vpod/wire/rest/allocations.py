"""An allocation's shapes: creating one, setting its hosts, and the allocation."""

from __future__ import annotations

from pydantic import BaseModel, Field

from vpod.domain.host_networks import MAX_HOSTS

from .fields import MAX_LIST, AgentId, AllocationId, ClusterId, HostOrCidr, StrictBody


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
