"""The shape of this API's ASGI middlewares: they act on HTTP requests only.

Lifespan events (and any other scope) pass through untouched, so a
middleware is written as :meth:`HttpMiddleware.handle` of one HTTP request.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware(ABC):
    """An ASGI middleware over ``app`` that sees only ``http`` scopes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.handle(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    @abstractmethod
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request, calling ``self.app`` (or answering without it)."""
