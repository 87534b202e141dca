"""The controller's version (``GET /api/v1/version``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Version(BaseModel):
    version: str = Field(description="The V-IPU release whose API this controller serves.")
    ipuof_server_version: str
