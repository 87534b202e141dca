"""Routing and sync types: CLI spellings, wire numbers and the default rules."""

import pytest

from vpod.domain.errors import InvalidSpec
from vpod.domain.routing import (
    DEFAULT_SYNC_TYPE,
    SUPPORTED_SYNC_TYPES,
    GwRouting,
    IpuLinkRouting,
    SyncType,
    check_sync_type,
    default_gw_routing,
    default_ipulink_routing,
    gw_routing_matches,
    parse_gw_routing,
    parse_ipulink_routing,
    parse_sync_type,
)
from vpod.domain.topology import GwTopology, IldTopology


def test_values_are_the_wire_numbers() -> None:
    """Member values equal the wire enum numbers, so the wire layer converts without a table."""
    assert {r.name: r.value for r in IpuLinkRouting} == {
        "DNC": 1,
        "SWNC": 2,
        "BTNC": 3,
        "RINGSWNC": 4,
    }
    assert {r.name: r.value for r in GwRouting} == {"RING": 2, "SWRING": 3}
    assert {s.name: s.value for s in SyncType} == {
        "GS2_DEFAULT": 1,
        "GS2_INDEPENDENT_RAILS": 2,
        "POD_NATIVE_DEFAULT": 3,
        "POD_NATIVE_REPLICATED_PIPELINE": 4,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dnc", IpuLinkRouting.DNC),
        ("SWNC", IpuLinkRouting.SWNC),
        ("Btnc", IpuLinkRouting.BTNC),
        ("ringswnc", IpuLinkRouting.RINGSWNC),
        ("ring-swnc", IpuLinkRouting.RINGSWNC),
        (" RING_SWNC ", IpuLinkRouting.RINGSWNC),
    ],
)
def test_ipulink_routing_parses_cli_spellings(text: str, expected: IpuLinkRouting) -> None:
    """Case, surrounding blanks, '-' and '_' do not matter."""
    assert parse_ipulink_routing(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("ring", GwRouting.RING), ("SWRING", GwRouting.SWRING), ("sw-ring", GwRouting.SWRING)],
)
def test_gw_routing_parses_cli_spellings(text: str, expected: GwRouting) -> None:
    assert parse_gw_routing(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("c2-compatible", SyncType.GS2_DEFAULT),
        ("C2_COMPATIBLE", SyncType.GS2_DEFAULT),
        ("gs2-default", SyncType.GS2_DEFAULT),
        ("pod-native-default", SyncType.POD_NATIVE_DEFAULT),
        ("POD_NATIVE_DEFAULT", SyncType.POD_NATIVE_DEFAULT),
        ("pod-native-replicated-pipeline", SyncType.POD_NATIVE_REPLICATED_PIPELINE),
    ],
)
def test_sync_type_parses_cli_and_enum_spellings(text: str, expected: SyncType) -> None:
    """``c2-compatible`` is GS2_DEFAULT; enum names are accepted too."""
    assert parse_sync_type(text) is expected


@pytest.mark.parametrize(
    ("parse", "text", "hint"),
    [
        (parse_ipulink_routing, "ring", "use dnc, swnc, btnc or ringswnc"),
        (parse_ipulink_routing, "", "use dnc, swnc, btnc or ringswnc"),
        (parse_gw_routing, "dnc", "use ring or swring"),
        (parse_sync_type, "fast", "use c2-compatible, pod-native-default or"),
    ],
)
def test_unknown_spellings_list_the_known_ones(parse: object, text: str, hint: str) -> None:
    with pytest.raises(InvalidSpec, match=hint):
        parse(text)  # type: ignore[operator]


@pytest.mark.parametrize("text", ["gs2-independent-rails", "GS2_INDEPENDENT_RAILS"])
def test_independent_rails_is_refused_as_unsupported(text: str) -> None:
    """The wire lists GS2_INDEPENDENT_RAILS as unsupported: it is named, then refused."""
    with pytest.raises(InvalidSpec, match="gs2-independent-rails is not supported: use c2-"):
        parse_sync_type(text)
    with pytest.raises(InvalidSpec, match="not supported"):
        check_sync_type(SyncType.GS2_INDEPENDENT_RAILS)


def test_supported_sync_types_pass_the_check_and_round_trip() -> None:
    """Each supported sync type parses back from its CLI name."""
    assert DEFAULT_SYNC_TYPE is SyncType.GS2_DEFAULT
    for sync in SUPPORTED_SYNC_TYPES:
        assert check_sync_type(sync) is sync
        assert parse_sync_type(sync.cli_name) is sync
    for routing in IpuLinkRouting:
        assert parse_ipulink_routing(routing.cli_name) is routing
    for gw in GwRouting:
        assert parse_gw_routing(gw.cli_name) is gw


@pytest.mark.parametrize(
    ("size", "topology", "expected"),
    [
        (1, IldTopology.TORUS, IpuLinkRouting.DNC),
        (2, IldTopology.TORUS, IpuLinkRouting.DNC),
        (4, IldTopology.MESH, IpuLinkRouting.DNC),
        (8, IldTopology.TORUS, IpuLinkRouting.SWNC),
        (8, IldTopology.MESH, IpuLinkRouting.SWNC),
        (16, IldTopology.TORUS, IpuLinkRouting.SWNC),
        (16, IldTopology.MESH, IpuLinkRouting.SWNC),
        (64, IldTopology.TORUS, IpuLinkRouting.RINGSWNC),
        (64, IldTopology.MESH, IpuLinkRouting.SWNC),
    ],
)
def test_default_ipulink_routing(
    size: int, topology: IldTopology, expected: IpuLinkRouting
) -> None:
    """DNC up to a machine, SWNC on a ladder, RINGSWNC for a whole torus of 64."""
    assert default_ipulink_routing(size, topology) is expected


@pytest.mark.parametrize("size", [0, 3, 32, 128])
def test_default_ipulink_routing_refuses_sizes_a_segment_cannot_take(size: int) -> None:
    with pytest.raises(InvalidSpec, match="use 1, 2, 4, 8, 16 or 64 IPUs per segment"):
        default_ipulink_routing(size, IldTopology.TORUS)


def test_default_gw_routing_follows_the_cabling() -> None:
    """RING on looped GW-Links, SWRING on switched ones; only those pairs match."""
    assert default_gw_routing(GwTopology.LOOPED) is GwRouting.RING
    assert default_gw_routing(GwTopology.SWITCHED) is GwRouting.SWRING
    assert gw_routing_matches(GwRouting.RING, GwTopology.LOOPED)
    assert not gw_routing_matches(GwRouting.RING, GwTopology.SWITCHED)
    assert not gw_routing_matches(GwRouting.SWRING, GwTopology.LOOPED)
