"""Serving the console from the controller's HTTP port, as a server extension.

The controller cannot import the web layer (layers point down), so the
command line hands :func:`vpod.controller.server.serve` a :class:`WebConsole`
factory; the extension adds the console's routes and wraps the HTTP app in
the session layer (:mod:`.middleware`). It never touches the controller
object: everything the console shows comes through the public API.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.types import ASGIApp

from .login_throttle import LoginThrottle
from .middleware import SessionCredentials
from .pages import web_routes
from .sessions import SessionStore


class WebExtension:
    def __init__(self, sessions: SessionStore, throttle: LoginThrottle) -> None:
        self.sessions = sessions
        self.throttle = throttle

    def http_router(self) -> APIRouter | None:
        return web_routes(self.sessions, self.throttle)

    def wrap_http(self, app: ASGIApp) -> ASGIApp:
        return SessionCredentials(app, self.sessions)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class WebConsole:
    """The extension factory; one session store and login throttle per controller process."""

    def __init__(self) -> None:
        self.sessions = SessionStore()
        self.throttle = LoginThrottle()

    def __call__(self, _controller: object) -> WebExtension:
        return WebExtension(self.sessions, self.throttle)
