"""The cases test_rules_grpc.py walks through: requests that break a rule of vipu-system.md §3.

Each case is (id, size, further ``PartitionRequirements`` fields, fragments
the refusal must contain); the fragments quote what the controller says is
allowed instead, so a refusal that only says "no" fails the test.
"""

from __future__ import annotations

from typing import Any

from vpod.wire import virmgrpc_pb2 as pb

SIZES_ALLOWED = "use 1, 2, 4, 8, 16, 64 or a multiple of 64"
CLUSTER = "cluster"  # what `vpod up` calls its cluster


def ipu(domain: int, position: int, routing_id: int) -> pb.PartitionIpu:
    """An explicitly chosen IPU, as ``PartitionRequirements.ipus`` names it."""
    return pb.PartitionIpu(
        ipulink_domain_topology_id=domain, topology_id=position, routing_id=routing_id
    )


def run_of(domain: int, first: int, count: int) -> list[pb.PartitionIpu]:
    """``count`` IPUs from ladder position ``first`` of a domain, in routing order."""
    return [ipu(domain, first + i, i) for i in range(count)]


SINGLE_DOMAIN_REFUSALS: list[tuple[str, int, dict[str, Any], list[str]]] = [
    ("size-0", 0, {}, ["size is required", SIZES_ALLOWED]),
    ("size-3", 3, {}, ["partition size 3 is not supported", SIZES_ALLOWED]),
    ("size-5", 5, {}, ["partition size 5 is not supported", SIZES_ALLOWED]),
    ("size-32", 32, {}, ["partition size 32 is not supported", SIZES_ALLOWED]),
    ("size-48", 48, {}, ["partition size 48 is not supported", SIZES_ALLOWED]),
    ("size-96", 96, {}, ["partition size 96 is not supported", SIZES_ALLOWED]),
    ("size-100", 100, {}, ["partition size 100 is not supported", SIZES_ALLOWED]),
    (
        "size-128-on-one-domain",
        128,
        {"num_gcds": 2},
        ["needs GW-Links", "single domain of 64 IPUs", "at most 64 IPUs in 1 segment"],
    ),
    (
        "segments-on-one-domain",
        16,
        {"num_ipulink_segments": 2, "num_gcds": 2},
        ["needs GW-Links", "at most 64 IPUs in 1 segment"],
    ),
    (
        "segments-not-dividing-size",
        16,
        {"num_ipulink_segments": 3},
        ["cannot be split into 3 IPU-Link segments", "use num_ipulink_segments 1, 2, 4, 8 or 16"],
    ),
    (
        "gcds-not-dividing-size",
        16,
        {"num_gcds": 3},
        ["3 GCDs cannot split a partition of 16 IPUs", "use num_gcds 1, 2, 4, 8 or 16"],
    ),
    (
        "gcds-more-than-ipus",
        16,
        {"num_gcds": 32},
        ["32 GCDs cannot split a partition of 16 IPUs", "use num_gcds 1, 2, 4, 8 or 16"],
    ),
    (
        "gcd-of-32-ipus",
        64,
        {"num_gcds": 2},
        ["2 GCDs cannot split a partition of 64 IPUs", "use num_gcds 1, 4, 8, 16, 32 or 64"],
    ),
    (
        "replicas-not-multiple-of-gcds",
        16,
        {"num_gcds": 2, "num_replicas": 3},
        ["num_replicas must be a multiple of num_gcds", "use 2, 4, 8 or 16"],
    ),
    (
        "replica-of-8-ipus",
        16,
        {"num_replicas": 2},
        ["a replica holds 1, 2 or 4 IPUs, not 8", "use num_replicas 1, 4, 8 or 16"],
    ),
    (
        "replicas-not-dividing-size",
        4,
        {"num_replicas": 8},
        ["8 replicas do not divide a partition of 4 IPUs", "use num_replicas 1, 2 or 4"],
    ),
    (
        "sync-independent-rails",
        4,
        {"sync_type": pb.ST_GS2_INDEPENDENT_RAILS},
        [
            "gs2-independent-rails is not supported",
            "use c2-compatible, pod-native-default or pod-native-replicated-pipeline",
        ],
    ),
    ("sync-type-unknown-number", 4, {"sync_type": 9}, ["sync type 9 is not known"]),
    (
        "reconfigurable-with-pod-native-sync",
        4,
        {"reconfigurable": True, "sync_type": pb.ST_POD_NATIVE_DEFAULT},
        ["a reconfigurable partition uses sync type c2-compatible", "leave the sync type unset"],
    ),
    (
        "ringswnc-on-16",
        16,
        {"ipulink_routing_type": pb.IRT_RINGSWNC},
        ["whole torus IPU-Link domain", "use swnc, btnc or dnc"],
    ),
    (
        "routing-unknown-number",
        4,
        {"ipulink_routing_type": 7},
        ["IPU-Link routing type 7 is not known"],
    ),
    (
        "gw-routing-on-one-segment",
        16,
        {"gw_routing_type": pb.GRT_RING},
        ["only applies to partitions of several IPU-Link segments", "leave it unset"],
    ),
    (
        "explicit-ipus-without-cluster",
        2,
        {"ipus": run_of(0, 0, 2)},
        ["explicit IPUs need cluster_id"],
    ),
    (
        "explicit-ipus-not-aligned",
        2,
        {"cluster_id": CLUSTER, "ipus": run_of(0, 1, 2)},
        ["2 consecutive positions", "starting at a multiple of 2", "such as 0..1"],
    ),
    (
        "explicit-ipus-count-differs",
        4,
        {"cluster_id": CLUSTER, "ipus": run_of(0, 0, 2)},
        ["2 IPUs were listed for a partition of 4", "list exactly 4"],
    ),
]


MULTI_DOMAIN_REFUSALS: list[tuple[str, int, dict[str, Any], list[str]]] = [
    (
        "more-segments-than-domains",
        16,
        {"num_ipulink_segments": 8, "num_gcds": 8},
        ["8 segments need 8 IPU-Link domains", "has 4", "num_ipulink_segments 1, 2 or 4"],
    ),
    (
        "larger-than-the-cluster",
        320,
        {"num_gcds": 5},
        ["5 segments need 5 IPU-Link domains", "the largest partition it can hold is 256 IPUs"],
    ),
    (
        "segment-size-not-valid",
        64,
        {"num_ipulink_segments": 2, "num_gcds": 2},
        [
            "64 IPUs cannot be split into 2 IPU-Link segments",
            "a segment holds 1, 2, 4, 8, 16 or 64 IPUs",
            "use num_ipulink_segments 1, 4, 8, 16, 32 or 64",
        ],
    ),
    (
        "over-64-is-segments-of-64",
        128,
        {"num_ipulink_segments": 4, "num_gcds": 4},
        ["is 2 segments of 64 IPUs", "leave num_ipulink_segments unset or set it to 2, not 4"],
    ),
    (
        "over-64-in-one-segment",
        128,
        {"num_ipulink_segments": 1, "num_gcds": 2},
        ["is 2 segments of 64 IPUs", "set it to 2, not 1"],
    ),
    (
        "gcd-spanning-domains",
        16,
        {"num_ipulink_segments": 2, "num_gcds": 1},
        ["a GCD of 16 IPUs would span IPU-Link domains", "use num_gcds 2, 4, 8 or 16"],
    ),
    (
        "one-gcd-of-128",
        128,
        {"num_gcds": 1},
        ["1 GCD cannot split a partition of 128 IPUs", "use num_gcds 2, 8, 16, 32, 64 or 128"],
    ),
    (
        "reconfigurable-across-domains",
        16,
        {"num_ipulink_segments": 2, "num_gcds": 2, "reconfigurable": True},
        ["must stay in one IPU-Link domain (GW-Links cannot be used)", "drop reconfigurable"],
    ),
    (
        "reconfigurable-over-64",
        128,
        {"num_gcds": 2, "reconfigurable": True},
        ["must stay in one IPU-Link domain", "at most 64 IPUs"],
    ),
    (
        "swring-on-looped-gw-links",
        16,
        {"num_ipulink_segments": 2, "num_gcds": 2, "gw_routing_type": pb.GRT_SWRING},
        ["GW routing swring does not work on the looped GW-Links", "use ring"],
    ),
]
