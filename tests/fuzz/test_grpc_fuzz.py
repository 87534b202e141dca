"""Random gRPC requests against a live controller: every answer is OK or a documented refusal.

Hypothesis builds requests with random field values (ids with odd
characters, zero and huge sizes, enum numbers the proto does not name,
explicit IPUs at random positions, random GCD ids, ...) for every rpc of the
V-IPU user API and a set of admin rpcs, and sends them to a real
``vipu-server`` with a real emulated POD16 behind it. Whatever comes back
must be OK or one of the status codes the API documents (vipu-user-api.md
"Errors", admin.proto's conventions) with a non-empty message: never UNKNOWN,
INTERNAL or a deadline passing.

Requests may touch real state (the pod's partitions, agents, faults): each
example cleans up after itself, so the next starts from the same pod. Hosts
given to admin rpcs are loopback addresses or invalid ones, so the
controller never dials anything off this machine. Case counts per rpc and
status code are printed at the end of the module.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.live import LivePod, UserClient, build_pod, clear_all, wait_until
from vpod.wire import admin_pb2 as apb
from vpod.wire import admin_pb2_grpc as apb_grpc
from vpod.wire import agent_pb2 as agpb
from vpod.wire import virmgrpc_pb2 as pb

pytestmark = pytest.mark.fuzz

DOCUMENTED = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.UNAVAILABLE,
    }
)
CALL_TIMEOUT_S = 30.0
REAL_AGENTS = ("ag1", "ag2", "ag3", "ag4")
SEED = "seed"
"""A partition every partition rpc may find (it is created again when an example removes it)."""

CASES: Counter[tuple[str, str]] = Counter()
FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# ------------------------------------------------------------------ strategies

UINT32 = st.integers(0, 2**32 - 1)
ENUM = st.integers(-(2**31), 2**31 - 1)
"""proto3 enums are open: any int32 travels, named or not."""
ODD_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
"""Any Unicode but lone surrogates (which protobuf cannot encode): NUL, controls, RTL, emoji."""
IDS = st.one_of(
    st.sampled_from(["", SEED, "p1", "a" * 65, "../x", "x y", "é", "\x00", "-", "_a", "A1"]),
    ODD_TEXT,
    st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
    st.text(min_size=200, max_size=3000),
)
PARTITION_IDS = st.one_of(st.just(SEED), IDS)
"""Ids for rpcs on existing partitions: often the seed partition, else anything."""
SIZES = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 8, 16, 64, 128, 2**31, 2**32 - 1]), UINT32)
SMALL = st.one_of(st.sampled_from([0, 1, 2, 4, 16, 64]), UINT32)


@st.composite
def partition_ipus(draw: st.DrawFn) -> list[pb.PartitionIpu]:
    """Explicit IPUs at random positions, routing ids in order or not."""
    count = draw(st.integers(0, 20))
    routing = draw(st.sampled_from(["ordered", "random"]))
    return [
        pb.PartitionIpu(
            ipulink_domain_topology_id=draw(st.one_of(st.integers(0, 3), UINT32)),
            ipulink_domain_routing_id=draw(st.one_of(st.integers(0, 3), UINT32)),
            topology_id=draw(st.one_of(st.integers(0, 20), UINT32)),
            routing_id=n if routing == "ordered" else draw(st.one_of(st.integers(0, 20), UINT32)),
        )
        for n in range(count)
    ]


@st.composite
def aligned_ipus(draw: st.DrawFn) -> list[pb.PartitionIpu]:
    """Explicit IPUs that could be right: an aligned block of the POD16, in some order."""
    size = draw(st.sampled_from([1, 2, 4, 8, 16]))
    first = draw(st.integers(0, 16 // size - 1)) * size
    positions = draw(st.permutations(range(first, first + size)))
    return [pb.PartitionIpu(topology_id=t, routing_id=r) for r, t in enumerate(positions)]


PLAUSIBLE = {
    "id": st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
    "size": st.sampled_from([1, 2, 4, 8, 16]),
    "cluster_id": st.sampled_from(["", "c1"]),
    "ipulink_routing_type": st.sampled_from([0, 0, 1, 2, 3, 4]),
    "num_ipulink_segments": st.sampled_from([0, 1]),
    "gw_routing_type": st.just(0),
    "sync_type": st.sampled_from([0, 0, 1, 3, 4]),
    "num_gcds": st.sampled_from([0, 1, 2, 4]),
    "reconfigurable": st.booleans(),
    "num_replicas": st.sampled_from([0, 1, 2, 4]),
    "allocation_id": st.sampled_from(["", "al"]),
    "ipus": st.just([]),
}
"""Values that often make a partition the pod can hold."""
WILD = {
    "id": IDS,
    "size": SIZES,
    "cluster_id": st.one_of(st.sampled_from(["", "c1"]), ODD_TEXT),
    "ipulink_routing_type": st.one_of(st.integers(0, 5), ENUM),
    "num_ipulink_segments": SMALL,
    "gw_routing_type": st.one_of(st.integers(0, 4), ENUM),
    "sync_type": st.one_of(st.integers(0, 5), ENUM),
    "num_gcds": SMALL,
    "reconfigurable": st.booleans(),
    "num_replicas": SMALL,
    "allocation_id": st.one_of(st.sampled_from(["", "al"]), ODD_TEXT),
    "ipus": st.one_of(partition_ipus(), aligned_ipus()),
}
"""Anything the wire can carry."""


@st.composite
def requirements(draw: st.DrawFn) -> pb.PartitionRequirements:
    """Plausible requirements with 0 to 12 of their fields replaced by wild values."""
    wild = set(draw(st.lists(st.sampled_from(sorted(WILD)), max_size=12)))
    fields: dict[str, Any] = {
        name: draw(WILD[name] if name in wild else PLAUSIBLE[name]) for name in PLAUSIBLE
    }
    if fields["ipus"] and draw(st.booleans()):
        fields["cluster_id"] = "c1"
        fields["size"] = len(fields["ipus"])
    return pb.PartitionRequirements(**fields)


CREATES = st.builds(
    pb.CreatePartitionRequest,
    requirements=requirements(),
    disable_auto_reset=st.booleans(),
    relocatable=st.booleans(),
)


@st.composite
def ipuof_config_requests(draw: st.DrawFn) -> pb.GetPartitionIpuofConfigRequest:
    request = pb.GetPartitionIpuofConfigRequest(partition_id=draw(PARTITION_IDS))
    if draw(st.booleans()):
        request.gcd_id.id = draw(st.one_of(st.integers(0, 20), UINT32))
    return request


LOOPBACK_HOSTS = st.builds(
    lambda n: str(ipaddress.IPv4Address("127.0.0.0") + n), st.integers(1, 2**24 - 2)
)
BAD_HOSTS = st.one_of(
    st.just(""),
    st.text(min_size=1, max_size=10).map(lambda t: f"has space {t}"),
    st.text(min_size=300, max_size=400),
)
HOSTS = st.one_of(LOOPBACK_HOSTS, BAD_HOSTS)
"""Only hosts the controller would dial on loopback, or hosts it must refuse."""
NEW_AGENT_IDS = st.one_of(st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True), IDS).filter(
    lambda i: i not in REAL_AGENTS
)
AGENT_IDS = st.one_of(st.sampled_from(REAL_AGENTS), IDS)
FAULTS = st.builds(
    agpb.Fault,
    kind=st.one_of(st.integers(0, 5), ENUM),
    device_id=st.one_of(st.integers(0, 5), UINT32),
    link_id=st.one_of(
        st.sampled_from(["ipulink0", "ipulink7", "gwlink1", "synclink0", "nolink"]), ODD_TEXT
    ),
    delay_ms=st.one_of(st.integers(0, 2000), UINT32),
    reason=ODD_TEXT,
)


# --------------------------------------------------------------------- fixtures


@dataclass
class FuzzTarget:
    live: LivePod
    user: UserClient
    admin: apb_grpc.AdminServiceStub
    registration: apb_grpc.AgentRegistrationServiceStub

    def ensure_seed(self) -> None:
        if SEED not in self.user.ids():
            self.user.create(SEED, 4)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    workdir: Path = tmp_path_factory.mktemp("fuzz")
    live = build_pod(workdir, f"sqlite:///{workdir / 'vpod.db'}", machines=4, agents_per_process=4)
    channel = grpc.insecure_channel(live.controller.admin_address)
    found = FuzzTarget(
        live,
        live.controller.user(),
        live.controller.admin(),
        apb_grpc.AgentRegistrationServiceStub(channel),
    )
    try:
        yield found
    finally:
        channel.close()
        live.close()
        summary = ", ".join(f"{rpc} {code}: {n}" for (rpc, code), n in sorted(CASES.items()))
        print(f"\nfuzz: {sum(CASES.values())} cases; {summary}")


def answer(rpc: str, call: Callable[..., Any], request: Any) -> tuple[grpc.StatusCode, Any]:
    """Send one request; check the answer is OK or a documented refusal with a sentence."""
    try:
        reply = call(request, timeout=CALL_TIMEOUT_S)
    except grpc.RpcError as exc:
        code, message = exc.code(), exc.details() or ""
        CASES[(rpc, code.name)] += 1
        assert code in DOCUMENTED, f"{rpc} answered {code.name}: {message!r} to {request!r}"[:3000]
        assert message.strip(), f"{rpc} answered {code.name} without a message"
        return code, None
    CASES[(rpc, "OK")] += 1
    return grpc.StatusCode.OK, reply


# ------------------------------------------------------------------- user API


@settings(FUZZ, max_examples=300)
@given(request=CREATES)
def test_create_partition(target: FuzzTarget, request: pb.CreatePartitionRequest) -> None:
    """CreatePartition with random requirements: OK (then removed again) or a refusal."""
    code, _ = answer("CreatePartition", target.user.users.CreatePartition, request)
    if code is grpc.StatusCode.OK and request.requirements.id != SEED:
        target.user.remove(request.requirements.id, force=True)


@settings(FUZZ, max_examples=150)
@given(
    request=st.one_of(
        st.builds(pb.RemovePartitionRequest, partition_id=PARTITION_IDS, force=st.booleans()),
        st.builds(pb.ResetPartitionRequest, partition_id=PARTITION_IDS, relocatable=st.booleans()),
        st.builds(pb.GetPartitionStatusRequest, partition_id=PARTITION_IDS),
        ipuof_config_requests(),
        st.builds(pb.ListPartitionsRequest, allocation_id=st.one_of(st.just("al"), IDS)),
        st.builds(pb.ListIPUAttributesRequest, agents=st.lists(AGENT_IDS, max_size=5)),
        st.just(pb.VersionRequest()),
    )
)
def test_partition_reads_and_changes(target: FuzzTarget, request: Any) -> None:
    """Remove, reset, status, IPUoF config, list and attribute requests with random ids and
    options (some name the existing partition ``seed``): OK or a refusal."""
    target.ensure_seed()
    users = target.user.users
    calls: dict[type, tuple[str, Callable[..., Any]]] = {
        pb.RemovePartitionRequest: ("RemovePartition", users.RemovePartition),
        pb.ResetPartitionRequest: ("ResetPartition", users.ResetPartition),
        pb.GetPartitionStatusRequest: ("GetPartitionStatus", users.GetPartitionStatus),
        pb.GetPartitionIpuofConfigRequest: (
            "GetPartitionIpuofConfig",
            users.GetPartitionIpuofConfig,
        ),
        pb.ListPartitionsRequest: ("ListPartitions", users.ListPartitions),
        pb.ListIPUAttributesRequest: ("ListIPUAttributes", users.ListIPUAttributes),
        pb.VersionRequest: ("GetVersion", target.user.version.GetVersion),
    }
    rpc, call = calls[type(request)]
    answer(rpc, call, request)


# ------------------------------------------------------------------ admin API


@settings(FUZZ, max_examples=100)
@given(
    request=st.one_of(
        st.builds(apb.CreateAgentRequest, agent_id=IDS, host=HOSTS, port=UINT32),
        st.builds(
            apb.CreateClusterRequest,
            cluster_id=IDS,
            agent_ids=st.lists(AGENT_IDS, max_size=6),
            num_ipulinkdomains=SMALL,
            topology=st.one_of(st.integers(0, 3), ENUM),
            cluster_topology=st.one_of(st.integers(0, 3), ENUM),
        ),
        st.builds(
            apb.CreateAllocationRequest,
            allocation_id=IDS,
            cluster_id=st.one_of(st.just("c1"), IDS),
            size=SIZES,
            agent_ids=st.lists(AGENT_IDS, max_size=5),
        ),
        st.builds(
            apb.CreateUserRequest,
            user_id=IDS,
            allocation_ids=st.lists(st.one_of(st.just("al"), IDS), max_size=3),
            admin=st.booleans(),
        ),
        st.builds(
            apb.ListPartitionsRequest,
            allocation_id=st.one_of(st.just(""), IDS),
            cluster_id=st.one_of(st.just(""), IDS),
        ),
        st.builds(apb.ListAgentsRequest, cluster_id=st.one_of(st.just(""), IDS)),
    )
)
def test_admin_creates_and_lists(target: FuzzTarget, request: Any) -> None:
    """Admin creates (agents at loopback or invalid hosts, clusters, allocations, users) and
    filtered lists with random values: OK (then removed again) or a refusal."""
    admin = target.admin
    calls: dict[type, tuple[str, Callable[..., Any]]] = {
        apb.CreateAgentRequest: ("CreateAgent", admin.CreateAgent),
        apb.CreateClusterRequest: ("CreateCluster", admin.CreateCluster),
        apb.CreateAllocationRequest: ("CreateAllocation", admin.CreateAllocation),
        apb.CreateUserRequest: ("CreateUser", admin.CreateUser),
        apb.ListPartitionsRequest: ("ListPartitions(admin)", admin.ListPartitions),
        apb.ListAgentsRequest: ("ListAgents", admin.ListAgents),
    }
    rpc, call = calls[type(request)]
    code, _ = answer(rpc, call, request)
    if code is not grpc.StatusCode.OK:
        return
    undo: dict[type, Callable[[], object]] = {
        apb.CreateAgentRequest: lambda: admin.RemoveAgent(
            apb.RemoveAgentRequest(agent_id=request.agent_id), timeout=30
        ),
        apb.CreateClusterRequest: lambda: admin.RemoveCluster(
            apb.RemoveClusterRequest(cluster_id=request.cluster_id, force=True), timeout=30
        ),
        apb.CreateAllocationRequest: lambda: admin.RemoveAllocation(
            apb.RemoveAllocationRequest(allocation_id=request.allocation_id, force=True),
            timeout=30,
        ),
        apb.CreateUserRequest: lambda: admin.RemoveUser(
            apb.RemoveUserRequest(user_id=request.user_id), timeout=30
        ),
    }
    if type(request) in undo:
        undo[type(request)]()


@FUZZ
@given(agent_id=AGENT_IDS, fault=FAULTS, clear_one=st.booleans())
def test_inject_and_clear_faults(
    target: FuzzTarget, agent_id: str, fault: agpb.Fault, clear_one: bool
) -> None:
    """InjectFault and ClearFault with random agents and fault fields: OK or a refusal; a
    fault that was injected is cleared again before the next example."""
    admin = target.admin
    code, _ = answer(
        "InjectFault", admin.InjectFault, apb.InjectFaultRequest(agent_id=agent_id, fault=fault)
    )
    answer(
        "ClearFault",
        admin.ClearFault,
        apb.ClearFaultRequest(agent_id=agent_id, fault=fault, all=not clear_one),
    )
    if code is grpc.StatusCode.OK:
        clear_all(admin, agent_id)


@FUZZ
@given(
    request=st.builds(
        apb.RegisterAgentRequest,
        agent_id=NEW_AGENT_IDS,
        host=HOSTS,
        port=UINT32,
        machine_type=st.one_of(st.sampled_from(["", "Bow-2000", "IPU-M2000", "bow2000"]), ODD_TEXT),
        serial=ODD_TEXT,
        ipuof_address=ODD_TEXT,
        boot_id=ODD_TEXT,
        agent_version=ODD_TEXT,
    )
)
def test_agent_registration(target: FuzzTarget, request: apb.RegisterAgentRequest) -> None:
    """RegisterAgent (what agents call on start) with random fields: OK (the agent is then
    removed) or a refusal."""
    code, _ = answer("RegisterAgent", target.registration.RegisterAgent, request)
    if code is grpc.StatusCode.OK:
        target.admin.RemoveAgent(apb.RemoveAgentRequest(agent_id=request.agent_id), timeout=30)


def test_the_pod_survived_the_fuzzing(target: FuzzTarget) -> None:
    """After all that, the pod still works: every agent online, a whole-pod partition can be
    created and removed."""
    target.user.remove_all()
    for agent_id in REAL_AGENTS:
        clear_all(target.admin, agent_id)
    wait_until(
        lambda: all(
            a.state == apb.AGENT_ONLINE
            for a in target.admin.ListAgents(apb.ListAgentsRequest(), timeout=30).agents
            if a.id in REAL_AGENTS
        ),
        "every agent online",
    )
    target.user.create("whole", 16)
    target.user.remove("whole")


# ------------------------------------------------- admin API: the rest of its fields

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
EDGE_SECONDS = st.sampled_from(
    [0, -1, -62135596800, -62135596801, 253402300799, 253402300800, 2**63 - 1, -(2**63)]
)
"""Around year 1 and year 9999 (Timestamp's own range), and the ends of int64."""
TIMESTAMPS = st.builds(
    lambda seconds, nanos: Timestamp(seconds=seconds, nanos=nanos),
    st.one_of(EDGE_SECONDS, INT64, st.integers(0, 2**31)),
    st.one_of(st.sampled_from([0, 999_999_999, 1_000_000_000, -1]), INT32),
)
UINT64 = st.one_of(st.sampled_from([0, 1, 2**63 - 1, 2**63, 2**64 - 1]), st.integers(0, 2**64 - 1))


@st.composite
def list_events_requests(draw: st.DrawFn) -> apb.ListEventsRequest:
    request = apb.ListEventsRequest(
        actor=draw(st.one_of(st.just(""), ODD_TEXT, st.text(min_size=190, max_size=400))),
        action=draw(st.one_of(st.just(""), st.just("create_partition"), ODD_TEXT)),
        target=draw(st.one_of(st.just(""), ODD_TEXT)),
        outcome=draw(st.one_of(st.just(""), st.just("ok"), ODD_TEXT)),
        limit=draw(st.one_of(st.sampled_from([0, 1, 1000, 1001]), UINT32)),
        before_id=draw(UINT64),
    )
    if draw(st.booleans()):
        request.since.CopyFrom(draw(TIMESTAMPS))
    if draw(st.booleans()):
        request.until.CopyFrom(draw(TIMESTAMPS))
    return request


@settings(FUZZ, max_examples=150)
@given(request=list_events_requests())
def test_list_events(target: FuzzTarget, request: apb.ListEventsRequest) -> None:
    """ListEvents with times anywhere an int64 of seconds reaches (and nanos out of range),
    ids up to 2**64 - 1 and any limit: OK or INVALID_ARGUMENT with a sentence."""
    code, _ = answer("ListEvents", target.admin.ListEvents, request)
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT), code


@settings(FUZZ, max_examples=120)
@given(
    request=st.one_of(
        st.builds(apb.RemoveAgentRequest, agent_id=NEW_AGENT_IDS, force=st.booleans()),
        st.builds(
            apb.RemoveClusterRequest,
            cluster_id=IDS.filter(lambda i: i != "c1"),
            force=st.booleans(),
        ),
        st.builds(
            apb.RemoveAllocationRequest,
            allocation_id=IDS.filter(lambda i: i != "al"),
            force=st.booleans(),
        ),
        st.builds(apb.RemoveUserRequest, user_id=IDS),
        st.builds(
            apb.GrantAllocationRequest,
            allocation_id=IDS.filter(lambda i: i != "al"),
            user_id=IDS,
        ),
        st.builds(
            apb.RevokeAllocationRequest,
            allocation_id=IDS.filter(lambda i: i != "al"),
            user_id=IDS,
        ),
        st.builds(
            apb.TestClusterRequest,
            cluster_id=st.one_of(st.just("c1"), IDS),
            tests=st.lists(st.one_of(st.integers(0, 6), ENUM), max_size=6),
        ),
        st.builds(apb.ListAllocationsRequest, cluster_id=st.one_of(st.just(""), IDS)),
        st.just(apb.ListClustersRequest()),
        st.just(apb.ListUsersRequest()),
        st.builds(
            apb.DiscoverAgentsRequest,
            addresses=st.lists(
                st.one_of(BAD_HOSTS, st.builds(lambda p: f"256.1.1.1:{p}", UINT32)), max_size=3
            ),
            add=st.booleans(),
        ),
        st.builds(pb.ListIPUAttributesRequest, agents=st.lists(AGENT_IDS, max_size=5)),
    )
)
def test_admin_removals_tests_and_other_lists(target: FuzzTarget, request: Any) -> None:
    """Every other admin rpc with random fields (removals of things that do not exist or
    are not the pod's own, link tests with any test kind, discovery of addresses that
    cannot be dialled, attribute lists): OK or a refusal."""
    admin = target.admin
    calls: dict[type, tuple[str, Callable[..., Any]]] = {
        apb.RemoveAgentRequest: ("RemoveAgent", admin.RemoveAgent),
        apb.RemoveClusterRequest: ("RemoveCluster", admin.RemoveCluster),
        apb.RemoveAllocationRequest: ("RemoveAllocation", admin.RemoveAllocation),
        apb.RemoveUserRequest: ("RemoveUser", admin.RemoveUser),
        apb.GrantAllocationRequest: ("GrantAllocation", admin.GrantAllocation),
        apb.RevokeAllocationRequest: ("RevokeAllocation", admin.RevokeAllocation),
        apb.TestClusterRequest: ("TestCluster", admin.TestCluster),
        apb.ListAllocationsRequest: ("ListAllocations", admin.ListAllocations),
        apb.ListClustersRequest: ("ListClusters", admin.ListClusters),
        apb.ListUsersRequest: ("ListUsers", admin.ListUsers),
        apb.DiscoverAgentsRequest: ("DiscoverAgents", admin.DiscoverAgents),
        pb.ListIPUAttributesRequest: ("ListIpuAttributes(admin)", admin.ListIpuAttributes),
    }
    rpc, call = calls[type(request)]
    answer(rpc, call, request)
