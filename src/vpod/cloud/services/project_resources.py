"""What the use-cases over a project's own resources of one kind share (keypairs, volumes,
dataset storage): the context, the clusters' views, and finding one by id or name in the
caller's project only (another project's is "not found", whether or not it exists)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import ClassVar, Generic, TypeVar

from .cluster_views import ClusterViews
from .context import CloudContext
from .projects import Principal, find_own

R = TypeVar("R")


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
