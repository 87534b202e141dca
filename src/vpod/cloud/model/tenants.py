"""Projects (tenants) and their API tokens.

One value type each, defined in :mod:`vpod.domain.cloud.tenants` (the store reads its rows
into them too); the cloud's model names them here."""

from __future__ import annotations

from vpod.domain.cloud.tenants import Project as Project
from vpod.domain.cloud.tenants import Token as Token
