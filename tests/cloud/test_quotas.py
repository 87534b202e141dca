"""Quota arithmetic: demand of a request, check_limits, refusals."""

from __future__ import annotations

import pytest

from vpod.cloud.flavors import find_flavor
from vpod.cloud.model import errors
from vpod.cloud.quotas import (
    DEFAULT_QUOTAS,
    QUOTA_NAMES,
    QuotaExceeded,
    check_limits,
    check_quota_names,
    cluster_demand,
    refuse_if_exceeded,
    with_defaults,
)


def test_a_vpod_asks_for_a_cluster_its_ipus_and_its_volumes() -> None:
    """vPOD-16 with a 100 GiB data volume and a 50 GiB boot volume."""
    demand = cluster_demand(find_flavor("g2a-ai-fast-v1pod-16"), 1, [100, 50])
    assert demand == {"clusters": 1, "ipus": 16, "volumes": 2, "volume_gib": 150}


def test_a_gpu_cluster_asks_for_gpus_of_its_family() -> None:
    """Three 8-GPU H100 servers count 24 against gpus_h100."""
    demand = cluster_demand(find_flavor("bm3-ai-1xlarge-h100-80-8"), 3)
    assert demand == {"clusters": 1, "gpus_h100": 24}


def test_within_limits_nothing_is_exceeded() -> None:
    """Used plus requested up to the limit fits exactly."""
    assert check_limits({"ipus": 16}, {"ipus": 8}, {"ipus": 8}) == []


def test_every_overrun_quota_is_reported_in_order() -> None:
    """Each exceeded quota says its limit, use and request."""
    over = check_limits(
        {"clusters": 1, "ipus": 8}, {"clusters": 1, "ipus": 4}, {"clusters": 1, "ipus": 8}
    )
    assert [(e.quota, e.limit, e.used, e.requested) for e in over] == [
        ("clusters", 1, 1, 1),
        ("ipus", 8, 4, 8),
    ]
    assert (
        over[1].sentence() == "quota ipus is 8 and 4 are in use, so 4 are left but 8 were asked for"
    )


def test_minus_one_is_unlimited_and_missing_limits_take_the_defaults() -> None:
    """-1 never refuses; an absent limit is the default one."""
    assert check_limits({"ipus": -1}, {"ipus": 10**6}, {"ipus": 10**6}) == []
    over = check_limits({}, {}, {"ipus": DEFAULT_QUOTAS["ipus"] + 1})
    assert [e.quota for e in over] == ["ipus"]
    assert set(with_defaults({})) == set(QUOTA_NAMES)


def test_refusal_is_resource_exhausted_and_names_the_project() -> None:
    """An overrun raises QuotaExceeded (HTTP 409 RESOURCE_EXHAUSTED) with advice."""
    over = check_limits({"clusters": 0}, {}, {"clusters": 1})
    with pytest.raises(QuotaExceeded, match="project acme is over quota: quota clusters is 0"):
        refuse_if_exceeded("acme", over)
    assert issubclass(QuotaExceeded, errors.NoCapacity)
    refuse_if_exceeded("acme", [])


def test_quota_names_and_values_are_checked() -> None:
    """Unknown names and limits below -1 are refused with the list of names."""
    with pytest.raises(errors.InvalidArgument, match="unknown quota 'cpus'"):
        check_quota_names({"cpus": 1})
    with pytest.raises(errors.InvalidArgument, match="-1 for unlimited"):
        check_quota_names({"ipus": -2})
    assert check_quota_names({"ipus": 0}) == {"ipus": 0}
