"""The cloud API's registered GPU and Poplar hosts (administrators)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class HostIn(StrictBody):
    id: str
    role: str = Field(description="`baremetal` or `hypervisor`.")
    model: str = Field(description="`poplar`, `h100-80`, `a100-80`, `a100-40`, `l40s-48`.")
    fabric: str | None = Field(None, description="InfiniBand fabric id, if on one.")
    address: str = ""
    slots: int | None = Field(None, description="GPUs (default 8; 1 for Poplar hosts).")


class HostEnabledIn(StrictBody):
    enabled: bool


class HostOut(BaseModel):
    id: str
    role: str
    model: str
    slots: int
    free_slots: int
    fabric: str | None
    address: str
    enabled: bool
    registered_at: datetime
