"""The audit log's entries (``GET /api/v1/admin/events``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class EventOut(BaseModel):
    """One audit-log entry: who did what to which target, from where, and how it ended."""

    id: int = Field(description="Grows in append order; pass the smallest as `before_id`.")
    time: datetime
    actor: str = Field(description="A user id, `anonymous` (open mode) or `system`.")
    action: str = Field(description="e.g. `create_partition`, `authenticate`.")
    target: str
    outcome: str = Field(description="`ok`, `failed`, `denied`, `detected` ...")
    source: str = Field(description="Transport and peer, e.g. `http:10.0.0.5:51234`.")
    detail: str


class EventList(BaseModel):
    events: list[EventOut] = Field(description="Newest first.")
