"""How a REST route is declared: its method, path and the error statuses it documents, on one line.

The routes of one part of the API share an OpenAPI tag (``admin: agents``,
``partitions``): :class:`Routes` names the router and the tag once, and each
route says only what is its own. Every route documents its errors through
:func:`.rest_errors.error_responses` (no statuses named: the usual set); one
that makes something answers ``201 Created`` (:meth:`Routes.creates`); a
removal or a reset answers ``204 No Content`` (:meth:`Routes.no_content`,
:mod:`.rest_no_content`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fastapi import APIRouter, status

from .rest_errors import error_responses
from .rest_no_content import Handler, RouteMethod, no_content


@dataclass(frozen=True)
class Routes:
    """Declares routes on ``router`` under ``tag`` (None: only the router's own tags)."""

    router: APIRouter
    tag: str | None = None

    def get(self, path: str, *errors: int) -> Callable[[Handler], Handler]:
        """A ``GET`` at ``path`` that may answer ``errors``."""
        return self._declare(self.router.get, path, errors)

    def put(self, path: str, *errors: int) -> Callable[[Handler], Handler]:
        """A ``PUT`` at ``path`` that may answer ``errors``."""
        return self._declare(self.router.put, path, errors)

    def post(self, path: str, *errors: int) -> Callable[[Handler], Handler]:
        """A ``POST`` at ``path`` that may answer ``errors`` (200 with its reply)."""
        return self._declare(self.router.post, path, errors)

    def delete(self, path: str, *errors: int) -> Callable[[Handler], Handler]:
        """A ``DELETE`` at ``path`` that answers with a body (204 ones: :meth:`no_content`)."""
        return self._declare(self.router.delete, path, errors)

    def creates(self, path: str, *errors: int) -> Callable[[Handler], Handler]:
        """A ``POST`` at ``path`` that makes something: ``201 Created`` with what it made."""
        return self._declare(self.router.post, path, errors, status.HTTP_201_CREATED)

    def no_content(
        self, method: Literal["delete", "post"], path: str, *errors: int
    ) -> Callable[[Handler], Handler]:
        """A removal (``delete``) or an action (``post``) at ``path`` answering 204, no body."""
        declare = self.router.delete if method == "delete" else self.router.post
        return no_content(declare, path, *errors, tags=self._tags)

    @property
    def _tags(self) -> list[str] | None:
        return [self.tag] if self.tag is not None else None

    def _declare(
        self,
        method: RouteMethod[Handler],
        path: str,
        errors: tuple[int, ...],
        status_code: int | None = None,
    ) -> Callable[[Handler], Handler]:
        return method(
            path, tags=self._tags, status_code=status_code, responses=error_responses(*errors)
        )
