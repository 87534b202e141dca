"""JSON shapes of the GPU host routes (:mod:`.gpu_routes`) and of a server's GPUs."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from vpod.agent.gpu.model import GpuSample, HostInventory
from vpod.wire.rest.cloud_clusters import GpuOut
from vpod.wire.rest.cloud_hosts import HostOut


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
