"""The cloud API's volumes: creating one, attaching it, the volume."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class VolumeCreateIn(StrictBody):
    name: str
    size_gib: int = Field(ge=1)
    volume_type: str = "standard"


class AttachIn(StrictBody):
    cluster: str = Field(description="Cluster id or name.")
    server: int = Field(1, ge=1, description="Which server of the cluster (1 = the first).")


class VolumeOut(BaseModel):
    id: str
    name: str
    size_gib: int
    volume_type: str
    boot: bool
    status: str = Field(description="Cinder's: creating, available, attaching, in-use, ...")
    cluster_id: str | None
    server_id: str | None
    task_id: str | None
    created_at: datetime
