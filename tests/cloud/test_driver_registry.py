"""Drivers are chosen by the names settings give; an unknown name is refused at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from vpod.cloud.app import build_cloud
from vpod.cloud.drivers import (
    COMPUTE_DRIVERS,
    VOLUME_DRIVERS,
    LocalCompute,
    LocalVolumes,
    UnknownDriver,
    build_drivers,
)
from vpod.cloud.drivers.cinder_volumes import CinderVolumes
from vpod.cloud.drivers.openstack_compute import OpenStackCompute
from vpod.cloud.model import errors
from vpod.cloud.settings import CloudSettings, parse_settings


def test_the_named_drivers_are_built_on_the_cloud_directory(tmp_path: Path) -> None:
    compute, volumes = build_drivers(tmp_path, compute="local", volumes="local")
    assert isinstance(compute, LocalCompute)
    assert isinstance(volumes, LocalVolumes)


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({"compute": "nova"}, "compute_driver = 'nova' is not a known driver: the known"),
        ({"volumes": "ceph"}, "volume_driver = 'ceph' is not a known driver: the known"),
    ],
)
def test_an_unknown_driver_name_is_refused_with_the_known_ones(
    tmp_path: Path, names: dict[str, str], message: str
) -> None:
    with pytest.raises(UnknownDriver, match=message) as refused:
        build_drivers(tmp_path, **names)
    assert str(refused.value).endswith(("ones are local, openstack", "ones are cinder, local"))
    assert isinstance(refused.value, errors.InvalidArgument)


def test_settings_refuse_what_the_registry_does_not_hold() -> None:
    """Settings check names against the same registry the drivers are built from."""
    assert set(COMPUTE_DRIVERS) == {"local", "openstack"}
    assert set(VOLUME_DRIVERS) == {"local", "cinder"}
    with pytest.raises(errors.InvalidArgument, match=r"volume_driver = 'ceph'.*use local, cinder"):
        parse_settings({"volume_driver": "ceph"}, data_dir=Path("d"), source="cloud.toml")


def test_the_openstack_pair_is_built_from_the_openstack_table(tmp_path: Path) -> None:
    """Building talks to no OpenStack: the connection is made at the first call."""
    settings = parse_settings(
        {
            "compute_driver": "openstack",
            "volume_driver": "cinder",
            "openstack": {"cloud": "prod", "flavors": {"g2a-ai-fast-v1pod-4": "p4"}},
        },
        data_dir=tmp_path,
        source="cloud.toml",
    )
    compute, volumes = build_drivers(
        tmp_path,
        compute=settings.compute_driver,
        volumes=settings.volume_driver,
        compute_options=settings.compute_options(),
        openstack=settings.openstack,
    )
    assert isinstance(compute, OpenStackCompute)
    assert isinstance(volumes, CinderVolumes)
    assert compute.options.cloud == volumes.options.cloud == "prod"
    assert compute.options.nova_flavor("g2a-ai-fast-v1pod-4") == "p4"
    assert compute.options.nova_flavor("g2a-ai-fast-v1pod-8") == "g2a-ai-fast-v1pod-8"
    assert compute.refusal() is None


def test_the_cloud_does_not_start_on_settings_naming_an_unknown_driver(tmp_path: Path) -> None:
    """Settings made in code (not read from cloud.toml) are checked when the cloud is built,
    before anything else is."""
    settings = CloudSettings(data_dir=tmp_path, compute_driver="vmware")
    with pytest.raises(UnknownDriver, match="compute_driver = 'vmware'"):
        build_cloud(None, settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"task_attempts": 0}, "task_attempts is at least 1"),
        ({"task_retry_s": -1.0}, "task_retry_s cannot be negative"),
    ],
)
def test_retry_settings_are_checked(raw: dict[str, object], message: str) -> None:
    with pytest.raises(errors.InvalidArgument, match=message):
        parse_settings(raw, data_dir=Path("d"), source="cloud.toml")
