"""What an operation leaves behind when its task ends: typed changes, not dicts.

The runner applies them in the transaction that ends the task (with the
metering entries their statuses imply), so a task's end, its resources' new
statuses and their bills change together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .statuses import ClusterStatus, VolumeStatus


@dataclass(frozen=True)
class ClusterChange:
    """The cluster's status when the task ends, and what changes with it (None: kept)."""

    status: ClusterStatus
    error: str | None = None
    """The sentence shown on the cluster; ``""`` clears an earlier one."""
    server_count: int | None = None
    gpus: int | None = None
    vipu_released: bool = False
    """The vPOD's V-IPU allocation and user are gone (a rolled-back creation)."""
    allocation_released: bool = False
    """The vPOD's allocation was given back (suspended); its user stays, key and all."""

    def fields(self, now: datetime) -> dict[str, Any]:
        """The columns to write, as the store takes them."""
        values: dict[str, Any] = {"status": self.status, "updated_at": now}
        if self.error is not None:
            values["error"] = self.error
        if self.server_count is not None:
            values["server_count"] = self.server_count
        if self.gpus is not None:
            values["gpus"] = self.gpus
        if self.vipu_released:
            values.update(allocation_id=None, vipu_user_id=None)
        if self.allocation_released:
            values["allocation_id"] = None
        return values


@dataclass(frozen=True)
class Attachment:
    """Where a volume is attached: a server of a cluster."""

    cluster_id: str
    server_id: str


@dataclass(frozen=True)
class VolumeChange:
    """The volume's status when the task ends, and its attachment."""

    status: VolumeStatus
    attachment: Attachment | None = None
    """Attached there from now on (None: as it was, unless ``detached``)."""
    detached: bool = False
    """Attached nowhere from now on."""

    def __post_init__(self) -> None:
        if self.detached and self.attachment is not None:
            raise ValueError("a volume change cannot both attach and detach the volume")

    def fields(self, now: datetime) -> dict[str, Any]:
        """The columns to write, as the store takes them."""
        values: dict[str, Any] = {"status": self.status, "updated_at": now}
        if self.attachment is not None:
            values.update(
                cluster_id=self.attachment.cluster_id, server_id=self.attachment.server_id
            )
        elif self.detached:
            values.update(cluster_id=None, server_id=None)
        return values


def volume_fields(changes: Mapping[str, VolumeChange], now: datetime) -> dict[str, dict[str, Any]]:
    return {volume_id: change.fields(now) for volume_id, change in changes.items()}
