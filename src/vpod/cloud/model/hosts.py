"""Registered hosts, their GPU agents and GPUs.

One value type each, defined in :mod:`vpod.domain.cloud.hosts` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.hosts import NO_SAMPLE as NO_SAMPLE
from vpod.domain.cloud.hosts import GpuAgent as GpuAgent
from vpod.domain.cloud.hosts import HealthChange as HealthChange
from vpod.domain.cloud.hosts import Host as Host
from vpod.domain.cloud.hosts import HostGpu as HostGpu
from vpod.domain.cloud.hosts import HostRegistration as HostRegistration
from vpod.domain.cloud.hosts import HostUsage as HostUsage
