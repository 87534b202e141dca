"""The admin gRPC API (``vpod.admin.v1.AdminService``) and agent self-registration."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from vpod.agent import convert as agent_convert
from vpod.agent.errors import MachineRefusal
from vpod.agent.trust import check_agent_key
from vpod.domain.catalog import machine_spec
from vpod.domain.entities import Agent, Cluster, User
from vpod.domain.errors import DomainError
from vpod.domain.moments import TimeOutOfRange
from vpod.domain.topology import GwTopology, IldTopology
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire.field_copy import copy_fields

from .. import errors
from ..agent_tokens import METADATA_KEY, AgentTokenRecord, AgentTokens
from ..allocation_hosts import AllocationHosts
from ..audit_log import DEFAULT_LIMIT, AuditLog, EventFilter
from ..auth import Authenticator
from ..caller import Caller
from ..fleet import Fleet
from ..inventory import Inventory
from ..listings import AgentRow, AllocationRow, Listings
from ..moments import from_timestamp
from ..partition_views import PartitionViews, placed_ipus
from ..settings import Settings
from ..teardown import Teardown
from ..telemetry import IpuTelemetryView
from .auth import GrpcAuthenticator, grpc_source
from .grpc_errors import grpc_errors
from .grpc_handlers import as_admin, as_user
from .telemetry_grpc import telemetry_reply
from .wire_convert import (
    attributes_to_wire,
    cluster_test_reply,
    partition_to_wire,
    status_to_wire,
)

_ILD = {apb.ILD_TOPOLOGY_TORUS: IldTopology.TORUS, apb.ILD_TOPOLOGY_MESH: IldTopology.MESH}
_GW = {
    apb.CLUSTER_TOPOLOGY_LOOPED: GwTopology.LOOPED,
    apb.CLUSTER_TOPOLOGY_SWITCHED: GwTopology.SWITCHED,
}


def _cluster_to_wire(cluster: Cluster) -> apb.Cluster:
    return apb.Cluster(
        id=cluster.id,
        agent_ids=list(cluster.agent_ids),
        num_ipulinkdomains=cluster.num_domains,
        topology=next(k for k, v in _ILD.items() if v is cluster.ild_topology),
        cluster_topology=next(k for k, v in _GW.items() if v is cluster.gw_topology),
        num_ipus=cluster.num_ipus,
        machine_type=cluster.machine_type.value,
    )


def _allocation_to_wire(row: AllocationRow, trusted_hosts: Sequence[str]) -> apb.AllocationInfo:
    allocation, cluster = row.allocation, row.cluster
    agents = list(allocation.agent_ids(cluster)) if cluster else []
    return apb.AllocationInfo(
        allocation=pb.Allocation(
            id=allocation.id,
            spec=pb.AllocationSpec(cluster_id=allocation.cluster_id, agent_ids=agents),
        ),
        size=allocation.size,
        user_ids=list(row.user_ids),
        num_partitions=row.num_partitions,
        hosts=list(allocation.hosts),
        trusted_hosts=list(trusted_hosts),
    )


def _agent_to_wire(row: AgentRow) -> apb.Agent:
    agent, health = row.agent, row.health
    wire = apb.Agent(
        id=agent.id,
        host=agent.host,
        port=agent.port,
        machine_type=agent.machine_type.value,
        serial=agent.serial,
        cluster_id=row.cluster_id,
        allocation_id=row.allocation_id,
        state=apb.AGENT_ONLINE if health.reachable else apb.AGENT_OFFLINE,
        state_detail=health.reason,
        faults=agent_convert.faults_to_wire(health.faults),
        boot_id=health.boot_id,
        ipuof_address=health.ipuof_address,
    )
    if health.last_seen is not None:
        stamp = Timestamp()
        stamp.FromDatetime(health.last_seen)
        wire.last_seen.CopyFrom(stamp)
    return wire


W = TypeVar("W")
T = TypeVar("T")


def _decoded(convert: Callable[[W], T], wire: W) -> T:
    """An agent-protocol value from an admin request; a malformed one is INVALID_ARGUMENT."""
    try:
        return convert(wire)
    except MachineRefusal as exc:
        raise errors.InvalidArgument(exc.message) from None


@dataclass(kw_only=True, eq=False)
class AdminServicer(apb_grpc.AdminServiceServicer):
    """``vpod.admin.v1.AdminService``: each method calls one use-case."""

    inventory: Inventory
    fleet: Fleet
    teardown: Teardown
    listings: Listings
    views: PartitionViews
    audit_log: AuditLog
    settings: Settings
    authenticator: Authenticator
    auth: GrpcAuthenticator
    agent_tokens: AgentTokens
    telemetry: IpuTelemetryView
    allocation_hosts: AllocationHosts

    # -- agents

    @as_admin
    async def CreateAgent(  # noqa: N802
        self, request: apb.CreateAgentRequest, caller: Caller
    ) -> apb.CreateAgentReply:
        agent = await self.inventory.create_agent(
            caller, request.agent_id, request.host, request.port, key=request.agent_key
        )
        return apb.CreateAgentReply(agent=_agent_to_wire(await self.listings.new_agent(agent)))

    @as_admin
    async def ListAgents(  # noqa: N802
        self, request: apb.ListAgentsRequest, _caller: Caller
    ) -> apb.ListAgentsReply:
        rows = await self.listings.agents(request.cluster_id or None)
        return apb.ListAgentsReply(agents=[_agent_to_wire(row) for row in rows])

    @as_admin
    async def RemoveAgent(  # noqa: N802
        self, request: apb.RemoveAgentRequest, caller: Caller
    ) -> apb.RemoveAgentReply:
        await self.teardown.remove_agent(caller, request.agent_id, force=request.force)
        return apb.RemoveAgentReply()

    @as_admin
    async def DiscoverAgents(  # noqa: N802
        self, request: apb.DiscoverAgentsRequest, caller: Caller
    ) -> apb.DiscoverAgentsReply:
        if request.agent_key:
            try:
                check_agent_key(request.agent_key)
            except ValueError as exc:
                raise errors.InvalidArgument(str(exc)) from None
        found = await self.fleet.discover(
            caller, list(request.addresses), add=request.add, key=request.agent_key
        )
        return apb.DiscoverAgentsReply(agents=[apb.DiscoveredAgent(**d) for d in found])

    # -- clusters

    @as_admin
    async def CreateCluster(  # noqa: N802
        self, request: apb.CreateClusterRequest, caller: Caller
    ) -> apb.CreateClusterReply:
        cluster = await self.inventory.create_cluster(
            caller,
            request.cluster_id,
            list(request.agent_ids),
            num_domains=request.num_ipulinkdomains or 1,
            ild_topology=_ILD.get(request.topology, IldTopology.TORUS),
            gw_topology=_GW.get(request.cluster_topology),
        )
        return apb.CreateClusterReply(cluster=_cluster_to_wire(cluster))

    @as_admin
    async def ListClusters(  # noqa: N802
        self, request: apb.ListClustersRequest, _caller: Caller
    ) -> apb.ListClustersReply:
        clusters = await self.inventory.list_clusters()
        return apb.ListClustersReply(clusters=[_cluster_to_wire(c) for c in clusters])

    @as_admin
    async def RemoveCluster(  # noqa: N802
        self, request: apb.RemoveClusterRequest, caller: Caller
    ) -> apb.RemoveClusterReply:
        await self.teardown.remove_cluster(caller, request.cluster_id, force=request.force)
        return apb.RemoveClusterReply()

    @as_admin
    async def TestCluster(  # noqa: N802
        self, request: apb.TestClusterRequest, caller: Caller
    ) -> apb.TestClusterReply:
        kinds = _decoded(agent_convert.link_tests_from_wire, request.tests)
        cluster, done, failed = await self.fleet.test_cluster(caller, request.cluster_id, kinds)
        return cluster_test_reply(cluster.id, cluster.agent_ids, done, failed, kinds)

    # -- allocations

    @as_admin
    async def CreateAllocation(  # noqa: N802
        self, request: apb.CreateAllocationRequest, caller: Caller
    ) -> apb.CreateAllocationReply:
        allocation = await self.inventory.create_allocation(
            caller,
            request.allocation_id,
            request.cluster_id,
            size=request.size or None,
            agent_ids=list(request.agent_ids) or None,
            hosts=list(request.hosts),
        )
        row = await self.listings.new_allocation(allocation)
        return apb.CreateAllocationReply(
            allocation=_allocation_to_wire(row, self.settings.trusted_hosts)
        )

    # Users may call this too (``vipu list allocations``): they see their own.
    @as_user
    async def ListAllocations(  # noqa: N802
        self, request: apb.ListAllocationsRequest, caller: Caller
    ) -> apb.ListAllocationsReply:
        rows = await self.listings.allocations(caller, request.cluster_id or None)
        trusted = self.settings.trusted_hosts
        return apb.ListAllocationsReply(
            allocations=[_allocation_to_wire(row, trusted) for row in rows]
        )

    @as_admin
    async def SetAllocationHosts(  # noqa: N802
        self, request: apb.SetAllocationHostsRequest, caller: Caller
    ) -> apb.SetAllocationHostsReply:
        allocation = await self.allocation_hosts.set(
            caller, request.allocation_id, list(request.hosts)
        )
        row = await self.listings.allocation(caller, allocation.id)
        return apb.SetAllocationHostsReply(
            allocation=_allocation_to_wire(row, self.settings.trusted_hosts)
        )

    @as_admin
    async def RemoveAllocation(  # noqa: N802
        self, request: apb.RemoveAllocationRequest, caller: Caller
    ) -> apb.RemoveAllocationReply:
        await self.teardown.remove_allocation(caller, request.allocation_id, force=request.force)
        return apb.RemoveAllocationReply()

    # -- users

    @as_admin
    async def CreateUser(  # noqa: N802
        self, request: apb.CreateUserRequest, caller: Caller
    ) -> apb.CreateUserReply:
        created = await self.inventory.create_user(
            caller, request.user_id, list(request.allocation_ids), admin=request.admin
        )
        return apb.CreateUserReply(
            user=_user_to_wire(created.user, created.created_at),
            access_key=created.access_key,
        )

    @as_admin
    async def ListUsers(  # noqa: N802
        self, request: apb.ListUsersRequest, _caller: Caller
    ) -> apb.ListUsersReply:
        users = await self.inventory.list_users()
        times = await self.inventory.user_times()
        return apb.ListUsersReply(users=[_user_to_wire(u, times.get(u.id)) for u in users])

    @as_admin
    async def RemoveUser(  # noqa: N802
        self, request: apb.RemoveUserRequest, caller: Caller
    ) -> apb.RemoveUserReply:
        await self.inventory.remove_user(caller, request.user_id)
        self.authenticator.forget(request.user_id)
        return apb.RemoveUserReply()

    @as_admin
    async def RotateUserKey(  # noqa: N802
        self, request: apb.RotateUserKeyRequest, caller: Caller
    ) -> apb.RotateUserKeyReply:
        rotated = await self.inventory.rotate_user_key(caller, request.user_id)
        self.authenticator.forget(request.user_id)
        return apb.RotateUserKeyReply(
            user=_user_to_wire(rotated.user, rotated.created_at), access_key=rotated.access_key
        )

    @as_admin
    async def GrantAllocation(  # noqa: N802
        self, request: apb.GrantAllocationRequest, caller: Caller
    ) -> apb.GrantAllocationReply:
        user = await self.inventory.grant_allocation(caller, request.user_id, request.allocation_id)
        times = await self.inventory.user_times()
        return apb.GrantAllocationReply(user=_user_to_wire(user, times.get(user.id)))

    @as_admin
    async def RevokeAllocation(  # noqa: N802
        self, request: apb.RevokeAllocationRequest, caller: Caller
    ) -> apb.RevokeAllocationReply:
        user = await self.inventory.revoke_allocation(
            caller, request.user_id, request.allocation_id
        )
        times = await self.inventory.user_times()
        return apb.RevokeAllocationReply(user=_user_to_wire(user, times.get(user.id)))

    # -- partitions, faults, attributes

    @as_admin
    async def ListPartitions(  # noqa: N802
        self, request: apb.ListPartitionsRequest, caller: Caller
    ) -> apb.ListPartitionsReply:
        rows = await self.listings.partitions(
            caller,
            allocation_id=request.allocation_id or None,
            cluster_id=request.cluster_id or None,
        )
        version = self.settings.ipuof_server_version
        reply = apb.ListPartitionsReply()
        for row in rows:
            record, cluster = row.record, row.cluster
            info = reply.partitions.add(
                partition=partition_to_wire(record, cluster, version),
                status=status_to_wire(record),
            )
            for ipu, ref in placed_ipus(record, cluster):
                info.locations.add(
                    agent_id=cluster.agent_of(ref.machine),
                    device_id=ref.device_id,
                    routing_id=ipu.routing_id,
                )
        return reply

    @as_admin
    async def InjectFault(  # noqa: N802
        self, request: apb.InjectFaultRequest, caller: Caller
    ) -> apb.InjectFaultReply:
        fault = _decoded(agent_convert.fault_from_wire, request.fault)
        faults = await self.fleet.inject_fault(caller, request.agent_id, fault)
        return apb.InjectFaultReply(
            agent_id=request.agent_id, active_faults=agent_convert.faults_to_wire(faults)
        )

    @as_admin
    async def ClearFault(  # noqa: N802
        self, request: apb.ClearFaultRequest, caller: Caller
    ) -> apb.ClearFaultReply:
        fault = None
        if request.HasField("fault") and not request.all:
            fault = _decoded(agent_convert.fault_from_wire, request.fault)
        faults = await self.fleet.clear_fault(caller, request.agent_id, fault)
        return apb.ClearFaultReply(
            agent_id=request.agent_id, active_faults=agent_convert.faults_to_wire(faults)
        )

    @as_admin
    async def ListIpuAttributes(  # noqa: N802
        self, request: pb.ListIPUAttributesRequest, caller: Caller
    ) -> pb.ListIPUAttributesReply:
        attributes = await self.views.ipu_attributes(caller, request.agents)
        return attributes_to_wire(attributes)

    # -- telemetry

    @as_admin
    async def ListIpuTelemetry(  # noqa: N802
        self, request: apb.ListIpuTelemetryRequest, _caller: Caller
    ) -> apb.ListIpuTelemetryReply:
        samples = await self.telemetry.samples(
            cluster_id=request.cluster_id,
            partition_id=request.partition_id,
            agent_ids=list(request.agent_ids),
        )
        return telemetry_reply(samples)

    # -- audit log

    @as_admin
    async def ListEvents(  # noqa: N802
        self, request: apb.ListEventsRequest, caller: Caller
    ) -> apb.ListEventsReply:
        try:
            since = from_timestamp(request.since, "since") if request.HasField("since") else None
            until = from_timestamp(request.until, "until") if request.HasField("until") else None
        except TimeOutOfRange as exc:
            raise errors.InvalidArgument(str(exc)) from None
        wanted = copy_fields(
            EventFilter,
            request,
            since=since,
            until=until,
            limit=request.limit or DEFAULT_LIMIT,
            before_id=request.before_id or None,
        )
        events = await self.audit_log.list_events(caller, wanted)
        return apb.ListEventsReply(events=[copy_fields(apb.AuditEvent, e) for e in events])

    # -- agent registration tokens

    @as_admin
    async def CreateAgentToken(  # noqa: N802
        self, request: apb.CreateAgentTokenRequest, caller: Caller
    ) -> apb.CreateAgentTokenReply:
        issued = await self.agent_tokens.issue(caller, request.label)
        return apb.CreateAgentTokenReply(
            agent_token=_agent_token_to_wire(issued.record), token=issued.token
        )

    @as_admin
    async def ListAgentTokens(  # noqa: N802
        self, request: apb.ListAgentTokensRequest, _caller: Caller
    ) -> apb.ListAgentTokensReply:
        tokens = await self.agent_tokens.list()
        return apb.ListAgentTokensReply(agent_tokens=[_agent_token_to_wire(t) for t in tokens])

    @as_admin
    async def RemoveAgentToken(  # noqa: N802
        self, request: apb.RemoveAgentTokenRequest, caller: Caller
    ) -> apb.RemoveAgentTokenReply:
        await self.agent_tokens.remove(caller, request.token_id)
        return apb.RemoveAgentTokenReply()


def _agent_token_to_wire(record: AgentTokenRecord) -> apb.AgentToken:
    return copy_fields(apb.AgentToken, record)


@dataclass(eq=False)
class RegistrationServicer(apb_grpc.AgentRegistrationServiceServicer):
    """``vpod.admin.v1.AgentRegistrationService``: agents announce themselves (no caller)."""

    fleet: Fleet
    agent_tokens: AgentTokens

    @grpc_errors
    async def RegisterAgent(  # noqa: N802
        self, request: apb.RegisterAgentRequest, context: grpc.aio.ServicerContext
    ) -> apb.RegisterAgentReply:
        try:
            machine_type = machine_spec(request.machine_type or "Bow-2000").machine_type
            agent = Agent(
                id=request.agent_id,
                host=request.host,
                port=request.port,
                machine_type=machine_type,
                serial=request.serial,
                key=check_agent_key(request.agent_key) if request.agent_key else "",
            )
        except (DomainError, ValueError) as exc:
            raise errors.InvalidArgument(str(exc)) from None
        metadata = dict(context.invocation_metadata() or ())
        source = grpc_source(context)
        token = str(metadata.get(METADATA_KEY, ""))
        token_id = await self.agent_tokens.admit(agent.id, token, source=source)
        known, message = await self.fleet.register(
            agent, boot_id=request.boot_id, ipuof_address=request.ipuof_address
        )
        await self.agent_tokens.registered(agent.id, token_id, message, source=source)
        return apb.RegisterAgentReply(known=known, message=message)


def add_admin_api(
    server: grpc.aio.Server, admin: AdminServicer, registration: RegistrationServicer
) -> None:
    apb_grpc.add_AdminServiceServicer_to_server(admin, server)
    apb_grpc.add_AgentRegistrationServiceServicer_to_server(registration, server)


def _user_to_wire(user: User, created_at: datetime | None) -> apb.User:
    """A user on the wire; ``created_at`` stays unset for users older than the store's record."""
    return copy_fields(apb.User, user, created_at=created_at)
