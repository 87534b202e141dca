"""Registered hosts (GPU servers, bare-metal Poplar servers), their GPU agents and GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

NO_SAMPLE = "no health sample yet"
"""The problem a GPU has until its agent's first sample says otherwise."""


@dataclass(frozen=True)
class Host:
    """A registered host: a GPU server or a bare-metal Poplar server."""

    id: str
    role: str
    model: str
    slots: int
    fabric: str | None
    address: str
    enabled: bool
    registered_at: datetime


@dataclass(frozen=True)
class HostRegistration:
    """A host as an operator registers it: left out, ``slots`` is its model's default and
    ``fabric`` none (a GPU host's agent registers it with its inventory instead)."""

    id: str
    role: str
    model: str
    fabric: str | None = None
    address: str = ""
    slots: int | None = None


@dataclass(frozen=True)
class HostUsage:
    """A host and the slots servers hold on it."""

    host: Host
    used_slots: frozenset[int]

    @property
    def free(self) -> tuple[int, ...]:
        return tuple(s for s in range(self.host.slots) if s not in self.used_slots)


@dataclass(frozen=True)
class GpuAgent:
    """The GPU host agent a host registered with, and when it last reported."""

    host_id: str
    token_id: str | None
    boot_id: str
    hostname: str
    driver_version: str
    cuda_version: str
    backend: str
    registered_at: datetime
    reported_at: datetime


@dataclass(frozen=True)
class HostGpu:
    """One GPU of a host as its agent registered it, with its health as it last changed."""

    host_id: str
    idx: int
    uuid: str
    name: str
    memory_mib: int
    pci_bus_id: str
    details: dict[str, Any]
    healthy: bool
    problems: str
    changed_at: datetime


@dataclass(frozen=True)
class HealthChange:
    """A GPU whose health differs from what is recorded."""

    idx: int
    healthy: bool
    problems: str
