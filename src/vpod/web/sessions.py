"""Browser sessions: a cookie stands for the credentials the person logged in with.

The console logs in with the credentials the APIs take (a V-IPU user id and
access key, or a cloud project token). They are checked once, against the
API itself, and kept in this process's memory under a random session id;
the browser only holds that id, in a cookie that is ``HttpOnly`` (scripts
cannot read it), ``SameSite=Strict`` (other sites' pages do not send it) and
``Secure`` when served over TLS.

Every API request that carries the cookie (and no credentials of its own)
is passed on with the session's credentials in the headers the API reads
(:mod:`.middleware`), so the API decides what the person may see and do,
exactly as it would for a script holding the same credentials; a revoked key
or token stops working in the browser at once.

State-changing requests must also carry the session's CSRF token in
``X-CSRF-Token`` (the page reads it from ``GET /web/session``, which another
site cannot read), and a cross-site ``Origin`` is refused.

Sessions live in memory: a restarted controller, or another replica, asks
the person to log in again. Each principal (a V-IPU user, a cloud project,
the open-mode operator) holds at most :data:`MAX_SESSIONS_PER_PRINCIPAL`;
a new login past that ends the same principal's oldest session, never anyone
else's, so one tenant logging in again and again cannot log others out.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

COOKIE = "vpod_session"
CSRF_HEADER = "x-csrf-token"
SESSION_TTL_S = 12 * 3600.0
MAX_SESSIONS_PER_PRINCIPAL = 32
"""Browsers (or tabs with their own cookie jar) one principal may be logged in from."""
SWEEP_EVERY = 1024
"""Logins between two sweeps of every expired session (each principal's own are swept at its
every login)."""

Kind = Literal["vipu", "cloud"]


@dataclass(frozen=True)
class Credentials:
    """What the person logged in with; never sent back to the browser."""

    kind: Kind
    user_id: str = ""
    access_key: str = ""
    token: str = ""

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The API headers that carry these credentials."""
        if self.kind == "cloud":
            return [(b"authorization", f"Bearer {self.token}".encode())]
        if not self.user_id:
            return []  # open mode: no credentials at all
        return [
            (b"x-vipu-user-id", self.user_id.encode()),
            (b"x-vipu-access-key", self.access_key.encode()),
        ]


@dataclass
class Session:
    id: str
    credentials: Credentials
    identity: dict[str, Any]
    """What the API said about the person at login (whoami, or the cloud project)."""
    csrf: str
    expires: float
    created: float = field(default_factory=time.monotonic)

    @property
    def kind(self) -> Kind:
        return self.credentials.kind

    @property
    def principal(self) -> str:
        return principal_of(self.credentials, self.identity)

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.csrf)

    def public(self) -> dict[str, Any]:
        """What the page may know: who, which console, the CSRF token (never credentials)."""
        return {"kind": self.kind, "identity": self.identity, "csrf": self.csrf}


def principal_of(credentials: Credentials, identity: dict[str, Any]) -> str:
    """Who a session is for: the cloud project, the V-IPU user, or the open-mode operator."""
    if credentials.kind == "cloud":
        return f"cloud:{identity.get('project_id', '')}"
    return f"vipu:{credentials.user_id}" if credentials.user_id else "open"


class SessionStore:
    def __init__(
        self,
        *,
        ttl_s: float = SESSION_TTL_S,
        per_principal: int = MAX_SESSIONS_PER_PRINCIPAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = ttl_s
        self._per_principal = per_principal
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._by_principal: dict[str, dict[str, Session]] = {}
        self._created = 0

    def create(self, credentials: Credentials, identity: dict[str, Any]) -> Session:
        now = self._clock()
        session = Session(
            id=secrets.token_urlsafe(32),
            credentials=credentials,
            identity=identity,
            csrf=secrets.token_urlsafe(32),
            expires=now + self._ttl_s,
            created=now,
        )
        self._created += 1
        if self._created % SWEEP_EVERY == 0:  # everyone's expired sessions, now and then
            for old in [s for s in self._sessions.values() if s.expires <= now]:
                self.end(old.id)
        own = self._by_principal.setdefault(session.principal, {})
        for old in [s for s in own.values() if s.expires <= now]:
            self.end(old.id)
        while len(own) >= self._per_principal:  # the principal's own oldest session goes
            self.end(min(own.values(), key=lambda s: s.created).id)
        self._sessions[session.id] = session
        self._by_principal.setdefault(session.principal, {})[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.expires <= self._clock():
            self.end(session_id)
            return None
        return session

    def end(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        own = self._by_principal.get(session.principal, {})
        own.pop(session_id, None)
        if not own:
            self._by_principal.pop(session.principal, None)

    def of_principal(self, principal: str) -> int:
        """How many sessions ``principal`` holds now."""
        return len(self._by_principal.get(principal, {}))

    def __len__(self) -> int:
        return len(self._sessions)


def cookie_value(session: Session | None, *, secure: bool, ttl_s: float = SESSION_TTL_S) -> str:
    """A ``Set-Cookie`` value setting (or, for None, clearing) the session cookie."""
    value, age = (session.id, int(ttl_s)) if session is not None else ("", 0)
    parts = [f"{COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict", f"Max-Age={age}"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


def cookie_of(cookie_header: str) -> str | None:
    """The session id in a ``Cookie`` header, if any."""
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None
