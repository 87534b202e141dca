"""The admin API's calls, described once: request building and reply reading.

Each function returns an :class:`~.grpc_transport.Rpc` that :mod:`.admin`
runs on a blocking or an asyncio transport. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict, Unpack

from vpod.domain.topology import GwTopology, IldTopology
from vpod.wire import admin_pb2 as apb
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

from .admin_records import (
    WIRE_GW_TOPOLOGY,
    WIRE_ILD_TOPOLOGY,
    Agent,
    AgentFaults,
    AgentToken,
    Allocation,
    AuditEvent,
    Cluster,
    ClusterTestReport,
    CreatedUser,
    DiscoveredAgent,
    Fault,
    IssuedAgentToken,
    LinkTest,
    PartitionInfo,
    User,
)
from .grpc_transport import Rpc, Service, nothing
from .records import IpuAttributes
from .wire_values import UINT64_MAX, stamp, whole

ADMIN_SERVICE = Service(apb.DESCRIPTOR.services_by_name["AdminService"])


class EventFilter(TypedDict, total=False):
    """Filters of the audit log; every filter given must match."""

    since: datetime
    """Inclusive; a naive datetime is UTC."""
    until: datetime
    """Exclusive."""
    actor: str
    action: str
    target: str
    outcome: str
    limit: int
    """At most this many events (0 = 100, at most 1000)."""
    before_id: int
    """Page back: the smallest id of the previous page."""


class ClusterLayout(TypedDict, total=False):
    """How a cluster's agents are cabled (unset or None: the controller's default)."""

    num_ilds: int | None
    """IPU-Link domains to split the agents into."""
    topology: IldTopology | None
    cluster_topology: GwTopology | None


class AllocationOptions(TypedDict, total=False):
    """What an allocation holds: ``size`` IPUs (the controller picks) or ``agent_ids``; and
    ``hosts`` (addresses or CIDRs) that may attach to its IPUs (none: the trusted hosts)."""

    size: int | None
    agent_ids: Sequence[str]
    hosts: Sequence[str]


def list_allocations(cluster: str | None = None) -> Rpc[list[Allocation]]:
    """The allocations granted to the caller (every one, for an administrator); users ask
    the same rpc on the user endpoint (:func:`.user_calls.list_allocations`)."""
    return ADMIN_SERVICE.call(
        "ListAllocations",
        apb.ListAllocationsRequest(cluster_id=cluster or ""),
        lambda reply: [Allocation.from_wire(a) for a in reply.allocations],
    )


def create_agent(agent_id: str, host: str, port: int, *, key: str = "") -> Rpc[Agent]:
    """Add an agent by address; ``key`` is the one it answers to (``vipu-agent
    --key-file``; empty: the key it registered with)."""
    return ADMIN_SERVICE.call(
        "CreateAgent",
        apb.CreateAgentRequest(
            agent_id=agent_id, host=host, port=whole(port, "port"), agent_key=key
        ),
        lambda reply: Agent.from_wire(reply.agent),
    )


def list_agents(cluster: str | None = None) -> Rpc[list[Agent]]:
    return ADMIN_SERVICE.call(
        "ListAgents",
        apb.ListAgentsRequest(cluster_id=cluster or ""),
        lambda reply: [Agent.from_wire(a) for a in reply.agents],
    )


def remove_agent(agent_id: str, *, force: bool = False) -> Rpc[None]:
    return ADMIN_SERVICE.call(
        "RemoveAgent", apb.RemoveAgentRequest(agent_id=agent_id, force=force), nothing
    )


def discover_agents(
    addresses: Sequence[str] = (), *, add: bool = False, key: str = ""
) -> Rpc[list[DiscoveredAgent]]:
    """Probe ``host:port`` addresses (none: the agents that registered themselves), with
    the agents' ``key`` (empty: the key each registered with)."""
    return ADMIN_SERVICE.call(
        "DiscoverAgents",
        apb.DiscoverAgentsRequest(addresses=list(addresses), add=add, agent_key=key),
        lambda reply: [DiscoveredAgent.from_wire(a) for a in reply.agents],
    )


def create_cluster(
    cluster_id: str, agent_ids: Sequence[str], **layout: Unpack[ClusterLayout]
) -> Rpc[Cluster]:
    topology = layout.get("topology")
    cluster_topology = layout.get("cluster_topology")
    request = apb.CreateClusterRequest(
        cluster_id=cluster_id,
        agent_ids=list(agent_ids),
        num_ipulinkdomains=whole(layout.get("num_ilds") or 0, "num_ilds"),
        topology=WIRE_ILD_TOPOLOGY[topology] if topology else apb.ILD_TOPOLOGY_UNSPECIFIED,
        cluster_topology=(
            WIRE_GW_TOPOLOGY[cluster_topology]
            if cluster_topology
            else apb.CLUSTER_TOPOLOGY_UNSPECIFIED
        ),
    )
    return ADMIN_SERVICE.call(
        "CreateCluster", request, lambda reply: Cluster.from_wire(reply.cluster)
    )


def list_clusters() -> Rpc[list[Cluster]]:
    return ADMIN_SERVICE.call(
        "ListClusters",
        apb.ListClustersRequest(),
        lambda reply: [Cluster.from_wire(c) for c in reply.clusters],
    )


def remove_cluster(cluster_id: str, *, force: bool = False) -> Rpc[None]:
    return ADMIN_SERVICE.call(
        "RemoveCluster", apb.RemoveClusterRequest(cluster_id=cluster_id, force=force), nothing
    )


def cluster_test(cluster_id: str, tests: Sequence[LinkTest] = ()) -> Rpc[ClusterTestReport]:
    """Run the link tests (all five when ``tests`` is empty) over every agent."""
    kinds = [agpb.LinkTestKind.ValueType(t.value) for t in tests]
    return ADMIN_SERVICE.call(
        "TestCluster",
        apb.TestClusterRequest(cluster_id=cluster_id, tests=kinds),
        ClusterTestReport.from_wire,
    )


def create_allocation(
    allocation_id: str, cluster_id: str, **options: Unpack[AllocationOptions]
) -> Rpc[Allocation]:
    """Grant machines of a cluster (see :class:`AllocationOptions`)."""
    return ADMIN_SERVICE.call(
        "CreateAllocation",
        apb.CreateAllocationRequest(
            allocation_id=allocation_id,
            cluster_id=cluster_id,
            size=whole(options.get("size") or 0, "size"),
            agent_ids=list(options.get("agent_ids", ())),
            hosts=list(options.get("hosts", ())),
        ),
        lambda reply: Allocation.from_wire(reply.allocation),
    )


def set_allocation_hosts(allocation_id: str, hosts: Sequence[str]) -> Rpc[Allocation]:
    """Replace who may attach to the allocation's IPUs over IPUoF (none: the trusted
    hosts); the agents of its partitions get the change at once."""
    return ADMIN_SERVICE.call(
        "SetAllocationHosts",
        apb.SetAllocationHostsRequest(allocation_id=allocation_id, hosts=list(hosts)),
        lambda reply: Allocation.from_wire(reply.allocation),
    )


def remove_allocation(allocation_id: str, *, force: bool = False) -> Rpc[None]:
    return ADMIN_SERVICE.call(
        "RemoveAllocation",
        apb.RemoveAllocationRequest(allocation_id=allocation_id, force=force),
        nothing,
    )


def create_user(
    user_id: str, *, allocation_ids: Sequence[str] = (), admin: bool = False
) -> Rpc[CreatedUser]:
    """Create a user; the reply carries its access key, which is shown only once."""
    return ADMIN_SERVICE.call(
        "CreateUser",
        apb.CreateUserRequest(user_id=user_id, allocation_ids=list(allocation_ids), admin=admin),
        lambda reply: CreatedUser(User.from_wire(reply.user), reply.access_key, raw=reply),
        idempotent=False,  # a second call is ALREADY_EXISTS, and the key is shown once
    )


def list_users() -> Rpc[list[User]]:
    return ADMIN_SERVICE.call(
        "ListUsers", apb.ListUsersRequest(), lambda reply: [User.from_wire(u) for u in reply.users]
    )


def remove_user(user_id: str) -> Rpc[None]:
    return ADMIN_SERVICE.call("RemoveUser", apb.RemoveUserRequest(user_id=user_id), nothing)


def rotate_user_key(user_id: str) -> Rpc[CreatedUser]:
    """Issue an existing user a new access key, shown only once; the old one stops working
    at its next call, and the user keeps its grants."""
    return ADMIN_SERVICE.call(
        "RotateUserKey",
        apb.RotateUserKeyRequest(user_id=user_id),
        lambda reply: CreatedUser(User.from_wire(reply.user), reply.access_key, raw=reply),
        idempotent=False,  # a second call makes another key; the first is shown once
    )


def grant_allocation(allocation_id: str, user_id: str) -> Rpc[User]:
    """Let an existing user use the allocation too (its key is unchanged)."""
    return ADMIN_SERVICE.call(
        "GrantAllocation",
        apb.GrantAllocationRequest(allocation_id=allocation_id, user_id=user_id),
        lambda reply: User.from_wire(reply.user),
    )


def revoke_allocation(allocation_id: str, user_id: str) -> Rpc[User]:
    """Take the allocation away from the user (at its next call)."""
    return ADMIN_SERVICE.call(
        "RevokeAllocation",
        apb.RevokeAllocationRequest(allocation_id=allocation_id, user_id=user_id),
        lambda reply: User.from_wire(reply.user),
    )


def list_partitions(
    *, allocation: str | None = None, cluster: str | None = None
) -> Rpc[list[PartitionInfo]]:
    return ADMIN_SERVICE.call(
        "ListPartitions",
        apb.ListPartitionsRequest(allocation_id=allocation or "", cluster_id=cluster or ""),
        lambda reply: [PartitionInfo.from_wire(p) for p in reply.partitions],
    )


def inject_fault(agent_id: str, fault: Fault) -> Rpc[AgentFaults]:
    return ADMIN_SERVICE.call(
        "InjectFault",
        apb.InjectFaultRequest(agent_id=agent_id, fault=_fault(fault)),
        _agent_faults,
    )


def clear_fault(agent_id: str, fault: Fault | None = None) -> Rpc[AgentFaults]:
    """Clear one fault (matched by kind and target), or all of the agent's when ``None``."""
    request = apb.ClearFaultRequest(agent_id=agent_id, all=fault is None)
    if fault is not None:
        request.fault.CopyFrom(_fault(fault))
    return ADMIN_SERVICE.call("ClearFault", request, _agent_faults)


def _fault(fault: Fault) -> agpb.Fault:
    """The fault on the wire, its numbers checked first."""
    whole(fault.device_id, "device_id")
    whole(fault.delay_ms, "delay_ms")
    return fault.to_wire()


def _agent_faults(reply: apb.InjectFaultReply | apb.ClearFaultReply) -> AgentFaults:
    faults = tuple(Fault.from_wire(f) for f in reply.active_faults if f.kind)
    return AgentFaults(reply.agent_id, faults, raw=reply)


def list_ipu_attributes(agents: Sequence[str] = ()) -> Rpc[list[IpuAttributes]]:
    return ADMIN_SERVICE.call(
        "ListIpuAttributes",
        pb.ListIPUAttributesRequest(agents=list(agents)),
        lambda reply: [IpuAttributes.from_wire(e) for e in reply.entries],
    )


def events_request(filters: EventFilter) -> apb.ListEventsRequest:
    """The ListEvents request for these filters (unset ones stay unset)."""
    request = apb.ListEventsRequest(
        actor=filters.get("actor", ""),
        action=filters.get("action", ""),
        target=filters.get("target", ""),
        outcome=filters.get("outcome", ""),
        limit=whole(filters.get("limit", 0), "limit"),
        before_id=whole(filters.get("before_id", 0), "before_id", maximum=UINT64_MAX),
    )
    since = filters.get("since")
    until = filters.get("until")
    if since is not None:
        request.since.CopyFrom(stamp(since, "since"))
    if until is not None:
        request.until.CopyFrom(stamp(until, "until"))
    return request


def list_events(**filters: Unpack[EventFilter]) -> Rpc[list[AuditEvent]]:
    """The audit log, newest first."""
    return ADMIN_SERVICE.call(
        "ListEvents",
        events_request(filters),
        lambda reply: [AuditEvent.from_wire(e) for e in reply.events],
    )


def create_agent_token(label: str = "") -> Rpc[IssuedAgentToken]:
    """A new agent registration token; its text is shown only once."""
    return ADMIN_SERVICE.call(
        "CreateAgentToken",
        apb.CreateAgentTokenRequest(label=label),
        lambda reply: IssuedAgentToken(
            AgentToken.from_wire(reply.agent_token), reply.token, raw=reply
        ),
        idempotent=False,  # each call issues another token
    )


def list_agent_tokens() -> Rpc[list[AgentToken]]:
    return ADMIN_SERVICE.call(
        "ListAgentTokens",
        apb.ListAgentTokensRequest(),
        lambda reply: [AgentToken.from_wire(t) for t in reply.agent_tokens],
    )


def remove_agent_token(token_id: str) -> Rpc[None]:
    return ADMIN_SERVICE.call(
        "RemoveAgentToken", apb.RemoveAgentTokenRequest(token_id=token_id), nothing
    )
