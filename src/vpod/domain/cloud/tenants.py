"""Projects (tenants) and their API tokens as the cloud speaks of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Project:
    id: str
    name: str
    quotas: dict[str, int]
    created_at: datetime


@dataclass(frozen=True)
class Token:
    """An API token: ``id`` is its public half, ``key_hash`` the slow hash of its secret half."""

    id: str
    project_id: str | None
    """``None`` for an administrator's token."""
    key_hash: str
    label: str
    created_at: datetime
