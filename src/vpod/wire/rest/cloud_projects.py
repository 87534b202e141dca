"""The cloud API's projects and their API tokens (administrators)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from .fields import StrictBody


class ProjectCreateIn(StrictBody):
    id: str
    name: str = ""
    quotas: dict[str, int] = Field(default_factory=dict, description="-1 means unlimited.")


class QuotasIn(StrictBody):
    quotas: dict[str, int]


class TokenIn(StrictBody):
    label: str = ""


class ProjectOut(BaseModel):
    id: str
    name: str
    quotas: dict[str, int]
    usage: dict[str, int]
    created_at: datetime


class TokenOut(BaseModel):
    id: str
    project_id: str | None
    label: str
    created_at: datetime
    token: str | None = Field(None, description="The token itself: shown only when made.")


class ProjectCreatedOut(BaseModel):
    project: ProjectOut
    token: TokenOut
