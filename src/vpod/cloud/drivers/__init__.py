"""Compute and volume drivers behind small Protocols (see :mod:`.base`), chosen by name.

A driver is registered here under the name settings use (``compute_driver``,
``volume_driver`` in ``cloud.toml``); :func:`build_drivers` builds the pair
the settings name and refuses an unknown name, listing the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..model.errors import InvalidArgument
from .base import (
    ComputeDriver,
    DatasetAccess,
    DriverError,
    NetworkReach,
    ServerSetup,
    ServerSpec,
    SetupResult,
    ShellAccess,
    ShellRequest,
    ShellSession,
    TemporaryDriverError,
    VipuAccess,
    VolumeDriver,
)
from .local_compute import LocalCompute
from .local_volumes import LocalVolumes
from .workspace import Layout

COMPUTE_DRIVERS: Mapping[str, Callable[..., ComputeDriver]] = {
    "local": lambda directory, **options: LocalCompute(Layout(directory), **options),
}
"""Compute drivers by name; each is built from the cloud's data directory and the compute
options of the settings (uid range, unsafe mode, where bwrap is)."""

VOLUME_DRIVERS: Mapping[str, Callable[[Path], VolumeDriver]] = {
    "local": lambda directory: LocalVolumes(Layout(directory)),
}
"""Volume drivers by name; each is built from the cloud's data directory."""


class UnknownDriver(InvalidArgument):
    """Settings name a driver this installation does not have."""


D = TypeVar("D")


def _pick(kind: str, name: str, known: Mapping[str, Callable[[Path], D]]) -> Callable[[Path], D]:
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
) -> tuple[ComputeDriver, VolumeDriver]:
    """The compute and volume drivers named ``compute`` and ``volumes``, keeping their state
    under ``directory`` (:class:`UnknownDriver` for a name that is not registered)."""
    make_compute = _pick("compute_driver", compute, COMPUTE_DRIVERS)
    make_volumes = _pick("volume_driver", volumes, VOLUME_DRIVERS)
    return make_compute(directory, **(compute_options or {})), make_volumes(directory)


__all__ = [
    "COMPUTE_DRIVERS",
    "VOLUME_DRIVERS",
    "ComputeDriver",
    "DatasetAccess",
    "DriverError",
    "Layout",
    "LocalCompute",
    "LocalVolumes",
    "NetworkReach",
    "ServerSetup",
    "ServerSpec",
    "SetupResult",
    "ShellAccess",
    "ShellRequest",
    "ShellSession",
    "TemporaryDriverError",
    "UnknownDriver",
    "VipuAccess",
    "VolumeDriver",
    "build_drivers",
]
