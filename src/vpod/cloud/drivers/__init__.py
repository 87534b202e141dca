"""Compute and volume drivers behind small Protocols (see :mod:`.base`), chosen by name.

A driver is registered here under the name settings use (``compute_driver``,
``volume_driver`` in ``cloud.toml``); :func:`build_drivers` builds the pair
the settings name and refuses an unknown name, listing the known ones.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..model.errors import InvalidArgument
from . import base
from .base import *  # noqa: F403  (the drivers' protocols and values, as base declares them)
from .base import ComputeDriver, VolumeDriver
from .local_compute import LocalCompute
from .local_volumes import LocalVolumes
from .openstack_options import OpenStackOptions, parse_openstack
from .workspace import Layout


def _local_compute(directory: Path, **options: Any) -> ComputeDriver:
    options.pop("openstack", None)  # another driver's table
    return LocalCompute(Layout(directory), **options)


def _local_volumes(directory: Path, **_other_drivers: Any) -> VolumeDriver:
    return LocalVolumes(Layout(directory))


def _need_openstacksdk(setting: str) -> None:
    if importlib.util.find_spec("openstack") is None:
        raise InvalidArgument(
            f"{setting} needs openstacksdk, which is not installed: pip install 'vpod[openstack]'"
        )


def _openstack_compute(
    _directory: Path, *, openstack: OpenStackOptions | None = None, **_local: Any
) -> ComputeDriver:
    _need_openstacksdk("compute_driver = 'openstack'")
    from .openstack_compute import OpenStackCompute  # openstacksdk only where it is used

    return OpenStackCompute(openstack or OpenStackOptions())


def _cinder_volumes(_directory: Path, *, openstack: OpenStackOptions | None = None) -> VolumeDriver:
    _need_openstacksdk("volume_driver = 'cinder'")
    from .cinder_volumes import CinderVolumes

    return CinderVolumes(openstack or OpenStackOptions())


COMPUTE_DRIVERS: Mapping[str, Callable[..., ComputeDriver]] = {
    "local": _local_compute,
    "openstack": _openstack_compute,
}
"""Compute drivers by name; each is built from the cloud's data directory and the compute
options of the settings (uid range, unsafe mode, where bwrap is; ``openstack``: the
``[openstack]`` table)."""

VOLUME_DRIVERS: Mapping[str, Callable[..., VolumeDriver]] = {
    "local": _local_volumes,
    "cinder": _cinder_volumes,
}
"""Volume drivers by name; each is built from the cloud's data directory (``openstack``: the
``[openstack]`` table)."""


class UnknownDriver(InvalidArgument):
    """Settings name a driver this installation does not have."""


D = TypeVar("D")


def _pick(kind: str, name: str, known: Mapping[str, Callable[..., D]]) -> Callable[..., D]:
    make = known.get(name)
    if make is None:
        names = ", ".join(sorted(known))
        raise UnknownDriver(f"{kind} = {name!r} is not a known driver: the known ones are {names}")
    return make


def build_drivers(
    directory: Path,
    *,
    compute: str = "local",
    volumes: str = "local",
    compute_options: Mapping[str, Any] | None = None,
    openstack: OpenStackOptions | None = None,
) -> tuple[ComputeDriver, VolumeDriver]:
    """The compute and volume drivers named ``compute`` and ``volumes``, keeping their state
    under ``directory`` (:class:`UnknownDriver` for a name that is not registered)."""
    make_compute = _pick("compute_driver", compute, COMPUTE_DRIVERS)
    make_volumes = _pick("volume_driver", volumes, VOLUME_DRIVERS)
    compute_driver = make_compute(directory, openstack=openstack, **(compute_options or {}))
    return compute_driver, make_volumes(directory, openstack=openstack)


__all__ = [
    "COMPUTE_DRIVERS",
    "VOLUME_DRIVERS",
    "Layout",
    "LocalCompute",
    "LocalVolumes",
    "OpenStackOptions",
    "UnknownDriver",
    "build_drivers",
    "parse_openstack",
]
__all__ += base.__all__
