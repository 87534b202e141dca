"""JSON shapes of the GPU host routes (:mod:`.gpu_routes`) and of a server's GPUs."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from vpod.agent.gpu.model import GpuSample, HostInventory
from vpod.wire.rest.cloud_clusters import GpuOut
from vpod.wire.rest.cloud_hosts import HostOut
from vpod.wire.rest.errors import ErrorDetail

MAX_HOSTS_PER_BATCH = 1024
"""Hosts one batch of samples may carry (an emulating agent serves a few dozen)."""


class GpuHostRegisterIn(BaseModel):
    """What a GPU host agent sends when it starts (``vpod-gpu-agent``)."""

    model_config = ConfigDict(extra="forbid")
    host_id: str = Field(max_length=63, description="The host's id in the cloud.")
    role: str = Field("baremetal", description="baremetal or hypervisor.")
    fabric: str | None = Field(None, max_length=63, description="Its InfiniBand fabric.")
    model: str | None = Field(
        None, max_length=63, description="The cloud's host model; null: derived from the GPUs."
    )
    boot_id: str = Field(min_length=1, max_length=64, description="New at every agent start.")
    inventory: HostInventory


class GpuHostRegisterOut(BaseModel):
    host: HostOut
    new: bool
    message: str


class GpuSamplesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    boot_id: str = Field(min_length=1, max_length=64)
    samples: list[GpuSample] = Field(max_length=64)


class GpuHostSamplesIn(GpuSamplesIn):
    host_id: str = Field(max_length=63, description="The host the samples are of.")


class GpuSampleBatchIn(BaseModel):
    """The samples of every host one agent process serves, in one request."""

    model_config = ConfigDict(extra="forbid")
    reports: list[GpuHostSamplesIn] = Field(
        min_length=1, max_length=MAX_HOSTS_PER_BATCH, description="One entry per host, each once."
    )


class GpuHostReportOut(BaseModel):
    host_id: str
    accepted: bool
    error: ErrorDetail | None = Field(
        None,
        description="Why this host's samples were refused, as the single-host route would say"
        " it (`NOT_FOUND`: register the host again; `PERMISSION_DENIED`: not its agent token).",
    )


class GpuSampleBatchOut(BaseModel):
    """Each host's outcome, in the order of the request."""

    results: list[GpuHostReportOut]


class GpuHostOut(BaseModel):
    """A host with an agent, as operators see it (``GET /admin/gpus``)."""

    host_id: str
    role: str
    model: str
    fabric: str | None
    enabled: bool
    hostname: str
    driver_version: str
    cuda_version: str
    backend: str
    registered_at: datetime
    reported_at: datetime
    silent_for_s: float | None = Field(description="Past the silence limit: its GPUs are unusable.")
    gpus: list[GpuOut]
