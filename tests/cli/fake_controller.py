"""A test double of the controller: real gRPC servers on loopback with canned behaviour.

Only the CLI unit tests use it; end-to-end tests run the CLIs against the
real controller. It serves the generated servicers (``virmgrpc`` user API
and ``vpod.admin.v1`` admin API) from a small in-memory model, records every
call with its metadata, can demand credentials, and can be told to fail the
next call of a method with a status code.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from threading import Event
from typing import Any

import grpc

from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

VERSION = "1.18.0"
SIZES = (1, 2, 4, 8, 16, 64, 128)
ROUTING = {1: pb.IRT_DNC, 2: pb.IRT_DNC, 4: pb.IRT_DNC, 8: pb.IRT_SWNC, 16: pb.IRT_SWNC}


@dataclass
class Call:
    method: str
    request: Any
    metadata: dict[str, str]


@dataclass
class FakeState:
    """What the double knows, and what it was asked."""

    capacity: int = 64
    partitions: dict[str, pb.Partition] = field(default_factory=dict)
    statuses: dict[str, pb.PartitionStatus] = field(default_factory=dict)
    agents: dict[str, apb.Agent] = field(default_factory=dict)
    clusters: dict[str, apb.Cluster] = field(default_factory=dict)
    allocations: dict[str, apb.AllocationInfo] = field(default_factory=dict)
    users: dict[str, apb.User] = field(default_factory=dict)
    faults: dict[str, list[agpb.Fault]] = field(default_factory=dict)
    failing_tests: set[str] = field(default_factory=set)
    credentials: tuple[str, str] | None = None
    """When set, every call must carry this user id and access key."""
    fail_next: dict[str, tuple[grpc.StatusCode, str]] = field(default_factory=dict)
    hang: set[str] = field(default_factory=set)
    """Methods that do not answer until ``release`` is set (to make a deadline pass)."""
    release: Event = field(default_factory=Event)
    calls: list[Call] = field(default_factory=list)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]


class _Base:
    def __init__(self, state: FakeState) -> None:
        self.s = state

    def enter(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        metadata = {k: str(v) for k, v in context.invocation_metadata()}
        self.s.calls.append(Call(method, request, metadata))
        if method in self.s.hang:
            self.s.release.wait(timeout=30)
        if method in self.s.fail_next:
            code, message = self.s.fail_next.pop(method)
            context.abort(code, message)
        if self.s.credentials is not None:
            given = (metadata.get("vipu-user-id", ""), metadata.get("vipu-access-key", ""))
            if given != self.s.credentials:
                context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "unknown user or wrong access key: check --api-user-id and --api-access-key",
                )


def _partition_ipus(size: int) -> list[pb.PartitionIpu]:
    return [
        pb.PartitionIpu(
            ipulink_domain_topology_id=r // 64,
            ipulink_domain_routing_id=r // 64,
            topology_id=r % 64,
            routing_id=r,
        )
        for r in range(size)
    ]


class UserServicer(pb_grpc.UserServiceServicer, _Base):
    def CreatePartition(self, request, context):
        self.enter("CreatePartition", request, context)
        req = request.requirements
        if req.size not in SIZES:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"a partition of {req.size} IPUs is not possible: use 1, 2, 4, 8, 16, 64"
                " or a multiple of 64",
            )
        if req.id in self.s.partitions:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, f"partition {req.id} exists already")
        used = sum(len(p.spec.ipus) for p in self.s.partitions.values())
        if used + req.size > self.s.capacity:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"no {req.size} free IPUs in allocation a1: remove a partition or ask for fewer",
            )
        segments = max(req.num_ipulink_segments, req.size // 64, 1)
        spec = pb.PartitionSpec(
            cluster_id=req.cluster_id or "c1",
            ipus=_partition_ipus(req.size),
            ipulink_routing_type=req.ipulink_routing_type or ROUTING.get(req.size, pb.IRT_RINGSWNC),
            sync_type=req.sync_type or pb.ST_GS2_DEFAULT,
            num_gcds=req.num_gcds or 1,
            num_ipulink_segments=segments,
            reconfigurable=req.reconfigurable,
            gw_routing_type=req.gw_routing_type or (pb.GRT_RING if segments > 1 else 0),
            num_replicas=req.num_replicas or req.num_gcds or 1,
            allocation_id=req.allocation_id or "a1",
        )
        self.s.partitions[req.id] = pb.Partition(
            id=req.id, spec=spec, ready_state=pb.PS_ACTIVE, ipuof_server_version="2.6.0"
        )
        self.s.statuses[req.id] = pb.PartitionStatus(
            partition_id=req.id,
            ready_state=pb.PS_ACTIVE,
            operation_state=pb.POS_IDLE,
            max_auto_reset_retries=0 if request.disable_auto_reset else 3,
        )
        return pb.CreatePartitionReply(partition_id=req.id)

    def ListPartitions(self, request, context):
        self.enter("ListPartitions", request, context)
        found = [
            p
            for p in self.s.partitions.values()
            if not request.allocation_id or p.spec.allocation_id == request.allocation_id
        ]
        return pb.ListPartitionsReply(partitions=found)

    def _known(self, partition_id: str, context: grpc.ServicerContext) -> pb.Partition:
        if partition_id not in self.s.partitions:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f"partition {partition_id} does not exist: see vipu list partitions",
            )
        return self.s.partitions[partition_id]

    def GetPartitionStatus(self, request, context):
        self.enter("GetPartitionStatus", request, context)
        self._known(request.partition_id, context)
        return pb.GetPartitionStatusReply(status=self.s.statuses[request.partition_id])

    def GetPartitionIpuofConfig(self, request, context):
        self.enter("GetPartitionIpuofConfig", request, context)
        partition = self._known(request.partition_id, context)
        spec = partition.spec
        per_gcd = len(spec.ipus) // spec.num_gcds
        wanted = [request.gcd_id.id] if request.HasField("gcd_id") else range(spec.num_gcds)
        gcds = []
        for g in wanted:
            if g >= spec.num_gcds:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"partition {partition.id} has {spec.num_gcds} GCDs: use --gcd 0..",
                )
            devices = [
                pb.IpuofDevice(
                    ip=f"10.0.0.{1 + r // 4}",
                    server_port=50052 + r % 4,
                    rdma_port=7471 + r % 4,
                    device_id=3 - r % 4,
                    ipulink_segment_id=r // 64,
                    routing_id=r,
                    ipu_arch_id=2,
                    ipu_id=r,
                    chip_id=f"chip{r}",
                    gwsw_version="2.6.0",
                    ipum_sw_version="2.6.0",
                )
                for r in reversed(range(g * per_gcd, (g + 1) * per_gcd))
            ]
            attributes = {
                "GCD Id": str(g),
                "Sync Type": "c2-compatible",
                "Routing Type": pb.IpuLinkRoutingType.Name(spec.ipulink_routing_type)[4:],
                "Num Replicas": str(spec.num_replicas // spec.num_gcds),
                "IPU version": "ipu2",
                "Fabric Reconfigurable": "false",
            }
            gcds.append(pb.PartitionConfig.Gcd(devices=devices, attributes=attributes))
        config = pb.PartitionConfig(
            ipulink_routing_type=spec.ipulink_routing_type,
            sync_type=spec.sync_type,
            num_ipulink_segments=spec.num_ipulink_segments,
            gcd_configs=gcds,
            ipuof_server_version="2.6.0",
        )
        return pb.GetPartitionIpuofConfigReply(ipuof_config=config)

    def ResetPartition(self, request, context):
        self.enter("ResetPartition", request, context)
        self._known(request.partition_id, context)
        return pb.ResetPartitionReply()

    def RemovePartition(self, request, context):
        self.enter("RemovePartition", request, context)
        self._known(request.partition_id, context)
        del self.s.partitions[request.partition_id]
        return pb.RemovePartitionReply()

    def ListIPUAttributes(self, request, context):
        self.enter("ListIPUAttributes", request, context)
        return ipu_attributes(request)


def ipu_attributes(request: pb.ListIPUAttributesRequest) -> pb.ListIPUAttributesReply:
    reply = pb.ListIPUAttributesReply()
    for agent in ("ipum2", "ipum1"):
        if request.agents and agent not in request.agents:
            continue
        entry = reply.entries.add(agent=agent)
        for ipu in (1, 0):
            entry.ipu_attributes[ipu].attributes.update(
                {"serial": f"{agent}-s{ipu}", "clock": "1850MHz", "board type": "Bow-2000"}
            )
    return reply


class VersionServicer(pb_grpc.VersionServiceServicer, _Base):
    def GetVersion(self, request, context):
        self.enter("GetVersion", request, context)
        return pb.VersionReply(version=VERSION)


TEST_NAMES = (
    (agpb.LINK_TEST_CABLING, "cabling"),
    (agpb.LINK_TEST_IPU_LINK, "IPU-Link"),
    (agpb.LINK_TEST_GW_LINK, "GW-Link"),
    (agpb.LINK_TEST_SYNC_LINK, "Sync-Link"),
    (agpb.LINK_TEST_TRAFFIC, "traffic"),
)


class AdminServicer(apb_grpc.AdminServiceServicer, _Base):
    def _missing(self, kind: str, entity_id: str, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.NOT_FOUND, f"{kind} {entity_id} does not exist")

    def CreateAgent(self, request, context):
        self.enter("CreateAgent", request, context)
        if request.agent_id in self.s.agents:
            context.abort(
                grpc.StatusCode.ALREADY_EXISTS, f"agent {request.agent_id} exists already"
            )
        agent = apb.Agent(
            id=request.agent_id,
            host=request.host,
            port=request.port,
            machine_type="Bow-2000",
            serial=f"S-{request.agent_id}",
            state=apb.AGENT_ONLINE,
        )
        self.s.agents[agent.id] = agent
        return apb.CreateAgentReply(agent=agent)

    def ListAgents(self, request, context):
        self.enter("ListAgents", request, context)
        agents = []
        for agent in self.s.agents.values():
            copy = apb.Agent()
            copy.CopyFrom(agent)
            copy.faults.extend(self.s.faults.get(agent.id, []))
            if not request.cluster_id or copy.cluster_id == request.cluster_id:
                agents.append(copy)
        return apb.ListAgentsReply(agents=agents)

    def RemoveAgent(self, request, context):
        self.enter("RemoveAgent", request, context)
        agent = self.s.agents.get(request.agent_id)
        if agent is None:
            self._missing("agent", request.agent_id, context)
        elif agent.cluster_id and not request.force:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"agent {agent.id} is in cluster {agent.cluster_id}: remove the cluster first"
                " or use --force",
            )
        del self.s.agents[request.agent_id]
        return apb.RemoveAgentReply()

    def DiscoverAgents(self, request, context):
        self.enter("DiscoverAgents", request, context)
        reply = apb.DiscoverAgentsReply()
        for address in request.addresses:
            host, _, port = address.rpartition(":")
            if host == "unreachable":
                reply.agents.add(host=host, port=int(port), error="connection refused")
                continue
            agent_id = f"ag-{port}"
            known = agent_id in self.s.agents
            reply.agents.add(
                agent_id=agent_id,
                host=host,
                port=int(port),
                machine_type="Bow-2000",
                serial=f"S{port}",
                known=known,
                added=request.add and not known,
            )
            if request.add and not known:
                self.s.agents[agent_id] = apb.Agent(id=agent_id, host=host, port=int(port))
        return reply

    def CreateCluster(self, request, context):
        self.enter("CreateCluster", request, context)
        for agent_id in request.agent_ids:
            if agent_id not in self.s.agents:
                self._missing("agent", agent_id, context)
        cluster = apb.Cluster(
            id=request.cluster_id,
            agent_ids=request.agent_ids,
            num_ipulinkdomains=request.num_ipulinkdomains or 1,
            topology=request.topology or apb.ILD_TOPOLOGY_TORUS,
            cluster_topology=request.cluster_topology or apb.CLUSTER_TOPOLOGY_LOOPED,
            num_ipus=4 * len(request.agent_ids),
            machine_type="Bow-2000",
        )
        self.s.clusters[cluster.id] = cluster
        for agent_id in request.agent_ids:
            self.s.agents[agent_id].cluster_id = cluster.id
        return apb.CreateClusterReply(cluster=cluster)

    def ListClusters(self, request, context):
        self.enter("ListClusters", request, context)
        return apb.ListClustersReply(clusters=list(self.s.clusters.values()))

    def RemoveCluster(self, request, context):
        self.enter("RemoveCluster", request, context)
        if self.s.clusters.pop(request.cluster_id, None) is None:
            self._missing("cluster", request.cluster_id, context)
        return apb.RemoveClusterReply()

    def TestCluster(self, request, context):
        self.enter("TestCluster", request, context)
        cluster = self.s.clusters.get(request.cluster_id)
        if cluster is None:
            self._missing("cluster", request.cluster_id, context)
        reply = apb.TestClusterReply(cluster_id=request.cluster_id, passed=True)
        for kind, name in TEST_NAMES:
            if request.tests and kind not in request.tests:
                continue
            failed = name in self.s.failing_tests
            reply.results.add(
                test=kind,
                name=name,
                passed=not failed,
                summary=f"{name}: 1 of 2 agents failed" if failed else f"{name}: all passed",
                details=[f"{cluster.agent_ids[0]}: link L3 did not train"] if failed else [],
                agents_tested=len(cluster.agent_ids),
                agents_failed=1 if failed else 0,
            )
            reply.passed = reply.passed and not failed
        return reply

    def CreateAllocation(self, request, context):
        self.enter("CreateAllocation", request, context)
        cluster = self.s.clusters.get(request.cluster_id)
        if cluster is None:
            self._missing("cluster", request.cluster_id, context)
        agents = list(request.agent_ids) or list(cluster.agent_ids[: request.size // 4])
        info = apb.AllocationInfo(
            allocation=pb.Allocation(
                id=request.allocation_id,
                spec=pb.AllocationSpec(cluster_id=cluster.id, agent_ids=agents),
            ),
            size=4 * len(agents),
            hosts=list(request.hosts),
            trusted_hosts=["127.0.0.0/8", "::1/128"],
        )
        self.s.allocations[request.allocation_id] = info
        return apb.CreateAllocationReply(allocation=info)

    def ListAllocations(self, request, context):
        self.enter("ListAllocations", request, context)
        found = [
            a
            for a in self.s.allocations.values()
            if not request.cluster_id or a.allocation.spec.cluster_id == request.cluster_id
        ]
        return apb.ListAllocationsReply(allocations=found)

    def RemoveAllocation(self, request, context):
        self.enter("RemoveAllocation", request, context)
        if self.s.allocations.pop(request.allocation_id, None) is None:
            self._missing("allocation", request.allocation_id, context)
        return apb.RemoveAllocationReply()

    def CreateUser(self, request, context):
        self.enter("CreateUser", request, context)
        if request.user_id in self.s.users:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, f"user {request.user_id} exists already")
        user = apb.User(
            id=request.user_id, allocation_ids=request.allocation_ids, admin=request.admin
        )
        user.created_at.FromSeconds(1_780_000_000)
        self.s.users[user.id] = user
        return apb.CreateUserReply(user=user, access_key=f"key-of-{user.id}")

    def ListUsers(self, request, context):
        self.enter("ListUsers", request, context)
        return apb.ListUsersReply(users=list(self.s.users.values()))

    def RemoveUser(self, request, context):
        self.enter("RemoveUser", request, context)
        if self.s.users.pop(request.user_id, None) is None:
            self._missing("user", request.user_id, context)
        return apb.RemoveUserReply()

    def ListPartitions(self, request, context):
        self.enter("ListPartitions", request, context)
        reply = apb.ListPartitionsReply()
        for partition in self.s.partitions.values():
            info = reply.partitions.add(partition=partition)
            info.status.CopyFrom(self.s.statuses[partition.id])
            for r in range(len(partition.spec.ipus)):
                info.locations.add(agent_id=f"ipum{1 + r // 4}", device_id=3 - r % 4, routing_id=r)
        return reply

    def InjectFault(self, request, context):
        self.enter("InjectFault", request, context)
        if request.agent_id not in self.s.agents:
            self._missing("agent", request.agent_id, context)
        self.s.faults.setdefault(request.agent_id, []).append(request.fault)
        return apb.InjectFaultReply(
            agent_id=request.agent_id, active_faults=self.s.faults[request.agent_id]
        )

    def ClearFault(self, request, context):
        self.enter("ClearFault", request, context)
        active = self.s.faults.get(request.agent_id, [])
        active = [] if request.all else [f for f in active if f.kind != request.fault.kind]
        self.s.faults[request.agent_id] = active
        return apb.ClearFaultReply(agent_id=request.agent_id, active_faults=active)

    def ListIpuAttributes(self, request, context):
        self.enter("ListIpuAttributes", request, context)
        return ipu_attributes(request)


class UserPortAllocations(apb_grpc.AdminServiceServicer):
    """``ListAllocations`` alone, served on the user port (the rest stays UNIMPLEMENTED)."""

    def __init__(self, state: FakeState) -> None:
        self._admin = AdminServicer(state)

    def ListAllocations(self, request, context):
        return self._admin.ListAllocations(request, context)


@dataclass
class RunningFake:
    state: FakeState
    user_port: int
    admin_port: int


@contextmanager
def serve(
    state: FakeState, *, server_credentials: grpc.ServerCredentials | None = None
) -> Iterator[RunningFake]:
    """Serve the user API and the admin API on two loopback ports chosen by the OS."""
    servers = []
    ports = []
    for kind in ("user", "admin"):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        if kind == "user":
            pb_grpc.add_UserServiceServicer_to_server(UserServicer(state), server)
            # As the controller: the admin service's ListAllocations on the user port too.
            apb_grpc.add_AdminServiceServicer_to_server(UserPortAllocations(state), server)
        else:
            apb_grpc.add_AdminServiceServicer_to_server(AdminServicer(state), server)
        pb_grpc.add_VersionServiceServicer_to_server(VersionServicer(state), server)
        if server_credentials is None:
            port = server.add_insecure_port("127.0.0.1:0")
        else:
            port = server.add_secure_port("127.0.0.1:0", server_credentials)
        server.start()
        servers.append(server)
        ports.append(port)
    try:
        yield RunningFake(state, user_port=ports[0], admin_port=ports[1])
    finally:
        state.release.set()
        for server in servers:
            server.stop(grace=None)
