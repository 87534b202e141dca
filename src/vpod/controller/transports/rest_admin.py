"""The admin endpoints under ``/api/v1/admin``: what :mod:`.admin_grpc` serves, as JSON.

Every endpoint needs an administrator when the controller runs with
``--secure`` (403 otherwise); without it, everyone is one. Like
:mod:`.rest_user`, a module-level router whose handlers take their
use-cases as dependencies (:mod:`.rest_deps`).
"""

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from vpod.domain.entities import Cluster
from vpod.wire.field_copy import copy_fields
from vpod.wire.rest.agents import (
    AgentFaults,
    AgentList,
    AgentOut,
    CreateAgentBody,
    DiscoverBody,
    DiscoveredAgent,
    DiscoveredAgentList,
    FaultBody,
    FaultKindName,
)
from vpod.wire.rest.allocations import (
    AllocationHostsBody,
    AllocationList,
    AllocationOut,
    CreateAllocationBody,
)
from vpod.wire.rest.clusters import (
    ClusterList,
    ClusterOut,
    ClusterTestReport,
    ClusterTestResult,
    CreateClusterBody,
    TestClusterBody,
)
from vpod.wire.rest.events import EventList, EventOut
from vpod.wire.rest.ipu_attributes import IpuAttributeList
from vpod.wire.rest.partitions import AdminPartitionList, PartitionWithStatus
from vpod.wire.rest.users import CreatedUser, CreateUserBody, UserList, UserOut

from ..audit_log import DEFAULT_LIMIT, MAX_EVENT_ID, MAX_LIMIT, EventFilter
from ..listings import AgentRow
from .rest_auth import AsAdmin, admin_caller
from .rest_convert import (
    allocation_out,
    allocations_out,
    attributes_out,
    fault_of,
    fault_out,
    link_test_kind,
    partitions_out,
    status_out,
)
from .rest_deps import (
    AllocationHostsDep,
    AuditLogDep,
    AuthenticatorDep,
    FleetDep,
    InventoryDep,
    ListingsDep,
    SettingsDep,
    TeardownDep,
    ViewsDep,
)
from .rest_routes import Routes
from .rest_user import API_PREFIX, ClusterQuery
from .wire_convert import cluster_test_reply

ADMIN_PREFIX = f"{API_PREFIX}/admin"

IdPath = Annotated[str, Path(description="The id.")]
ForceQuery = Annotated[bool, Query(description="Also remove what it holds.")]


def cluster_out(cluster: Cluster) -> ClusterOut:
    return ClusterOut(
        id=cluster.id,
        agent_ids=list(cluster.agent_ids),
        num_ipulinkdomains=cluster.num_domains,
        topology=cluster.ild_topology.value,
        cluster_topology=cluster.gw_topology.value,
        num_ipus=cluster.num_ipus,
        machine_type=cluster.machine_type.value,
    )


def agent_out(row: AgentRow) -> AgentOut:
    agent, health = row.agent, row.health
    return AgentOut(
        id=agent.id,
        host=agent.host,
        port=agent.port,
        machine_type=agent.machine_type.value,
        serial=agent.serial,
        cluster_id=row.cluster_id or None,
        allocation_id=row.allocation_id or None,
        reachable=health.reachable,
        state_detail=health.reason,
        last_seen=health.last_seen,
        faults=[fault_out(f) for f in health.faults],
    )


# Every endpoint needs an admin; handlers that act as the caller also take it (cached).
router = APIRouter(prefix=ADMIN_PREFIX, dependencies=[Depends(admin_caller)])
"""The admin API (``create_http_app`` includes it)."""

agent_routes = Routes(router, "admin: agents")
fault_routes = Routes(router, "admin: faults")
cluster_routes = Routes(router, "admin: clusters")
allocation_routes = Routes(router, "admin: allocations")
user_routes = Routes(router, "admin: users")
partition_routes = Routes(router, "admin: partitions")
audit_routes = Routes(router, "admin: audit log")

Filter = Annotated[str, Query(max_length=200)]

# -- agents


@agent_routes.creates("/agents", 400, 401, 403, 409, 503)
async def create_agent(
    caller: AsAdmin, body: CreateAgentBody, inventory: InventoryDep, listings: ListingsDep
) -> AgentOut:
    """Register the agent of one IPU-Machine (`vipu-admin create agent`)."""
    agent = await inventory.create_agent(
        caller,
        body.id,
        body.host,
        body.port,
        machine_type=body.machine_type,
        serial=body.serial,
        key=body.agent_key,
    )
    return agent_out(await listings.new_agent(agent))


@agent_routes.get("/agents", 400, 401, 403, 503)
async def list_agents(
    listings: ListingsDep,
    cluster: ClusterQuery = None,
) -> AgentList:
    """Every agent with its cluster, allocation and reachability (`vipu-admin list agents`)."""
    return AgentList(agents=[agent_out(row) for row in await listings.agents(cluster or None)])


@agent_routes.no_content("delete", "/agents/{agent_id}", 400, 401, 403, 404, 409, 503)
async def remove_agent(
    caller: AsAdmin, agent_id: IdPath, teardown: TeardownDep, force: ForceQuery = False
) -> None:
    """Forget an agent (`vipu-admin remove agent`); with `force`, the cluster it is in
    first, with that cluster's allocations and their partitions."""
    await teardown.remove_agent(caller, agent_id, force=force)


@agent_routes.post("/agents/discover", 400, 401, 403, 503)
async def discover_agents(
    caller: AsAdmin, body: DiscoverBody, fleet: FleetDep
) -> DiscoveredAgentList:
    """Probe `HOST:PORT` addresses for agents, optionally adding them."""
    found = await fleet.discover(caller, body.addresses, add=body.add, key=body.agent_key)
    return DiscoveredAgentList(agents=[DiscoveredAgent.model_validate(d) for d in found])


@fault_routes.post("/agents/{agent_id}/faults", 400, 401, 403, 404, 409, 503)
async def inject_fault(
    caller: AsAdmin, agent_id: IdPath, body: FaultBody, fleet: FleetDep
) -> AgentFaults:
    """Make an emulated machine misbehave (an IPU, a link, the agent itself)."""
    faults = await fleet.inject_fault(caller, agent_id, fault_of(body))
    return AgentFaults(agent_id=agent_id, active_faults=[fault_out(f) for f in faults])


@fault_routes.delete("/agents/{agent_id}/faults", 400, 401, 403, 404, 409, 503)
async def clear_fault(
    caller: AsAdmin,
    agent_id: IdPath,
    fleet: FleetDep,
    kind: Annotated[
        FaultKindName | None, Query(description="Clear only this fault; omit: clear all.")
    ] = None,
    device_id: Annotated[int | None, Query(ge=0, le=3)] = None,
    link_id: Annotated[str | None, Query(max_length=64)] = None,
) -> AgentFaults:
    """Clear one fault (matched by kind and target) or every fault of the agent."""
    fault = None
    if kind is not None:
        fault = fault_of(FaultBody(kind=kind, device_id=device_id, link_id=link_id))
    faults = await fleet.clear_fault(caller, agent_id, fault)
    return AgentFaults(agent_id=agent_id, active_faults=[fault_out(f) for f in faults])


# -- clusters


@cluster_routes.creates("/clusters", 400, 401, 403, 404, 409, 503)
async def create_cluster(
    caller: AsAdmin, body: CreateClusterBody, inventory: InventoryDep
) -> ClusterOut:
    """Cable agents into a cluster (`vipu-admin create cluster`)."""
    cluster = await inventory.create_cluster(
        caller,
        body.id,
        list(body.agent_ids),
        num_domains=body.num_ipulinkdomains,
        ild_topology=body.topology,
        gw_topology=body.cluster_topology,
    )
    return cluster_out(cluster)


@cluster_routes.get("/clusters", 401, 403, 503)
async def list_clusters(inventory: InventoryDep) -> ClusterList:
    """Every cluster (`vipu-admin list clusters`)."""
    return ClusterList(clusters=[cluster_out(cl) for cl in await inventory.list_clusters()])


@cluster_routes.no_content("delete", "/clusters/{cluster_id}", 400, 401, 403, 404, 409, 503)
async def remove_cluster(
    caller: AsAdmin, cluster_id: IdPath, teardown: TeardownDep, force: ForceQuery = False
) -> None:
    """Remove a cluster; with `force`, its allocations and their partitions first."""
    await teardown.remove_cluster(caller, cluster_id, force=force)


@cluster_routes.post("/clusters/{cluster_id}/test", 400, 401, 403, 404, 409, 503)
async def test_cluster(  # a route, not a test: its name makes its OpenAPI operation id
    caller: AsAdmin,
    cluster_id: IdPath,
    fleet: FleetDep,
    body: TestClusterBody | None = None,  # noqa: PT028
) -> ClusterTestReport:
    """Cabling, IPU-Link, GW-Link, Sync-Link and traffic tests (`vipu-admin test cluster`)."""
    kinds = [link_test_kind(t) for t in (body.tests if body else [])]
    cluster, done, failed = await fleet.test_cluster(caller, cluster_id, kinds)
    reply = cluster_test_reply(cluster.id, cluster.agent_ids, done, failed)
    results = [
        copy_fields(ClusterTestResult, r, test=r.name, details=list(r.details))
        for r in reply.results
    ]
    return copy_fields(ClusterTestReport, reply, results=results)


# -- allocations


@allocation_routes.creates("/allocations")
async def create_allocation(
    caller: AsAdmin, body: CreateAllocationBody, inventory: InventoryDep, listings: ListingsDep
) -> AllocationOut:
    """Grant machines of a cluster to users (`vipu-admin create allocation`)."""
    allocation = await inventory.create_allocation(
        caller,
        body.id,
        body.cluster_id,
        size=body.size,
        agent_ids=body.agent_ids or None,
        hosts=body.hosts,
    )
    return allocation_out(await listings.new_allocation(allocation))


@allocation_routes.get("/allocations", 400, 401, 403, 503)
async def list_allocations(
    caller: AsAdmin,
    listings: ListingsDep,
    cluster: ClusterQuery = None,
) -> AllocationList:
    """Every allocation, with its users and partition count (`vipu-admin list allocations`)."""
    return allocations_out(await listings.allocations(caller, cluster or None))


@allocation_routes.put("/allocations/{allocation_id}/hosts", 400, 401, 403, 404, 503)
async def set_allocation_hosts(
    caller: AsAdmin,
    allocation_id: IdPath,
    body: AllocationHostsBody,
    allocation_hosts: AllocationHostsDep,
    listings: ListingsDep,
) -> AllocationOut:
    """Replace who may attach to the allocation's IPUs over IPUoF, at once on every agent of
    its partitions (`vipu-admin update allocation --hosts`)."""
    allocation = await allocation_hosts.set(caller, allocation_id, body.hosts)
    return allocation_out(await listings.allocation(caller, allocation.id))


@allocation_routes.no_content(
    "delete", "/allocations/{allocation_id}", 400, 401, 403, 404, 409, 503
)
async def remove_allocation_route(
    caller: AsAdmin, allocation_id: IdPath, teardown: TeardownDep, force: ForceQuery = False
) -> None:
    """Remove an allocation; with `force`, its partitions first."""
    await teardown.remove_allocation(caller, allocation_id, force=force)


# -- users


@user_routes.creates("/users", 400, 401, 403, 404, 409, 503)
async def create_user(
    caller: AsAdmin, body: CreateUserBody, inventory: InventoryDep
) -> CreatedUser:
    """Create a user; the answer holds its access key, shown this once."""
    created = await inventory.create_user(
        caller, body.id, list(body.allocation_ids), admin=body.admin
    )
    user = created.user
    return CreatedUser(
        user=copy_fields(UserOut, user),
        access_key=created.access_key,
    )


@user_routes.get("/users", 401, 403, 503)
async def list_users(inventory: InventoryDep) -> UserList:
    """Every user and the allocations granted to it (never their keys)."""
    return UserList(users=[copy_fields(UserOut, u) for u in await inventory.list_users()])


@user_routes.no_content("delete", "/users/{user_id}", 401, 403, 404, 503)
async def remove_user(
    caller: AsAdmin, user_id: IdPath, inventory: InventoryDep, auth: AuthenticatorDep
) -> None:
    """Remove a user; its access key stops working at once."""
    await inventory.remove_user(caller, user_id)
    auth.forget(user_id)


@user_routes.post("/users/{user_id}/key", 401, 403, 404, 503)
async def rotate_user_key(
    caller: AsAdmin, user_id: IdPath, inventory: InventoryDep, auth: AuthenticatorDep
) -> CreatedUser:
    """Issue an existing user a new access key (`vipu-admin update user ID --new-key`),
    shown this once; the old key stops working at its next call. Its grants stay."""
    rotated = await inventory.rotate_user_key(caller, user_id)
    auth.forget(user_id)
    return CreatedUser(user=copy_fields(UserOut, rotated.user), access_key=rotated.access_key)


AllocationIdPath = Annotated[str, Path(description="The allocation's id.")]


@user_routes.put("/users/{user_id}/allocations/{allocation_id}", 400, 401, 403, 404, 503)
async def grant_allocation(
    caller: AsAdmin, user_id: IdPath, allocation_id: AllocationIdPath, inventory: InventoryDep
) -> UserOut:
    """Grant an existing user an allocation (`vipu-admin grant allocation`); its access key
    is unchanged. Granting twice is harmless; the answer is the user after the grant."""
    user = await inventory.grant_allocation(caller, user_id, allocation_id)
    return copy_fields(UserOut, user)


@user_routes.delete("/users/{user_id}/allocations/{allocation_id}", 400, 401, 403, 404, 503)
async def revoke_allocation(
    caller: AsAdmin, user_id: IdPath, allocation_id: AllocationIdPath, inventory: InventoryDep
) -> UserOut:
    """Take an allocation away from a user (`vipu-admin revoke allocation`), at the user's
    next call. Revoking what was not granted is harmless; the answer is the user after."""
    user = await inventory.revoke_allocation(caller, user_id, allocation_id)
    return copy_fields(UserOut, user)


# -- partitions and IPUs across allocations


@partition_routes.get("/partitions", 400, 401, 403, 404, 503)
async def list_partitions(
    caller: AsAdmin,
    listings: ListingsDep,
    settings: SettingsDep,
    allocation: Annotated[str | None, Query(description="Only this allocation's.")] = None,
    cluster: ClusterQuery = None,
) -> AdminPartitionList:
    """Partitions of every allocation, each with its status."""
    rows = await listings.partitions(
        caller, allocation_id=allocation or None, cluster_id=cluster or None
    )
    rendered = partitions_out(rows, settings.ipuof_server_version)
    statuses = {row.record.id: status_out(row.record) for row in rows}
    return AdminPartitionList(
        partitions=[PartitionWithStatus(partition=p, status=statuses[p.id]) for p in rendered]
    )


@partition_routes.get("/ipu-attributes", 400, 401, 403, 404, 503)
async def list_ipu_attributes(
    caller: AsAdmin,
    views: ViewsDep,
    agent: Annotated[list[str] | None, Query(description="Only these agents.")] = None,
) -> IpuAttributeList:
    """Attributes of every IPU of every agent (or of the agents named)."""
    return attributes_out(await views.ipu_attributes(caller, agent or []))


# -- audit log


@audit_routes.get("/events", 400, 401, 403, 503)
async def list_events(
    caller: AsAdmin,
    audit_log: AuditLogDep,
    since: Annotated[datetime | None, Query(description="Inclusive (RFC 3339).")] = None,
    until: Annotated[datetime | None, Query(description="Exclusive (RFC 3339).")] = None,
    actor: Filter = "",
    action: Filter = "",
    target: Filter = "",
    outcome: Filter = "",
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    before_id: Annotated[
        int | None,
        Query(ge=1, le=MAX_EVENT_ID, description="Page back: the smallest id seen so far."),
    ] = None,
) -> EventList:
    """The audit log, newest first: who changed what, from where, and how it ended."""
    wanted = EventFilter(
        since=since,
        until=until,
        actor=actor,
        action=action,
        target=target,
        outcome=outcome,
        limit=limit,
        before_id=before_id,
    )
    events = await audit_log.list_events(caller, wanted)
    return EventList(events=[EventOut.model_validate(e, from_attributes=True) for e in events])
