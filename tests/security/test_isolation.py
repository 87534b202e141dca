"""Tenants are isolated on every endpoint: gRPC user API, admin API, REST, and the CLIs.

alice (alloc-a, partition part-of-alice) and bob (alloc-b, part-of-bob) each see only
their own allocations and partitions in every list; for the other's
partition every read and change is NOT_FOUND (404) with exactly the words a
partition that does not exist gets, so the answer does not reveal that it
exists. carol shares alloc-a with alice, and so shares its partitions.
"""

from __future__ import annotations

import json

import grpc
import pytest

from vpod.wire import admin_pb2 as apb
from vpod.wire import virmgrpc_pb2 as pb

from .conftest import Tenants
from .procs import CALL_TIMEOUT_S, run_tool

pytestmark = pytest.mark.e2e

T = CALL_TIMEOUT_S
GHOST = "no-such-partition"


def refusal(call: object, *args: object, **kwargs: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, timeout=T, **kwargs)  # type: ignore[operator]
    assert isinstance(caught.value, grpc.RpcError)
    return caught.value


def same_words(error: grpc.RpcError, ghost: grpc.RpcError, hidden: str) -> None:
    """``error`` (about ``hidden``) reads exactly as ``ghost`` (about a partition that isn't)."""
    assert error.code() is ghost.code() is grpc.StatusCode.NOT_FOUND
    assert (error.details() or "").replace(hidden, GHOST) == ghost.details()


# -- gRPC user API --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "own"),
    [("alice", ["part-of-alice"]), ("bob", ["part-of-bob"]), ("carol", ["part-of-alice"])],
)
def test_list_partitions_shows_only_the_callers_allocations(
    tenants: Tenants, user: str, own: list[str]
) -> None:
    stub = tenants.user_stub()
    reply = stub.ListPartitions(pb.ListPartitionsRequest(), metadata=tenants.md(user), timeout=T)
    assert [p.id for p in reply.partitions] == own


def test_listing_another_tenants_allocation_is_not_found(tenants: Tenants) -> None:
    """Naming bob's allocation reads like naming one that does not exist."""
    stub = tenants.user_stub()
    foreign = refusal(
        stub.ListPartitions,
        pb.ListPartitionsRequest(allocation_id="alloc-b"),
        metadata=tenants.md("alice"),
    )
    ghost = refusal(
        stub.ListPartitions,
        pb.ListPartitionsRequest(allocation_id="alloc-z"),
        metadata=tenants.md("alice"),
    )
    assert foreign.code() is grpc.StatusCode.NOT_FOUND
    assert (foreign.details() or "").replace("alloc-b", "alloc-z") == ghost.details()


def test_ipu_attributes_cover_only_the_callers_machines(tenants: Tenants) -> None:
    stub = tenants.user_stub()
    reply = stub.ListIPUAttributes(
        pb.ListIPUAttributesRequest(), metadata=tenants.md("alice"), timeout=T
    )
    assert sorted(e.agent for e in reply.entries) == ["ag1", "ag2"]
    foreign = refusal(
        stub.ListIPUAttributes,
        pb.ListIPUAttributesRequest(agents=["ag3"]),
        metadata=tenants.md("alice"),
    )
    ghost = refusal(
        stub.ListIPUAttributes,
        pb.ListIPUAttributesRequest(agents=["ag9"]),
        metadata=tenants.md("alice"),
    )
    assert foreign.code() is grpc.StatusCode.NOT_FOUND
    assert (foreign.details() or "").replace("ag3", "ag9") == ghost.details()


@pytest.mark.parametrize(
    ("rpc", "request_of"),
    [
        ("GetPartitionStatus", lambda p: pb.GetPartitionStatusRequest(partition_id=p)),
        ("GetPartitionIpuofConfig", lambda p: pb.GetPartitionIpuofConfigRequest(partition_id=p)),
        ("ResetPartition", lambda p: pb.ResetPartitionRequest(partition_id=p)),
        ("RemovePartition", lambda p: pb.RemovePartitionRequest(partition_id=p)),
        ("RemovePartition", lambda p: pb.RemovePartitionRequest(partition_id=p, force=True)),
    ],
)
def test_another_tenants_partition_is_not_found_for_every_call(
    tenants: Tenants, rpc: str, request_of: object
) -> None:
    """bob's partition is NOT_FOUND to alice, worded as for a partition that does not exist."""
    stub = tenants.user_stub()
    method = getattr(stub, rpc)
    foreign = refusal(method, request_of("part-of-bob"), metadata=tenants.md("alice"))  # type: ignore[operator]
    ghost = refusal(method, request_of(GHOST), metadata=tenants.md("alice"))  # type: ignore[operator]
    same_words(foreign, ghost, "part-of-bob")
    status = stub.GetPartitionStatus(
        pb.GetPartitionStatusRequest(partition_id="part-of-bob"),
        metadata=tenants.md("bob"),
        timeout=T,
    )
    assert status.status.ready_state == pb.PS_ACTIVE


def test_creating_in_another_tenants_allocation_is_not_found(tenants: Tenants) -> None:
    stub = tenants.user_stub()

    def create(allocation: str) -> grpc.RpcError:
        request = pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id="intruder", size=1, allocation_id=allocation)
        )
        return refusal(stub.CreatePartition, request, metadata=tenants.md("alice"))

    foreign, ghost = create("alloc-b"), create("alloc-z")
    assert foreign.code() is grpc.StatusCode.NOT_FOUND
    assert (foreign.details() or "").replace("alloc-b", "alloc-z") == ghost.details()


def test_a_taken_partition_id_says_nothing_about_its_owner(tenants: Tenants) -> None:
    """Partition ids are one namespace, so a taken id is refused, without its size or owner."""
    request = pb.CreatePartitionRequest(
        requirements=pb.PartitionRequirements(id="part-of-bob", size=4, allocation_id="alloc-a")
    )
    error = refusal(tenants.user_stub().CreatePartition, request, metadata=tenants.md("alice"))
    assert error.code() is grpc.StatusCode.ALREADY_EXISTS
    assert error.details() == "partition id part-of-bob is taken: choose another id"


def test_users_of_one_allocation_share_its_partitions(tenants: Tenants) -> None:
    """carol sees, uses and removes what alice made in their allocation, and the reverse."""
    stub = tenants.user_stub()
    request = pb.CreatePartitionRequest(
        requirements=pb.PartitionRequirements(id="shared", size=1, allocation_id="alloc-a")
    )
    stub.CreatePartition(request, metadata=tenants.md("carol"), timeout=T)
    try:
        listed = stub.ListPartitions(
            pb.ListPartitionsRequest(), metadata=tenants.md("alice"), timeout=T
        )
        assert {p.id for p in listed.partitions} == {"part-of-alice", "shared"}
        config = stub.GetPartitionIpuofConfig(
            pb.GetPartitionIpuofConfigRequest(partition_id="part-of-alice"),
            metadata=tenants.md("carol"),
            timeout=T,
        )
        assert sum(len(g.devices) for g in config.ipuof_config.gcd_configs) == 4
        stub.ResetPartition(
            pb.ResetPartitionRequest(partition_id="part-of-alice"),
            metadata=tenants.md("carol"),
            timeout=T,
        )
    finally:
        stub.RemovePartition(
            pb.RemovePartitionRequest(partition_id="shared"),
            metadata=tenants.md("alice"),
            timeout=T,
        )


# -- admin endpoint (vipu list allocations) -------------------------------------------------


@pytest.mark.parametrize(
    ("user", "own"), [("alice", ["alloc-a"]), ("bob", ["alloc-b"]), ("carol", ["alloc-a"])]
)
def test_list_allocations_on_the_admin_endpoint_shows_only_ones_own(
    tenants: Tenants, user: str, own: list[str]
) -> None:
    """Plain users may call ListAllocations; they get their allocations, without other users."""
    reply = tenants.admin_stub().ListAllocations(
        apb.ListAllocationsRequest(), metadata=tenants.md(user), timeout=T
    )
    assert [a.allocation.id for a in reply.allocations] == own
    assert all(not a.user_ids for a in reply.allocations)
    everything = tenants.admin_stub().ListAllocations(
        apb.ListAllocationsRequest(), metadata=tenants.md("admin"), timeout=T
    )
    assert {a.allocation.id: list(a.user_ids) for a in everything.allocations} == {
        "alloc-a": ["alice", "carol"],
        "alloc-b": ["bob"],
    }


def test_the_user_endpoint_lists_allocations_alike_and_serves_no_other_admin_call(
    tenants: Tenants,
) -> None:
    """`vipu list allocations` asks the user endpoint (a vPOD's server cannot reach the admin
    one): the same visibility there, and every other admin method is UNIMPLEMENTED, even
    for the administrator."""
    on_user_port = tenants.admin_stub_on_user_port()
    for user, own in (("alice", ["alloc-a"]), ("bob", ["alloc-b"])):
        reply = on_user_port.ListAllocations(
            apb.ListAllocationsRequest(), metadata=tenants.md(user), timeout=T
        )
        assert [a.allocation.id for a in reply.allocations] == own
    for call, request in (
        (on_user_port.ListUsers, apb.ListUsersRequest()),
        (on_user_port.CreateUser, apb.CreateUserRequest(user_id="mallory", admin=True)),
        (on_user_port.RemoveAllocation, apb.RemoveAllocationRequest(allocation_id="alloc-b")),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            call(request, metadata=tenants.md("admin"), timeout=T)
        assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED


# -- REST -----------------------------------------------------------------------------------


def test_rest_lists_show_only_the_callers_own(tenants: Tenants) -> None:
    with tenants.http("bob") as http:
        partitions = http.get("/api/v1/partitions").json()["partitions"]
        allocations = http.get("/api/v1/allocations").json()["allocations"]
        agents = http.get("/api/v1/ipu-attributes").json()["agents"]
    assert [p["id"] for p in partitions] == ["part-of-bob"]
    assert [a["id"] for a in allocations] == ["alloc-b"]
    assert sorted(a["agent_id"] for a in agents) == ["ag3", "ag4"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/partitions/{}"),
        ("GET", "/api/v1/partitions/{}/status"),
        ("GET", "/api/v1/partitions/{}/ipuof-config"),
        ("POST", "/api/v1/partitions/{}/reset"),
        ("DELETE", "/api/v1/partitions/{}"),
        ("DELETE", "/api/v1/partitions/{}?force=true"),
    ],
)
def test_rest_another_tenants_partition_is_404_like_a_missing_one(
    tenants: Tenants, method: str, path: str
) -> None:
    with tenants.http("alice") as http:
        foreign = http.request(method, path.format("part-of-bob"))
        ghost = http.request(method, path.format(GHOST))
    assert foreign.status_code == ghost.status_code == 404
    assert foreign.text.replace("part-of-bob", GHOST) == ghost.text


def test_rest_cannot_create_in_another_tenants_allocation(tenants: Tenants) -> None:
    with tenants.http("alice") as http:
        reply = http.post(
            "/api/v1/partitions", json={"id": "intruder", "size": 1, "allocation_id": "alloc-b"}
        )
        listed = http.get("/api/v1/partitions", params={"allocation": "alloc-b"})
    assert reply.status_code == 404
    assert listed.status_code == 404


# -- the command lines ----------------------------------------------------------------------


def test_vipu_lists_only_the_callers_partitions_and_allocations(tenants: Tenants) -> None:
    config = str(tenants.config_file("bob"))
    partitions = run_tool("vipu", "--config", config, "list", "partitions", "--json")
    allocations = run_tool("vipu", "--config", config, "list", "allocations")
    assert partitions.returncode == 0, partitions.stderr
    assert [p["id"] for p in json.loads(partitions.stdout)["partitions"]] == ["part-of-bob"]
    assert allocations.returncode == 0, allocations.stderr
    assert [row.split("|")[0].strip() for row in allocations.stdout.splitlines()[2:]] == ["alloc-b"]


def test_vipu_get_of_another_tenants_partition_fails_as_for_a_missing_one(
    tenants: Tenants,
) -> None:
    config = str(tenants.config_file("bob"))
    foreign = run_tool("vipu", "--config", config, "get", "partition", "part-of-alice")
    ghost = run_tool("vipu", "--config", config, "get", "partition", GHOST)
    assert foreign.returncode == ghost.returncode == 1
    assert foreign.stderr.replace("part-of-alice", GHOST) == ghost.stderr
