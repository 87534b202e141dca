"""The cloud API's tasks: every mutating call answers one (``/api/cloud/v1/tasks``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class PhaseOut(BaseModel):
    phase: str
    at: datetime


class TaskOut(BaseModel):
    id: str
    project_id: str
    operation: str
    resource_type: str
    resource_id: str
    resource_name: str
    state: str = Field(description="NEW, RUNNING, FINISHED or ERROR.")
    detailed_state: str | None = Field(description="The phase it is in (or ended in).")
    phases: list[PhaseOut] = Field(description="Every phase entered so far, with when.")
    expected_phases: list[str] = Field(description="The phases this operation walks, in order.")
    error: str = ""
    warnings: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
