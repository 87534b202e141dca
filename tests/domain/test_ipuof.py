"""IPUoF configs and the gc-info device listing built from a partition and its IPUs."""

import json

import pytest

from vpod.domain.catalog import MachineType
from vpod.domain.errors import InvalidSpec
from vpod.domain.ipuof import (
    FILE_DEVICE_KEYS,
    IpuEndpoint,
    ListedDevice,
    device_listing,
    gcd_attributes,
    gcd_ipuof_config,
    ipuof_conf_file,
    ipuof_environment,
    listing_table,
    partition_ipuof_config,
)
from vpod.domain.partitions import PartitionRequirements, PartitionSpec, resolve_partition_spec
from vpod.domain.routing import SyncType
from vpod.domain.topology import Pod, shape

BOW = MachineType.BOW2000


def endpoints_for(spec: PartitionSpec, pod: Pod) -> list[IpuEndpoint]:
    """What a controller would gather from its agents for the spec's explicit IPUs."""
    assert spec.ipus is not None
    result = []
    for routing_id, (domain, position) in enumerate(spec.ipus):
        ref = pod.ipu(pod.slot_of(domain, position))
        result.append(
            IpuEndpoint(
                routing_id=routing_id,
                segment_id=spec.segment_of(routing_id),
                ip=f"10.0.{ref.machine}.1",
                server_port=50052 + ref.device_id,
                rdma_port=7471 + ref.device_id,
                device_id=ref.device_id,
                chip_id=f"chip-{ref.slot}",
                gwsw_version="2.6.0",
                ipum_sw_version="2.6.0-ipum",
                ipu_id=ref.slot,
            )
        )
    return result


POD = shape("pod128")
SPEC = resolve_partition_spec(
    PartitionRequirements(
        id="job1",
        size=16,
        cluster_id="c1",
        num_segments=2,
        num_gcds=2,
        num_replicas=8,
        ipus=tuple((0, p) for p in range(8, 16)) + tuple((1, p) for p in range(0, 8)),
    ),
    pod=POD,
)
ENDPOINTS = endpoints_for(SPEC, POD)


def test_a_gcd_config_lists_its_devices_in_routing_order() -> None:
    """GCD 1 of a 2-segment partition holds routing ids 8..15, all in segment 1."""
    config = gcd_ipuof_config(SPEC, reversed(ENDPOINTS), 1, machine_type=BOW)
    devices = config["devices"]
    assert [d["routing_id"] for d in devices] == list(range(8, 16))
    assert {d["ipulink_segment_id"] for d in devices} == {1}
    assert [d["device_id"] for d in devices[:4]] == [3, 2, 1, 0]
    first = devices[0]
    assert first == {
        "ip": "10.0.16.1",
        "server_port": 50055,
        "rdma_port": 7474,
        "device_id": 3,
        "ipulink_segment_id": 1,
        "routing_id": 8,
        "ipu_arch_id": 2,
        "ipu_id": 64,
        "chip_id": "chip-64",
        "gwsw_version": "2.6.0",
        "ipum_sw_version": "2.6.0-ipum",
    }


def test_gcd_attributes_describe_the_partition() -> None:
    """Attributes carry reconfigurability, IPU version, replicas per GCD, routing, sync, GCD id."""
    assert gcd_attributes(SPEC, 1, machine_type=BOW) == {
        "Fabric Reconfigurable": "false",
        "IPU version": "ipu21",
        "Num Replicas": "4",
        "Routing Type": "SWNC",
        "Sync Type": "c2-compatible",
        "GCD Id": "1",
    }


def test_attributes_of_a_reconfigurable_m2000_partition() -> None:
    spec = resolve_partition_spec(
        PartitionRequirements(id="r1", size=4, reconfigurable=True), pod=shape("m2000-pod64")
    )
    attributes = gcd_attributes(spec, 0, machine_type=MachineType.M2000)
    assert attributes["Fabric Reconfigurable"] == "true"
    assert attributes["IPU version"] == "ipu2"
    assert attributes["Routing Type"] == "DNC"
    assert attributes["Sync Type"] == "c2-compatible"
    assert attributes["Num Replicas"] == "1"


def test_sync_type_attribute_uses_the_cli_spelling() -> None:
    spec = resolve_partition_spec(
        PartitionRequirements(id="n1", size=8, sync_type=SyncType.POD_NATIVE_DEFAULT),
        pod=shape("pod64"),
    )
    assert gcd_attributes(spec, 0, machine_type=BOW)["Sync Type"] == "pod-native-default"


def test_partition_config_mirrors_the_wire_message() -> None:
    """Every GCD by default, or only the one asked for; enums by member name."""
    config = partition_ipuof_config(
        SPEC, ENDPOINTS, machine_type=BOW, ipuof_server_version="1.18.0"
    )
    assert {k: v for k, v in config.items() if k != "gcd_configs"} == {
        "ipulink_routing_type": "SWNC",
        "sync_type": "GS2_DEFAULT",
        "reconfigurable": False,
        "gw_routing_type": "RING",
        "num_ipulink_segments": 2,
        "ipuof_server_version": "1.18.0",
    }
    assert [g["attributes"]["GCD Id"] for g in config["gcd_configs"]] == ["0", "1"]
    only = partition_ipuof_config(SPEC, ENDPOINTS, machine_type=BOW, gcd_id=1)
    assert only["gcd_configs"] == [gcd_ipuof_config(SPEC, ENDPOINTS, 1, machine_type=BOW)]


def test_single_segment_partition_has_no_gw_routing() -> None:
    pod = shape("pod64")
    spec = resolve_partition_spec(
        PartitionRequirements(
            id="s1", size=4, cluster_id="c1", ipus=((0, 4), (0, 5), (0, 6), (0, 7))
        ),
        pod=pod,
    )
    config = partition_ipuof_config(spec, endpoints_for(spec, pod), machine_type=BOW)
    assert config["gw_routing_type"] is None
    assert config["ipulink_routing_type"] == "DNC"


def test_static_file_is_named_per_gcd_and_holds_only_file_keys() -> None:
    """``<partition>_gcd<N>.conf`` with the documented device keys, serialisable as JSON."""
    name, content = ipuof_conf_file("job1", gcd_ipuof_config(SPEC, ENDPOINTS, 1, machine_type=BOW))
    assert name == "job1_gcd1.conf"
    assert set(content) == {"devices", "attributes"}
    assert all(tuple(d) == FILE_DEVICE_KEYS for d in content["devices"])
    assert json.loads(json.dumps(content)) == content


@pytest.mark.parametrize(
    ("endpoints", "message"),
    [
        (ENDPOINTS[:-1], "no IPU was given for routing id 15"),
        (ENDPOINTS[2:], "no IPU was given for routing ids 0, 1"),
        ([*ENDPOINTS, ENDPOINTS[3]], "two IPUs claim routing id 3"),
        (
            [*ENDPOINTS[:-1], IpuEndpoint(16, 1, "h", 1, 1, 0, "c", "v")],
            r"routing id 16 is out of range: use 0\.\.15",
        ),
        (
            [*ENDPOINTS[:-1], IpuEndpoint(15, 0, "h", 1, 1, 0, "c", "v")],
            "routing id 15 belongs to segment 1, not 0",
        ),
    ],
)
def test_inconsistent_endpoints_are_refused(endpoints: list[IpuEndpoint], message: str) -> None:
    """Exactly one endpoint per routing id, each in the segment routing order puts it in."""
    with pytest.raises(InvalidSpec, match=message):
        gcd_ipuof_config(SPEC, endpoints, 0, machine_type=BOW)


def test_unknown_gcd_is_refused() -> None:
    with pytest.raises(InvalidSpec, match=r"partition job1 has no GCD 2: use 0\.\.1"):
        gcd_ipuof_config(SPEC, ENDPOINTS, 2, machine_type=BOW)


def test_environment_for_dynamic_discovery() -> None:
    """Host, port (8090 by default) and partition; GCD and timeout only when given."""
    assert ipuof_environment(api_host="ctl", partition_id="job1") == {
        "IPUOF_VIPU_API_HOST": "ctl",
        "IPUOF_VIPU_API_PORT": "8090",
        "IPUOF_VIPU_API_PARTITION_ID": "job1",
    }
    env = ipuof_environment(
        api_host="ctl", partition_id="job1", api_port=9000, gcd_id=1, timeout_seconds=120
    )
    assert env["IPUOF_VIPU_API_PORT"] == "9000"
    assert env["IPUOF_VIPU_API_GCD_ID"] == "1"
    assert env["IPUOF_VIPU_API_TIMEOUT"] == "120"


# -- gc-info -l --------------------------------------------------------------------------


def test_listing_of_eight_ipus() -> None:
    """0..7 single IPUs, 8..11 pairs, 12..13 quads, 14 all eight."""
    listing = device_listing(8)
    assert [(d.id, d.members) for d in listing[8:]] == [
        (8, (0, 1)),
        (9, (2, 3)),
        (10, (4, 5)),
        (11, (6, 7)),
        (12, (0, 1, 2, 3)),
        (13, (4, 5, 6, 7)),
        (14, (0, 1, 2, 3, 4, 5, 6, 7)),
    ]
    assert listing[:8] == tuple(ListedDevice(i, (i,)) for i in range(8))


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64, 128, 1024])
def test_listing_has_2n_minus_1_devices_for_powers_of_two(n: int) -> None:
    """Ids run 0..2N-2 in order; each level halves the count and doubles the size."""
    listing = device_listing(n)
    assert len(listing) == 2 * n - 1
    assert [d.id for d in listing] == list(range(2 * n - 1))
    assert listing[-1].members == tuple(range(n))
    sizes = [d.num_ipus for d in listing]
    assert sizes == sorted(sizes)


def test_listing_of_a_size_that_is_not_a_power_of_two_ends_with_all_ipus() -> None:
    """192 IPUs: levels of 1..64 IPUs, then one device of all 192."""
    listing = device_listing(192)
    assert len(listing) == 192 + 96 + 48 + 24 + 12 + 6 + 3 + 1
    assert listing[-2].members == tuple(range(128, 192))
    assert listing[-1].members == tuple(range(192))


def test_listing_table_rows() -> None:
    assert listing_table(device_listing(2)) == [
        {"id": 0, "ipus": 1, "members": [0]},
        {"id": 1, "ipus": 1, "members": [1]},
        {"id": 2, "ipus": 2, "members": [0, 1]},
    ]


def test_listing_needs_an_ipu() -> None:
    with pytest.raises(InvalidSpec, match="at least 1 IPU"):
        device_listing(0)
