"""Compute and volume drivers behind small Protocols (see :mod:`.base`), chosen in settings."""

from __future__ import annotations

from ..settings import CloudSettings
from .base import (
    ComputeDriver,
    DriverError,
    ServerSetup,
    ServerSpec,
    SetupResult,
    ShellAccess,
    VipuAccess,
    VolumeDriver,
)
from .local_compute import LocalCompute
from .local_volumes import LocalVolumes
from .workspace import Layout


def build_drivers(settings: CloudSettings) -> tuple[ComputeDriver, VolumeDriver]:
    """The drivers ``settings`` name (only ``local`` ships; settings refuse the others)."""
    layout = Layout(settings.cloud_dir)
    return LocalCompute(layout), LocalVolumes(layout)


__all__ = [
    "ComputeDriver",
    "DriverError",
    "Layout",
    "LocalCompute",
    "LocalVolumes",
    "ServerSetup",
    "ServerSpec",
    "SetupResult",
    "ShellAccess",
    "VipuAccess",
    "VolumeDriver",
    "build_drivers",
]
