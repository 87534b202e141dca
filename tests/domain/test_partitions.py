"""Partition requirements resolved against a pod: the rules of vipu-system.md §3, the defaults."""

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vpod.domain.errors import InvalidSpec
from vpod.domain.partitions import (
    PartitionRequirements,
    PartitionSpec,
    allowed_num_gcds,
    allowed_num_replicas,
    allowed_num_segments,
    largest_partition_size,
    resolve_partition_spec,
)
from vpod.domain.routing import GwRouting, IpuLinkRouting, SyncType
from vpod.domain.topology import GwTopology, IldTopology, Pod, build_pod, shape

PODS: dict[str, Pod] = {
    "pod16": shape("pod16"),
    "pod64": shape("pod64"),
    "pod128": shape("pod128"),
    "pod256": shape("pod256"),
    "pod1024": shape("pod1024"),
    "pod4096": shape("pod4096"),
    "mesh64": build_pod(16, topology=IldTopology.MESH, name="mesh64"),
    "two16": build_pod(8, num_domains=2, name="two16"),
    "switched128": build_pod(32, num_domains=2, gw_topology=GwTopology.SWITCHED, name="sw128"),
}

DNC, SWNC, BTNC, RINGSWNC = (
    IpuLinkRouting.DNC,
    IpuLinkRouting.SWNC,
    IpuLinkRouting.BTNC,
    IpuLinkRouting.RINGSWNC,
)
GS2, NATIVE = SyncType.GS2_DEFAULT, SyncType.POD_NATIVE_DEFAULT


def resolve(pod: str, **kwargs: Any) -> PartitionSpec:
    kwargs.setdefault("id", "p1")
    return resolve_partition_spec(PartitionRequirements(**kwargs), pod=PODS[pod])


# (pod, request, expected: segments, gcds, replicas, routing, gw routing, sync type)
VALID = [
    ("pod64", {"size": 1}, (1, 1, 1, DNC, None, GS2)),
    ("pod64", {"size": 2}, (1, 1, 1, DNC, None, GS2)),
    ("pod64", {"size": 4}, (1, 1, 1, DNC, None, GS2)),
    ("pod64", {"size": 8}, (1, 1, 1, SWNC, None, GS2)),
    ("pod64", {"size": 16}, (1, 1, 1, SWNC, None, GS2)),
    ("pod64", {"size": 64}, (1, 1, 1, RINGSWNC, None, GS2)),
    ("mesh64", {"size": 64}, (1, 1, 1, SWNC, None, GS2)),
    ("pod16", {"size": 16}, (1, 1, 1, SWNC, None, GS2)),
    ("pod16", {"size": 16, "routing": RINGSWNC}, (1, 1, 1, RINGSWNC, None, GS2)),
    ("pod64", {"size": 8, "routing": BTNC}, (1, 1, 1, BTNC, None, GS2)),
    ("pod64", {"size": 4, "routing": SWNC}, (1, 1, 1, SWNC, None, GS2)),
    ("pod128", {"size": 128, "num_gcds": 2}, (2, 2, 2, RINGSWNC, GwRouting.RING, GS2)),
    ("pod128", {"size": 128}, (2, 2, 2, RINGSWNC, GwRouting.RING, GS2)),  # one GCD per segment
    (
        "pod128",
        {"size": 128, "num_segments": 2, "num_gcds": 2, "gw_routing": GwRouting.RING},
        (2, 2, 2, RINGSWNC, GwRouting.RING, GS2),
    ),
    ("switched128", {"size": 128, "num_gcds": 2}, (2, 2, 2, RINGSWNC, GwRouting.SWRING, GS2)),
    ("pod1024", {"size": 1024, "num_gcds": 16}, (16, 16, 16, RINGSWNC, GwRouting.SWRING, GS2)),
    ("pod4096", {"size": 4096, "num_gcds": 64}, (64, 64, 64, RINGSWNC, GwRouting.SWRING, GS2)),
    ("pod256", {"size": 192, "num_gcds": 3}, (3, 3, 3, RINGSWNC, GwRouting.RING, GS2)),
    (
        "pod128",
        {"size": 16, "num_segments": 2, "num_gcds": 2},
        (2, 2, 2, SWNC, GwRouting.RING, GS2),
    ),
    (
        "pod256",
        {"size": 64, "num_segments": 4, "num_gcds": 4},
        (4, 4, 4, SWNC, GwRouting.RING, GS2),
    ),
    ("pod256", {"size": 4, "num_segments": 4, "num_gcds": 4}, (4, 4, 4, DNC, GwRouting.RING, GS2)),
    ("two16", {"size": 16, "num_segments": 2, "num_gcds": 2}, (2, 2, 2, SWNC, GwRouting.RING, GS2)),
    ("pod64", {"size": 64, "num_gcds": 4}, (1, 4, 4, RINGSWNC, None, GS2)),
    ("pod64", {"size": 64, "num_gcds": 64}, (1, 64, 64, RINGSWNC, None, GS2)),
    ("pod64", {"size": 16, "num_replicas": 4}, (1, 1, 4, SWNC, None, GS2)),
    ("pod64", {"size": 16, "num_replicas": 16}, (1, 1, 16, SWNC, None, GS2)),
    ("pod64", {"size": 64, "num_gcds": 4, "num_replicas": 16}, (1, 4, 16, RINGSWNC, None, GS2)),
    ("pod64", {"size": 16, "num_gcds": 2, "num_replicas": 2}, (1, 2, 2, SWNC, None, GS2)),
    ("pod64", {"size": 16, "reconfigurable": True}, (1, 1, 1, SWNC, None, GS2)),
    ("pod64", {"size": 4, "reconfigurable": True, "sync_type": GS2}, (1, 1, 1, DNC, None, GS2)),
    ("pod64", {"size": 8, "sync_type": NATIVE}, (1, 1, 1, SWNC, None, NATIVE)),
    (
        "pod128",
        {"size": 128, "num_gcds": 2, "sync_type": SyncType.POD_NATIVE_REPLICATED_PIPELINE},
        (2, 2, 2, RINGSWNC, GwRouting.RING, SyncType.POD_NATIVE_REPLICATED_PIPELINE),
    ),
]


@pytest.mark.parametrize(("pod", "request_", "expected"), VALID)
def test_valid_requests_resolve_with_defaults(
    pod: str, request_: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    """Each valid request resolves to the listed segments, GCDs, replicas, routings and sync."""
    spec = resolve(pod, **request_)
    got = (
        spec.num_segments,
        spec.num_gcds,
        spec.num_replicas,
        spec.routing,
        spec.gw_routing,
        spec.sync_type,
    )
    assert got == expected
    assert spec.size == request_["size"]
    assert spec.reconfigurable == request_.get("reconfigurable", False)


# (pod, request, the part of the message that says what is wrong and what to do)
INVALID = [
    ("pod64", {"size": 32}, "partition size 32 is not supported: use 1, 2, 4, 8, 16, 64"),
    ("pod64", {"size": 0}, "partition size 0 is not supported"),
    ("pod64", {"size": 96}, "partition size 96 is not supported"),
    ("pod64", {"id": "my partition", "size": 4}, "partition id 'my partition' is not valid"),
    ("pod64", {"size": 4, "allocation_id": ""}, "allocation id is empty"),
    ("pod64", {"size": 4, "cluster_id": "c 1"}, "cluster id 'c 1' is not valid"),
    ("pod64", {"size": 4, "num_gcds": -1}, "num_gcds must be 0 .unset. or a positive number"),
    ("pod64", {"size": 4, "num_segments": -2}, "num_ipulink_segments must be 0"),
    ("pod64", {"size": 4, "num_replicas": -4}, "num_replicas must be 0"),
    (
        "pod256",
        {"size": 128, "num_segments": 4},
        "a partition of 128 IPUs is 2 segments of 64 IPUs.*set it to 2, not 4",
    ),
    (
        "pod64",
        {"size": 64, "num_segments": 2},
        "64 IPUs cannot be split into 2 IPU-Link segments.*use num_ipulink_segments"
        " 1, 4, 8, 16, 32 or 64",
    ),
    ("pod64", {"size": 8, "num_segments": 3}, "8 IPUs cannot be split into 3"),
    (
        "pod64",
        {"size": 128, "num_gcds": 2},
        "needs GW-Links between IPU-Link domains, but cluster pod64 is a single domain of 64"
        " IPUs: ask for at most 64 IPUs in 1 segment",
    ),
    ("pod64", {"size": 16, "num_segments": 2}, "needs GW-Links"),
    (
        "pod16",
        {"size": 64},
        "a segment of 64 IPUs does not fit in an IPU-Link domain of 16 IPUs in cluster pod16:"
        " the largest partition it can hold is 16 IPUs",
    ),
    (
        "two16",
        {"size": 64},
        "does not fit in an IPU-Link domain of 16 IPUs.*the largest partition it can hold is 16",
    ),
    (
        "two16",
        {"size": 16, "num_segments": 4},
        "4 segments need 4 IPU-Link domains, but cluster two16 has 2:"
        " ask for num_ipulink_segments 1 or 2",
    ),
    (
        "pod256",
        {"size": 64, "num_segments": 8},
        "8 segments need 8 IPU-Link domains, but cluster pod256 has 4:"
        " ask for num_ipulink_segments 1 or 4",
    ),
    ("pod128", {"size": 256, "num_gcds": 4}, "cluster pod128 has 2.*largest partition.* 128 IPUs"),
    (
        "pod128",
        {"size": 128, "reconfigurable": True, "num_gcds": 2},
        "partition p1 is reconfigurable, so it must stay in one IPU-Link domain",
    ),
    (
        "pod128",
        {"size": 16, "num_segments": 2, "reconfigurable": True},
        "drop reconfigurable",
    ),
    (
        "pod64",
        {"size": 8, "reconfigurable": True, "sync_type": NATIVE},
        "a reconfigurable partition uses sync type c2-compatible, not pod-native-default",
    ),
    (
        "pod64",
        {"size": 8, "sync_type": SyncType.GS2_INDEPENDENT_RAILS},
        "sync type gs2-independent-rails is not supported",
    ),
    (
        "pod64",
        {"size": 8, "num_gcds": 3},
        "3 GCDs cannot split a partition of 8 IPUs.*use num_gcds 1, 2, 4 or 8",
    ),
    (
        "pod64",
        {"size": 64, "num_gcds": 128},
        "128 GCDs cannot split a partition of 64 IPUs",
    ),
    (
        "pod128",
        {"size": 128, "num_gcds": 1},
        "1 GCD cannot split a partition of 128 IPUs.*use num_gcds 2, 8, 16, 32, 64 or 128",
    ),
    (
        "pod128",
        {"size": 16, "num_segments": 2, "num_gcds": 1},
        "a GCD of 16 IPUs would span IPU-Link domains .each segment holds 8 IPUs.*"
        "use num_gcds 2, 4, 8 or 16",
    ),
    (
        "pod64",
        {"size": 8, "num_gcds": 2, "num_replicas": 3},
        "3 replicas cannot be shared evenly by 2 GCDs.*use 2, 4 or 8",
    ),
    ("pod64", {"size": 8, "num_replicas": 3}, "3 replicas do not divide a partition of 8 IPUs"),
    (
        "pod64",
        {"size": 64, "num_replicas": 2},
        "with more replicas than GCDs a replica holds 1, 2 or 4 IPUs, not 32:"
        " use num_replicas 1, 16, 32 or 64",
    ),
    ("pod64", {"size": 64, "num_gcds": 4, "num_replicas": 8}, "a replica holds 1, 2 or 4"),
    (
        "pod64",
        {"size": 16, "routing": RINGSWNC},
        "RINGSWNC routing uses the loop cables of a whole torus IPU-Link domain, so it needs"
        " segments of 64 IPUs on a torus, not 16 IPUs on a torus",
    ),
    ("mesh64", {"size": 64, "routing": RINGSWNC}, "not 64 IPUs on a mesh"),
    (
        "pod64",
        {"size": 8, "gw_routing": GwRouting.RING},
        "GW routing ring only applies to partitions of several IPU-Link segments",
    ),
    (
        "pod128",
        {"size": 128, "num_gcds": 2, "gw_routing": GwRouting.SWRING},
        "GW routing swring does not work on the looped GW-Links of cluster pod128: use ring",
    ),
    (
        "switched128",
        {"size": 128, "num_gcds": 2, "gw_routing": GwRouting.RING},
        "does not work on the switched GW-Links.*use swring",
    ),
]


@pytest.mark.parametrize(("pod", "request_", "message"), INVALID)
def test_invalid_requests_are_refused_with_a_reason(
    pod: str, request_: dict[str, Any], message: str
) -> None:
    """Each broken rule raises InvalidSpec saying what is wrong and what would be accepted."""
    with pytest.raises(InvalidSpec, match=message):
        resolve(pod, **request_)


def test_a_partition_larger_than_a_domain_is_whole_domains_whether_asked_or_not() -> None:
    """Sizes above 64 are size/64 segments of 64, with or without num_ipulink_segments."""
    asked = resolve("pod256", size=256, num_segments=4, num_gcds=4)
    unasked = resolve("pod256", size=256, num_gcds=4)
    assert asked == unasked
    assert (unasked.num_segments, unasked.segment_size) == (4, 64)


def test_requested_ids_are_carried_into_the_spec() -> None:
    spec = resolve("pod64", size=8, allocation_id="alloc1", cluster_id="c1")
    assert (spec.id, spec.allocation_id, spec.cluster_id, spec.ipus) == ("p1", "alloc1", "c1", None)


def test_spec_properties_describe_routing_order() -> None:
    """Segments, GCDs and replicas split routing ids 0..size-1 into equal consecutive runs."""
    spec = resolve("pod256", size=64, num_segments=4, num_gcds=8, num_replicas=32)
    assert (spec.segment_size, spec.gcd_size, spec.replica_size) == (16, 8, 2)
    assert spec.replicas_per_gcd == 4
    assert [spec.segment_of(i) for i in (0, 15, 16, 63)] == [0, 0, 1, 3]
    assert [spec.gcd_of(i) for i in (0, 7, 8, 63)] == [0, 0, 1, 7]
    assert spec.gcd_routing_ids(2) == range(16, 24)
    with pytest.raises(InvalidSpec, match=r"has no GCD 8: use 0\.\.7"):
        spec.gcd_routing_ids(8)
    with pytest.raises(InvalidSpec, match=r"no IPU with routing id 64: use 0\.\.63"):
        spec.segment_of(64)


# -- explicit IPUs -----------------------------------------------------------------------


def block(domain: int, start: int, count: int) -> tuple[tuple[int, int], ...]:
    return tuple((domain, p) for p in range(start, start + count))


def test_explicit_ipus_in_aligned_blocks_are_accepted() -> None:
    """Listed IPUs are one aligned block per segment, each in its own domain, any order inside."""
    one = resolve("pod128", size=8, cluster_id="c1", ipus=block(1, 8, 8)[::-1])
    assert one.ipus == block(1, 8, 8)[::-1]
    two = resolve(
        "pod128",
        size=16,
        num_segments=2,
        num_gcds=2,
        cluster_id="c1",
        ipus=block(1, 0, 8) + block(0, 56, 8),
    )
    assert two.ipus is not None
    assert len(two.ipus) == 16


def test_explicit_ipus_pick_the_routing_of_their_domain() -> None:
    """A whole torus domain named explicitly gets RINGSWNC by default."""
    spec = resolve("pod128", size=64, cluster_id="c1", ipus=block(1, 0, 64))
    assert spec.routing is RINGSWNC


EXPLICIT_INVALID = [
    ({"size": 4, "ipus": block(0, 0, 4), "cluster_id": None}, "needs its cluster: set cluster_id"),
    (
        {"size": 4, "ipus": block(0, 0, 2)},
        "2 IPUs were listed for a partition of 4: list exactly 4",
    ),
    ({"size": 4, "ipus": block(2, 0, 4)}, "IPU-Link domain 2 does not exist"),
    ({"size": 4, "ipus": block(0, 62, 4)}, "IPU position 64 is outside IPU-Link domain 0"),
    ({"size": 2, "ipus": ((0, 0), (0, 0))}, "IPU 0 of IPU-Link domain 0 is listed twice"),
    (
        {"size": 4, "ipus": block(0, 2, 4)},
        "the IPUs of segment 0 must be 4 consecutive positions of IPU-Link domain 0 starting at"
        r" a multiple of 4 \(such as 0..3\), not \[2, 3, 4, 5\]",
    ),
    ({"size": 4, "ipus": ((0, 0), (0, 1), (0, 2), (0, 5))}, r"not \[0, 1, 2, 5\]"),
    (
        {"size": 4, "ipus": block(0, 0, 2) + block(1, 2, 2)},
        "listed IPUs 0..3 form segment 0 and must lie in one IPU-Link domain,"
        " not in domains 0 or 1",
    ),
    (
        {"size": 16, "num_segments": 2, "num_gcds": 2, "ipus": block(0, 0, 8) + block(0, 8, 8)},
        "IPU-Link domain 0 holds two segments of the listed IPUs",
    ),
    (
        {"size": 64, "ipus": tuple((0, p) for p in range(0, 128, 2))},
        "IPU position 64 is outside",
    ),
]


@pytest.mark.parametrize(("request_", "message"), EXPLICIT_INVALID)
def test_explicit_ipus_that_break_a_rule_are_refused(
    request_: dict[str, Any], message: str
) -> None:
    request_ = {"cluster_id": "c1", **request_}
    with pytest.raises(InvalidSpec, match=message):
        resolve("pod128", **request_)


# -- the suggested values really work ----------------------------------------------------


SMALL_PODS = ["pod16", "pod64", "pod128", "pod256", "two16", "mesh64"]


@pytest.mark.parametrize("pod", SMALL_PODS)
def test_suggested_segment_gcd_and_replica_counts_are_exactly_the_valid_ones(pod: str) -> None:
    """For every size up to the pod, the allowed_* lists hold exactly the counts that resolve."""
    for size in (1, 2, 4, 8, 16, 64, 128, 192, 256):
        segments = allowed_num_segments(size, PODS[pod])
        for k in range(1, 9):
            fits = _resolves(pod, size=size, num_segments=k, num_gcds=size)  # 1-IPU GCDs fit
            assert fits == (k in segments), (pod, size, k)
        for k in segments:
            segment_size = size // k
            gcds = allowed_num_gcds(size, segment_size)
            for g in range(1, size + 1):
                assert _resolves(pod, size=size, num_segments=k, num_gcds=g) == (g in gcds)
            for g in gcds:
                replicas = allowed_num_replicas(size, g)
                for r in range(1, size + 1):
                    ok = _resolves(pod, size=size, num_segments=k, num_gcds=g, num_replicas=r)
                    assert ok == (r in replicas), (pod, size, k, g, r)


def _resolves(pod: str, **kwargs: Any) -> bool:
    try:
        resolve(pod, **kwargs)
    except InvalidSpec:
        return False
    return True


@pytest.mark.parametrize(
    ("pod", "largest"),
    [("pod16", 16), ("pod64", 64), ("two16", 16), ("pod1024", 1024), ("pod4096", 4096)],
)
def test_largest_partition_size(pod: str, largest: int) -> None:
    assert largest_partition_size(PODS[pod]) == largest
    assert _resolves(pod, size=largest, num_gcds=max(1, largest // 64))


def test_resolving_a_resolved_spec_again_changes_nothing() -> None:
    """Feeding a spec's values back as a request gives the same spec (defaults are stable)."""
    spec = resolve("pod256", size=64, num_segments=4, num_gcds=4, num_replicas=16)
    again = resolve(
        "pod256",
        size=spec.size,
        num_segments=spec.num_segments,
        num_gcds=spec.num_gcds,
        num_replicas=spec.num_replicas,
        routing=spec.routing,
        gw_routing=spec.gw_routing,
        sync_type=spec.sync_type,
    )
    assert again == spec
    assert replace(again, id="p2") != spec


@given(
    pod=st.sampled_from(sorted(PODS)),
    size=st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64, 128, 192, 256, 512, 1024]),
    num_segments=st.integers(0, 20),
    num_gcds=st.integers(0, 70),
    num_replicas=st.integers(0, 300),
    reconfigurable=st.booleans(),
    routing=st.none() | st.sampled_from(IpuLinkRouting),
    gw_routing=st.none() | st.sampled_from(GwRouting),
    sync_type=st.none() | st.sampled_from(SyncType),
)
def test_every_resolved_spec_obeys_every_rule(pod: str, **request_: Any) -> None:
    """Whatever is asked, resolve either refuses it or returns a spec that keeps every rule."""
    try:
        spec = resolve(pod, **request_)
    except InvalidSpec:
        return  # refusals and their messages are walked through by the tables above
    domain_ipus = max(d.ipus for d in PODS[pod].domains)
    assert spec.size % spec.num_segments == 0
    assert spec.segment_size in (1, 2, 4, 8, 16, 64)
    assert spec.segment_size <= domain_ipus
    assert spec.num_segments <= len(PODS[pod].domains)
    assert spec.size <= 64 or spec.segment_size == 64
    assert spec.gcd_size in (1, 2, 4, 8, 16, 64)
    assert spec.gcd_size <= spec.segment_size
    assert spec.num_replicas % spec.num_gcds == 0
    assert spec.size % spec.num_replicas == 0
    assert spec.num_replicas == spec.num_gcds or spec.replica_size in (1, 2, 4)
    assert (spec.gw_routing is None) == (spec.num_segments == 1)
    assert spec.sync_type is not SyncType.GS2_INDEPENDENT_RAILS
    if spec.reconfigurable:
        assert spec.num_segments == 1
        assert spec.sync_type is SyncType.GS2_DEFAULT
