"""Projects, their quotas and usage, and API tokens."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from vpod.store.cloud_records import ProjectRecord
from vpod.store.cloud_store import Admit

from ...model.tenants import Project, Token
from .base import RecordsBase
from .convert import project_of, row_of_project, row_of_token, token_of

QuotaAdmit = Callable[[Project, dict[str, int]], None]
"""Raises to refuse a request that would overrun the project's quotas (given the project and
its usage as they are inside the transaction)."""


def store_admit(admit: QuotaAdmit | None) -> Admit | None:
    """``admit`` as the store calls it (with its project row)."""
    if admit is None:
        return None

    def check(project: ProjectRecord, used: dict[str, int]) -> None:
        admit(project_of(project), used)

    return check


class ProjectRecords(RecordsBase):
    async def add_project(self, project: Project, token: Token | None = None) -> None:
        """Record a project with its first token."""
        await self._db(
            self._store.add_project,
            row_of_project(project),
            None if token is None else row_of_token(token),
        )

    async def get_project(self, project_id: str) -> Project:
        return project_of(await self._db(self._store.get_project, project_id))

    async def list_projects(self) -> list[Project]:
        return [project_of(p) for p in await self._db(self._store.list_projects)]

    async def set_quotas(self, project_id: str, quotas: Mapping[str, int]) -> Project:
        return project_of(await self._db(self._store.set_quotas, project_id, quotas))

    async def remove_project(self, project_id: str, at: datetime) -> None:
        await self._db(self._store.remove_project, project_id, at)

    async def project_usage(self, project_id: str) -> dict[str, int]:
        """What the project holds, by quota name (NotFound for an unknown project)."""
        return await self._db(self._store.project_usage, project_id)

    # -- tokens -------------------------------------------------------------------------------

    async def add_token(self, token: Token) -> None:
        await self._db(self._store.add_token, row_of_token(token))

    async def find_token(self, token_id: str) -> Token | None:
        return await self._found(token_of, self._store.find_token, token_id)

    async def list_tokens(
        self, *, project_id: str | None = None, admin: bool = False
    ) -> list[Token]:
        """Admin tokens (``admin``), a project's tokens, or every token."""
        found = await self._db(self._store.list_tokens, project_id=project_id, admin=admin)
        return [token_of(t) for t in found]

    async def remove_token(self, token_id: str) -> None:
        await self._db(self._store.remove_token, token_id)
