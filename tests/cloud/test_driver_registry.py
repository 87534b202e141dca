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
from vpod.cloud.model import errors
from vpod.cloud.settings import CloudSettings, parse_settings


def test_the_named_drivers_are_built_on_the_cloud_directory(tmp_path: Path) -> None:
    compute, volumes = build_drivers(tmp_path, compute="local", volumes="local")
    assert isinstance(compute, LocalCompute)
    assert isinstance(volumes, LocalVolumes)


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({"compute": "openstack"}, "compute_driver = 'openstack' is not a known driver: the known"),
        ({"volumes": "cinder"}, "volume_driver = 'cinder' is not a known driver: the known"),
    ],
)
def test_an_unknown_driver_name_is_refused_with_the_known_ones(
    tmp_path: Path, names: dict[str, str], message: str
) -> None:
    with pytest.raises(UnknownDriver, match=message) as refused:
        build_drivers(tmp_path, **names)
    assert str(refused.value).endswith("ones are local")
    assert isinstance(refused.value, errors.InvalidArgument)


def test_settings_refuse_what_the_registry_does_not_hold() -> None:
    """Settings check names against the same registry the drivers are built from."""
    assert set(COMPUTE_DRIVERS) == set(VOLUME_DRIVERS) == {"local"}
    with pytest.raises(errors.InvalidArgument, match=r"volume_driver = 'cinder'.*use local"):
        parse_settings({"volume_driver": "cinder"}, data_dir=Path("d"), source="cloud.toml")


def test_the_cloud_does_not_start_on_settings_naming_an_unknown_driver(tmp_path: Path) -> None:
    """Settings made in code (not read from cloud.toml) are checked when the cloud is built,
    before anything else is."""
    settings = CloudSettings(data_dir=tmp_path, compute_driver="openstack")
    with pytest.raises(UnknownDriver, match="compute_driver = 'openstack'"):
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
