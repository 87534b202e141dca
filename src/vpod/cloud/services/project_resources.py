"""What the use-cases over a project's own resources of one kind share (keypairs, volumes,
dataset storage): the context, the clusters' views, and finding one by id or name in the
caller's project only (another project's is "not found", whether or not it exists); and,
for those the API shows as views of their records, reading them as views."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import ClassVar, Generic, TypeVar

from .cluster_views import ClusterViews
from .context import CloudContext
from .projects import Principal, find_own

R = TypeVar("R")
V = TypeVar("V")


class ProjectResources(Generic[R]):
    what: ClassVar[str]
    """What one is called in messages (``keypair``)."""
    lists_them: ClassVar[str]
    """The command that lists the project's own (``vpod keypair list``)."""

    def __init__(self, ctx: CloudContext, views: ClusterViews) -> None:
        self._ctx = ctx
        self._views = views

    def _lookup(self, project_id: str, ref: str) -> Awaitable[R | None]:
        """The store's lookup of one by id or name in ``project_id``."""
        raise NotImplementedError

    async def _find(self, principal: Principal, ref: str) -> R:
        return await find_own(principal, self._lookup, ref, self.what, self.lists_them)


class ViewedResources(ProjectResources[R], Generic[R, V]):
    """Resources the API shows as views of their records (a keypair with the clusters it may
    log in to, a storage with its clusters and masked key)."""

    async def _view(self, record: R) -> V:
        raise NotImplementedError

    async def _views_of(self, records: Iterable[R]) -> list[V]:
        return [await self._view(r) for r in records]

    async def get(self, principal: Principal, ref: str) -> V:
        return await self._view(await self._find(principal, ref))
