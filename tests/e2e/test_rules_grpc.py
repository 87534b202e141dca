"""Every partition rule of vipu-system.md §3, through a client generated from the user proto.

A real ``vpod up`` (a POD64: one IPU-Link domain of 16 machines; a POD256:
four domains joined by looped GW-Links) answers each request with the status
code vipu-user-api.md gives and a sentence that says what would be accepted.
Accepted partitions are checked against the administrator's view: which
agent and device holds each routing id, and where that machine listens.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from vpod.wire import virmgrpc_pb2 as pb

from .conftest import Pod
from .fixtures_cli import parse_table
from .fixtures_pods import (
    AdminView,
    UserApi,
    devices_of,
    ladder_place,
    rpc_error,
    wait_until,
)

# fixtures, used by their names api64, api256 and pod256
from .fixtures_pods import api64_fixture as api64_fixture
from .fixtures_pods import api256_fixture as api256_fixture
from .fixtures_pods import pod256_fixture as pod256_fixture
from .rules_cases import CLUSTER, MULTI_DOMAIN_REFUSALS, SINGLE_DOMAIN_REFUSALS, run_of

INVALID = grpc.StatusCode.INVALID_ARGUMENT
SERVER_PORTS = (50052, 50053, 50054, 50055)
RDMA_PORTS = (7471, 7472, 7473, 7474)


def listed_ids(api: UserApi) -> list[str]:
    return [p.id for p in api.list().partitions]


# --------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("size", "fields", "fragments"),
    [
        pytest.param(size, fields, fragments, id=case)
        for case, size, fields, fragments in SINGLE_DOMAIN_REFUSALS
    ],
)
def test_single_domain_rules_refuse_with_invalid_argument(
    api64: UserApi, size: int, fields: dict[str, Any], fragments: list[str]
) -> None:
    """A request breaking a §3 rule is INVALID_ARGUMENT naming what is allowed; nothing is made."""
    failure = api64.create_error("bad", size, **fields)
    assert failure.code == INVALID, failure
    for fragment in fragments:
        assert fragment in failure.details, failure.details
    assert "bad" not in listed_ids(api64)


@pytest.mark.parametrize(
    ("pid", "fragment"),
    [
        ("my job", "partition id 'my job' is not valid"),
        ("", "partition id is empty"),
        ("-leading-dash", "a letter or digit first"),
        ("x" * 64, "is 64 characters long"),
    ],
)
def test_bad_partition_ids_are_invalid_argument(api64: UserApi, pid: str, fragment: str) -> None:
    """Partition ids: 1-63 characters, a letter or digit first; the refusal quotes the rule."""
    failure = api64.create_error(pid, 4)
    assert failure.code == INVALID
    assert fragment in failure.details
    assert "use 1 to 63 characters" in failure.details


@pytest.mark.parametrize(
    ("size", "fields", "fragments"),
    [
        pytest.param(size, fields, fragments, id=case)
        for case, size, fields, fragments in MULTI_DOMAIN_REFUSALS
    ],
)
def test_multi_segment_rules_refuse_with_invalid_argument(
    api256: UserApi, size: int, fields: dict[str, Any], fragments: list[str]
) -> None:
    """Segments: size/k a valid size, k at most the domains, >64 is segments of 64, no GCD spans."""
    failure = api256.create_error("bad", size, **fields)
    assert failure.code == INVALID, failure
    for fragment in fragments:
        assert fragment in failure.details, failure.details
    assert "bad" not in listed_ids(api256)


# ------------------------------------------------------- defaults and layout


@pytest.mark.parametrize(
    ("size", "routing"),
    [
        (1, pb.IRT_DNC),
        (2, pb.IRT_DNC),
        (4, pb.IRT_DNC),
        (8, pb.IRT_SWNC),
        (16, pb.IRT_SWNC),
        (64, pb.IRT_RINGSWNC),
    ],
)
def test_default_routing_follows_size_on_a_torus_domain(
    api64: UserApi, size: int, routing: pb.IpuLinkRoutingType.ValueType
) -> None:
    """DNC for 1-4 IPUs, SWNC for 8 and 16, RINGSWNC for a whole torus ILD; no GW routing."""
    api64.create("r", size)
    spec = api64.partition("r").spec
    assert spec.ipulink_routing_type == routing
    assert spec.gw_routing_type == pb.GRT_UNDEFINED
    assert spec.num_ipulink_segments == 1
    assert spec.sync_type == pb.ST_GS2_DEFAULT
    config = api64.config("r")
    assert config.ipulink_routing_type == routing
    assert config.gcd_configs[0].attributes["Routing Type"] == pb.IpuLinkRoutingType.Name(
        routing
    ).removeprefix("IRT_")


def check_layout(pod: Pod, api: UserApi, pid: str, *, segments: int, gcds: int) -> None:
    """Cross-check a partition's spec and IPUoF config with where the administrator sees it."""
    partition = api.partition(pid)
    spec = partition.spec
    size = len(spec.ipus)
    segment_size, gcd_size = size // segments, size // gcds
    admin = AdminView(pod)
    locations = admin.locations(pid)
    agents = admin.agents()
    assert [loc["routing_id"] for loc in locations] == list(range(size))

    # ListPartitions: each IPU with its domain, its position and its routing ids
    ipus = sorted(spec.ipus, key=lambda i: i.routing_id)
    assert [i.routing_id for i in ipus] == list(range(size))
    domains_by_segment: dict[int, set[int]] = defaultdict(set)
    for item, location in zip(ipus, locations, strict=True):
        assert item.ipulink_domain_routing_id == item.routing_id // segment_size
        assert (item.ipulink_domain_topology_id, item.topology_id) == ladder_place(
            location["agent_id"], location["device_id"]
        )
        domains_by_segment[item.ipulink_domain_routing_id].add(item.ipulink_domain_topology_id)
    assert sorted(domains_by_segment) == list(range(segments))
    assert all(len(d) == 1 for d in domains_by_segment.values()), "a segment spans domains"
    assert len({min(d) for d in domains_by_segment.values()}) == segments, "segments share a domain"
    for s in range(segments):
        positions = [i.topology_id for i in ipus[s * segment_size : (s + 1) * segment_size]]
        assert positions == list(range(positions[0], positions[0] + segment_size))
        assert positions[0] % segment_size == 0, "a segment is aligned to its size"

    # IPUoF config: one device per IPU, GCD g holds routing ids g*gcd_size..
    config = api.config(pid)
    assert config.num_ipulink_segments == segments
    assert config.ipuof_server_version == partition.ipuof_server_version != ""
    assert len(config.gcd_configs) == gcds
    for g, gcd in enumerate(config.gcd_configs):
        assert [d.routing_id for d in gcd.devices] == list(range(g * gcd_size, (g + 1) * gcd_size))
        assert gcd.attributes["GCD Id"] == str(g)
        assert gcd.attributes["Num Replicas"] == str(spec.num_replicas // gcds)
    devices = devices_of(config)
    assert len(devices) == size
    per_machine: dict[str, list[int]] = defaultdict(list)
    for device, location in zip(devices, locations, strict=True):
        agent = agents[location["agent_id"]]
        assert device.ipulink_segment_id == device.routing_id // segment_size
        assert device.device_id == location["device_id"]
        assert device.ip == agent["host"], "IPUoF goes to the machine holding the IPU"
        assert device.server_port == SERVER_PORTS[device.device_id]
        assert device.rdma_port == RDMA_PORTS[device.device_id]
        assert device.ipu_arch_id == 2
        assert device.chip_id.startswith("0x")
        assert device.gwsw_version
        assert device.ipum_sw_version
        per_machine[location["agent_id"]].append(device.device_id)
    for agent_id, device_ids in per_machine.items():
        first = device_ids[0]
        assert device_ids == list(range(first, first - len(device_ids), -1)), (
            f"device ids on {agent_id} run 3, 2, 1, 0 in routing order, not {device_ids}"
        )
        if segment_size >= 4:
            assert device_ids == [3, 2, 1, 0]


@pytest.mark.parametrize(
    ("size", "fields", "segments", "routing"),
    [
        pytest.param(8, {"num_ipulink_segments": 4, "num_gcds": 4}, 4, pb.IRT_DNC, id="4x2"),
        pytest.param(16, {"num_ipulink_segments": 2, "num_gcds": 2}, 2, pb.IRT_SWNC, id="2x8"),
        pytest.param(
            64,
            {"num_ipulink_segments": 4, "num_gcds": 4, "num_replicas": 16},
            4,
            pb.IRT_SWNC,
            id="4x16-replicated",
        ),
        pytest.param(128, {"num_gcds": 2}, 2, pb.IRT_RINGSWNC, id="128-implies-2x64"),
        pytest.param(192, {"num_gcds": 3}, 3, pb.IRT_RINGSWNC, id="192-in-3-of-4-domains"),
        pytest.param(256, {"num_gcds": 4}, 4, pb.IRT_RINGSWNC, id="whole-pod256"),
    ],
)
def test_multi_segment_partitions_span_domains_over_ring_gw_links(
    pod256: Pod, api256: UserApi, size: int, fields: dict[str, Any], segments: int, routing: int
) -> None:
    """k segments of size/k take k domains; routing ids run segment by segment; GW routing RING."""
    api256.create("multi", size, **fields)
    spec = api256.partition("multi").spec
    assert spec.num_ipulink_segments == segments
    assert spec.gw_routing_type == pb.GRT_RING
    assert spec.ipulink_routing_type == routing
    assert spec.num_gcds == fields["num_gcds"]
    assert spec.num_replicas == fields.get("num_replicas", fields["num_gcds"])
    config = api256.config("multi")
    assert config.gw_routing_type == pb.GRT_RING
    check_layout(pod256, api256, "multi", segments=segments, gcds=fields["num_gcds"])
    [row] = parse_table(pod256.run("vipu", "list", "partitions").stdout)[1]
    assert (row["ILDs"], row["GW Routing"], row["Size"]) == (str(segments), "RING", str(size))


def test_multi_gcd_partition_in_one_domain(pod256: Pod, api256: UserApi) -> None:
    """A 64-IPU partition of 4 GCDs and 16 replicas: one segment, four configs of 16 devices."""
    api256.create("gcds", 64, num_gcds=4, num_replicas=16)
    spec = api256.partition("gcds").spec
    assert spec.gw_routing_type == pb.GRT_UNDEFINED
    assert spec.ipulink_routing_type == pb.IRT_RINGSWNC
    check_layout(pod256, api256, "gcds", segments=1, gcds=4)
    one = api256.config("gcds", gcd=2)
    assert len(one.gcd_configs) == 1
    assert one.gcd_configs[0].attributes["GCD Id"] == "2"
    assert [d.routing_id for d in one.gcd_configs[0].devices] == list(range(32, 48))


def test_explicit_ipus_are_placed_exactly_there(pod64: Pod, api64: UserApi) -> None:
    """Named IPUs (with their cluster) are the partition's IPUs, in the routing order given."""
    api64.create("named", 8, cluster_id=CLUSTER, ipus=run_of(0, 8, 8))
    spec = api64.partition("named").spec
    ordered = sorted(spec.ipus, key=lambda i: i.routing_id)
    assert [(i.ipulink_domain_topology_id, i.topology_id) for i in ordered] == [
        (0, p) for p in range(8, 16)
    ]
    locations = AdminView(pod64).locations("named")
    assert [(loc["agent_id"], loc["device_id"]) for loc in locations] == [
        (agent, device) for agent in ("ag3", "ag4") for device in (3, 2, 1, 0)
    ]
    check_layout(pod64, api64, "named", segments=1, gcds=1)


def test_reconfigurable_partition_in_one_domain(api64: UserApi) -> None:
    """Reconfigurable works inside one ILD and always uses sync type c2-compatible."""
    api64.create("shared", 16, reconfigurable=True)
    spec = api64.partition("shared").spec
    assert spec.reconfigurable
    assert spec.sync_type == pb.ST_GS2_DEFAULT
    attributes = api64.config("shared").gcd_configs[0].attributes
    assert attributes["Fabric Reconfigurable"] == "true"
    assert attributes["Sync Type"] == "c2-compatible"


def test_ipuof_config_of_a_gcd_that_does_not_exist_is_invalid(api64: UserApi) -> None:
    """Asking for GCD 2 of a 2-GCD partition is INVALID_ARGUMENT naming the GCDs there are."""
    api64.create("two", 8, num_gcds=2)
    request = pb.GetPartitionIpuofConfigRequest(partition_id="two")
    request.gcd_id.id = 2
    failure = rpc_error(api64.users.GetPartitionIpuofConfig, request)
    assert failure.code == INVALID
    assert "has 2 GCD(s)" in failure.details
    assert "0..1" in failure.details


# --------------------------------------------------------- ids and existence


def test_duplicate_id_is_already_exists_and_an_identical_repeat_is_accepted(
    api64: UserApi,
) -> None:
    """The same create again returns the same partition; another shape under that id is refused."""
    api64.create("dup", 4, num_gcds=2)
    before = api64.config("dup")
    assert api64.create("dup", 4, num_gcds=2) == "dup"
    assert listed_ids(api64).count("dup") == 1
    assert api64.config("dup") == before, "a repeated create must not move the partition"
    failure = api64.create_error("dup", 8)
    assert failure.code == grpc.StatusCode.ALREADY_EXISTS
    assert "partition dup already exists with 4 IPUs" in failure.details
    assert "remove it first or choose another id" in failure.details


@pytest.mark.parametrize(
    "different",
    [
        pytest.param({"num_gcds": 1}, id="num_gcds"),
        pytest.param({"num_gcds": 2, "num_replicas": 4}, id="num_replicas"),
        pytest.param({"num_gcds": 2, "reconfigurable": True}, id="reconfigurable"),
        pytest.param({"num_gcds": 2, "sync_type": pb.ST_POD_NATIVE_DEFAULT}, id="sync_type"),
        pytest.param({"num_gcds": 2, "ipulink_routing_type": pb.IRT_BTNC}, id="routing"),
    ],
)
def test_a_create_differing_in_any_field_is_not_a_repeat(
    api64: UserApi, different: dict[str, Any]
) -> None:
    """Idempotence covers identical requests only: any other spec under a taken id is refused."""
    api64.create("dup", 4, num_gcds=2)
    failure = api64.create_error("dup", 4, **different)
    assert failure.code == grpc.StatusCode.ALREADY_EXISTS, failure
    assert "already exists" in failure.details


@pytest.mark.parametrize(
    ("rpc", "request_"),
    [
        ("RemovePartition", pb.RemovePartitionRequest(partition_id="ghost")),
        ("RemovePartition", pb.RemovePartitionRequest(partition_id="ghost", force=True)),
        ("ResetPartition", pb.ResetPartitionRequest(partition_id="ghost")),
        ("GetPartitionStatus", pb.GetPartitionStatusRequest(partition_id="ghost")),
        ("GetPartitionIpuofConfig", pb.GetPartitionIpuofConfigRequest(partition_id="ghost")),
    ],
    ids=["remove", "remove-force", "reset", "status", "ipuof-config"],
)
def test_unknown_partition_is_not_found(api64: UserApi, rpc: str, request_: Any) -> None:
    """Every partition rpc on an id nobody created is NOT_FOUND, pointing at the listing."""
    failure = rpc_error(getattr(api64.users, rpc), request_)
    assert failure.code == grpc.StatusCode.NOT_FOUND
    assert "partition ghost does not exist" in failure.details
    assert "vipu list partitions" in failure.details


def test_unknown_allocation_is_not_found(api64: UserApi) -> None:
    """Creating in, or listing, an allocation that does not exist is NOT_FOUND naming it."""
    failure = api64.create_error("p", 4, allocation_id="nope")
    assert failure.code == grpc.StatusCode.NOT_FOUND
    assert "allocation nope does not exist" in failure.details
    listing = rpc_error(api64.users.ListPartitions, pb.ListPartitionsRequest(allocation_id="nope"))
    assert listing.code == grpc.StatusCode.NOT_FOUND
    assert "allocation nope" in listing.details
    assert api64.create("p", 4, allocation_id="default") == "p"
    assert [p.id for p in api64.list("default").partitions] == ["p"]


# ------------------------------------------------------------------ capacity


def test_no_room_is_resource_exhausted_naming_the_largest_free_block(
    pod64: Pod, api64: UserApi
) -> None:
    """When no aligned block fits, the reason names the largest free block and its machines."""
    for n in range(3):
        api64.create(f"q{n}", 16)
    api64.create("eight", 8)  # leaves 8 IPUs free: one block of 8 on two machines
    failure = api64.create_error("big", 16)
    assert failure.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "no aligned block of 16 free IPUs in allocation default" in failure.details
    assert "largest free block: 8 IPUs (machines ag" in failure.details
    named = failure.details.split("(machines ", 1)[1].split(")", 1)[0]
    first, last = (int(a.removeprefix("ag")) for a in named.split("-"))
    admin = AdminView(pod64)
    busy = {loc["agent_id"] for pid in ("q0", "q1", "q2", "eight") for loc in admin.locations(pid)}
    free = {f"ag{m}" for m in range(first, last + 1)}
    assert len(free) == 2
    assert not free & busy, "the named machines are the free ones"
    api64.create("fits", 8)  # exactly the block the message named
    assert {loc["agent_id"] for loc in admin.locations("fits")} == free
    full = api64.create_error("one-more", 1)
    assert full.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "every IPU of it is in a partition" in full.details


def test_named_ipus_in_use_are_resource_exhausted_naming_the_holder(api64: UserApi) -> None:
    """Explicit IPUs that another partition holds are refused with that partition's name."""
    api64.create("holder", 4, cluster_id=CLUSTER, ipus=run_of(0, 4, 4))
    failure = api64.create_error("taker", 2, cluster_id=CLUSTER, ipus=run_of(0, 6, 2))
    assert failure.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "already in partition holder" in failure.details


# ---------------------------------------------------------- wrong state


def _state(api: UserApi, pid: str) -> tuple[int, int] | None:
    """(ready state, operation state) of a partition, or None while it does not exist."""
    try:
        status = api.status(pid)
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.NOT_FOUND:
            return None
        raise
    return status.ready_state, status.operation_state


def _agent_back(pod: Pod, api: UserApi, agent: str, ipus: list[pb.PartitionIpu]) -> bool:
    """Whether the agent is ONLINE and placement uses its IPUs again."""
    if AdminView(pod).agents()[agent]["state"] != "AGENT_ONLINE":
        return False
    try:
        api.create("probe", len(ipus), cluster_id=CLUSTER, ipus=ipus)
    except grpc.RpcError:
        return False
    api.remove("probe")
    return True


def test_operations_the_state_does_not_allow_are_failed_precondition(
    pod64: Pod, api64: UserApi
) -> None:
    """While an agent hangs: CREATING and REMOVING refuse other operations; ERROR has no config.

    Machine ag16 holds positions 60..63 of the domain. ``held`` is created on
    two of its IPUs while it answers; then it hangs, so creating ``stuck`` on
    the other two and removing ``held`` both wait for the agent's deadline.
    """
    api64.create("held", 2, cluster_id=CLUSTER, ipus=run_of(0, 62, 2))
    pod64.run("vipu-admin", "inject", "fault", "--agent", "ag16", "--kind", "hang")
    try:
        with ThreadPoolExecutor(2) as pool:
            creating = pool.submit(
                api64.create_error, "stuck", 2, cluster_id=CLUSTER, ipus=run_of(0, 60, 2)
            )
            removing = pool.submit(
                rpc_error,
                api64.users.RemovePartition,
                pb.RemovePartitionRequest(partition_id="held"),
            )
            wait_until(
                lambda: (
                    creating.done()
                    or removing.done()
                    or (
                        _state(api64, "stuck") == (pb.PS_PENDING, pb.POS_CREATING)
                        and _state(api64, "held") == (pb.PS_ACTIVE, pb.POS_REMOVING)
                    )
                ),
                "stuck is CREATING and held is REMOVING",
            )
            assert not creating.done(), "the hung agent did not hold the create"
            assert not removing.done(), "the hung agent did not hold the remove"
            refusals = {
                "remove stuck": rpc_error(
                    api64.users.RemovePartition, pb.RemovePartitionRequest(partition_id="stuck")
                ),
                "reset stuck": rpc_error(
                    api64.users.ResetPartition, pb.ResetPartitionRequest(partition_id="stuck")
                ),
                "config of stuck": rpc_error(
                    api64.users.GetPartitionIpuofConfig,
                    pb.GetPartitionIpuofConfigRequest(partition_id="stuck"),
                ),
                "create stuck again": api64.create_error(
                    "stuck", 2, cluster_id=CLUSTER, ipus=run_of(0, 60, 2)
                ),
                "reset held": rpc_error(
                    api64.users.ResetPartition, pb.ResetPartitionRequest(partition_id="held")
                ),
                "remove held again": rpc_error(
                    api64.users.RemovePartition, pb.RemovePartitionRequest(partition_id="held")
                ),
            }
            created, removed = creating.result(), removing.result()
        for what, failure in refusals.items():
            assert failure.code == grpc.StatusCode.FAILED_PRECONDITION, (what, failure)
        assert "CREATING" in refusals["remove stuck"].details
        assert "until it is ACTIVE or ERROR" in refusals["reset stuck"].details
        assert "available once it is ACTIVE" in refusals["config of stuck"].details
        assert "wait for it to finish" in refusals["create stuck again"].details
        assert "REMOVING" in refusals["reset held"].details

        assert created.code == grpc.StatusCode.UNAVAILABLE
        assert "ag16" in created.details
        assert "released" in created.details
        assert _state(api64, "stuck") is None
        assert removed.code == grpc.StatusCode.UNAVAILABLE
        assert "ag16" in removed.details
        assert "--force" in removed.details

        assert _state(api64, "held") == (pb.PS_ERROR, pb.POS_FAILED)
        assert any("ag16" in e for e in api64.status("held").errors)
        no_config = rpc_error(
            api64.users.GetPartitionIpuofConfig,
            pb.GetPartitionIpuofConfigRequest(partition_id="held"),
        )
        assert no_config.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "available once it is ACTIVE" in no_config.details
        again = api64.create_error("held", 2, cluster_id=CLUSTER, ipus=run_of(0, 62, 2))
        assert again.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "remove it with --force" in again.details
        api64.remove("held", force=True)
        assert _state(api64, "held") is None
    finally:
        pod64.run("vipu-admin", "clear", "fault", "--agent", "ag16", "--all")
    wait_until(
        lambda: _agent_back(pod64, api64, "ag16", run_of(0, 60, 4)),
        "ag16 answers again and its IPUs can be placed",
    )
