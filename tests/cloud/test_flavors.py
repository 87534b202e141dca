"""The flavor catalog: names, what each kind allows, prices and images."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from vpod.cloud.flavors import (
    CATALOG,
    GPU_IMAGES,
    POPLAR_IMAGES,
    ClusterKind,
    HostRole,
    check_image,
    find_flavor,
)
from vpod.cloud.model import errors


def test_names_are_unique_and_follow_the_public_patterns() -> None:
    """Every flavor name is unique and reads like the public ones (bm*/g*-ai-...)."""
    names = [f.name for f in CATALOG]
    assert len(names) == len(set(names))
    for flavor in CATALOG:
        if flavor.is_vpod:
            assert re.fullmatch(r"(bm1|g2a)-ai-[a-z]+-v1pod-\d+", flavor.name), flavor.name
            assert flavor.name.endswith(f"-v1pod-{flavor.ipus}")
        else:
            assert flavor.name.endswith(f"-{flavor.gpus_per_server}"), flavor.name


def test_catalog_has_every_kind_the_issue_lists() -> None:
    """Virtual and dedicated vPOD-4/16/64 (and virtual vPOD-8), H100/A100/L40S bare metal, VMs."""
    kinds = {(f.kind, f.ipus) for f in CATALOG if f.is_vpod}
    for size in (4, 8, 16, 64):
        assert (ClusterKind.VIRTUAL_VPOD, size) in kinds
    assert {(ClusterKind.DEDICATED_VPOD, n) for n in (4, 16, 64)} <= kinds
    bare_metal = {
        (f.host_model, f.infiniband) for f in CATALOG if f.kind is ClusterKind.GPU_BAREMETAL
    }
    assert {
        ("h100-80", True),
        ("a100-80", True),
        ("a100-40", False),
        ("l40s-48", False),
    } <= bare_metal
    assert any(f.kind is ClusterKind.GPU_VM for f in CATALOG)


@pytest.mark.parametrize(
    ("name", "volumes", "suspendable", "billed_suspended", "role"),
    [
        ("g2a-ai-fast-v1pod-8", True, True, False, None),
        ("bm1-ai-small-v1pod-4", False, True, True, HostRole.BAREMETAL),
        ("bm3-ai-1xlarge-h100-80-8", False, False, True, HostRole.BAREMETAL),
        ("g3-ai-24-232-1250-h100-80-1", True, True, False, HostRole.HYPERVISOR),
    ],
)
def test_what_each_kind_allows(
    name: str, volumes: bool, suspendable: bool, billed_suspended: bool, role: HostRole | None
) -> None:
    """VMs take volumes and stop billing when suspended; bare metal does neither."""
    flavor = find_flavor(name)
    assert flavor.takes_volumes is volumes
    assert flavor.suspendable is suspendable
    assert flavor.billed_while_suspended is billed_suspended
    assert flavor.host_role is role


def test_prices_are_per_cluster_for_vpods_and_per_server_for_gpus() -> None:
    """A vPOD costs its flavor's price; a GPU cluster its price times its servers."""
    vpod = find_flavor("g2a-ai-fast-v1pod-16")
    gpu = find_flavor("bm3-ai-1xlarge-h100-80-8")
    assert vpod.price_of(1) == vpod.price_per_hour
    assert gpu.price_of(3) == gpu.price_per_hour * 3
    assert (vpod.meter_quantity(1), gpu.meter_quantity(3)) == (1, 3)
    for flavor in CATALOG:
        assert flavor.price_per_month > flavor.price_per_hour * 24 * 28 * Decimal("0.8")


def test_an_unknown_flavor_is_refused_with_close_names() -> None:
    """A typo gets the nearest names and where to look."""
    with pytest.raises(
        errors.InvalidArgument,
        match=r"did you mean g2a-ai-fast-v1pod-64 or g2a-ai-fast-v1pod-16.*vpod flavors",
    ):
        find_flavor("g2a-ai-fast-v1pod-61")
    with pytest.raises(errors.InvalidArgument, match="there is no flavor 'x'"):
        find_flavor("x")


def test_images_depend_on_the_kind() -> None:
    """vPODs boot Poplar images, GPU clusters CUDA images; the first is the default."""
    assert check_image(find_flavor("g2a-ai-fast-v1pod-4"), None) == POPLAR_IMAGES[0]
    assert check_image(find_flavor("bm2-ai-large-a100-40-8"), "") == GPU_IMAGES[0]
    with pytest.raises(errors.InvalidArgument, match="does not run on g2a-ai-fast-v1pod-4"):
        check_image(find_flavor("g2a-ai-fast-v1pod-4"), GPU_IMAGES[0])
