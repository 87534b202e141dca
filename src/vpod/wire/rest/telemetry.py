"""Per-IPU telemetry (``GET /api/v1/admin/telemetry``), from the agents' last heartbeats."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class HolderOut(BaseModel):
    pid: int = Field(description="Process id the application announced (0 = unknown).")
    host: str
    command: str


class IpuTelemetryOut(BaseModel):
    agent_id: str
    cluster_id: str | None
    device_id: int
    serial: str
    partition_id: str | None
    routing_id: int | None
    healthy: bool
    fault: str
    attached: bool
    attached_client: str | None
    holder: HolderOut | None
    attached_since: datetime | None
    busy: bool = Field(description="Utilisation above zero.")
    utilisation: float = Field(description="0..1")
    temperature_c: float
    power_w: float
    link_errors: int
    links_down: int
    sampled_at: datetime = Field(description="When the agent answered the heartbeat.")


class IpuTelemetryList(BaseModel):
    ipus: list[IpuTelemetryOut]
