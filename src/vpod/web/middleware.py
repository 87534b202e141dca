"""The ASGI layer in front of the controller's HTTP app that turns a session into credentials.

For each request under ``/api/`` or ``/web/`` carrying the session cookie:

- a request that brings credentials of its own (``Authorization``,
  ``X-Vipu-User-Id``, ``X-Vipu-Access-Key``) is passed on untouched: it is
  a script, not the page;
- a state-changing request (not GET, HEAD or OPTIONS) needs the session's
  CSRF token in ``X-CSRF-Token`` and, when the browser names an
  ``Origin``, the same host as the request: else 403;
- the API sees the session's credentials in the headers it reads.

A WebSocket under ``/api/`` (the browser terminal's shell relay) gets the
session's credentials only when the browser's ``Origin`` names this host and
the query string carries the session's CSRF token (``?csrf=``): a page of
another site cannot open a shell with the visitor's cookie, and browsers
cannot set headers on a WebSocket.

An unknown or expired cookie adds nothing: the API answers 401 as it would
to anyone without credentials (in open mode, everyone may do everything).
Pages are served by :mod:`.pages`; this layer only reads the session.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from .sessions import CSRF_HEADER, Session, SessionStore, cookie_of

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CREDENTIAL_HEADERS = frozenset({b"authorization", b"x-vipu-user-id", b"x-vipu-access-key"})
GUARDED_PREFIXES = ("/api/", "/web/")


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def same_origin(scope: Scope) -> bool:
    """No ``Origin`` (not a cross-site browser request), or one naming the request's host."""
    origin = header(scope, b"origin")
    if origin is None:
        return True
    host = header(scope, b"host") or ""
    return urlsplit(origin).netloc == host


async def refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message, "details": []}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SessionCredentials:
    def __init__(self, app: ASGIApp, sessions: SessionStore) -> None:
        self._app = app
        self._sessions = sessions

    def session_of(self, scope: Scope) -> Session | None:
        cookie = header(scope, b"cookie")
        return self._sessions.get(cookie_of(cookie)) if cookie else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and scope["path"].startswith("/api/"):
            await self._app(self._websocket(scope), receive, send)
            return
        if scope["type"] != "http" or not scope["path"].startswith(GUARDED_PREFIXES):
            await self._app(scope, receive, send)
            return
        session = self.session_of(scope)
        headers = list(scope.get("headers", []))
        if session is None or any(k in CREDENTIAL_HEADERS for k, _ in headers):
            await self._app(scope, receive, send)
            return
        if scope["method"] not in SAFE_METHODS:
            if not same_origin(scope):
                await refuse(
                    send, 403, "PERMISSION_DENIED", "a request from another site is refused"
                )
                return
            if not session.csrf_matches(header(scope, CSRF_HEADER.encode())):
                await refuse(
                    send,
                    403,
                    "PERMISSION_DENIED",
                    "this change needs the session's token in the X-CSRF-Token header"
                    " (reload the page)",
                )
                return
        scope = dict(scope)
        scope["headers"] = headers + session.credentials.headers()
        scope.setdefault("state", {})
        scope["state"] = {**scope["state"], "web_session": session}
        await self._app(scope, receive, send)

    def _websocket(self, scope: Scope) -> Scope:
        """The scope with the session's credentials, when the page of this site asked."""
        session = self.session_of(scope)
        headers = list(scope.get("headers", []))
        if session is None or any(k in CREDENTIAL_HEADERS for k, _ in headers):
            return scope
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("csrf") or [None])[0]
        if header(scope, b"origin") is None or not same_origin(scope):
            return scope  # no credentials: the API refuses it as anonymous
        if not session.csrf_matches(token):
            return scope
        return {**scope, "headers": headers + session.credentials.headers()}
