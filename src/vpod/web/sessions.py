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
the person to log in again.
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
MAX_SESSIONS = 10_000

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

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.csrf)

    def public(self) -> dict[str, Any]:
        """What the page may know: who, which console, the CSRF token (never credentials)."""
        return {"kind": self.kind, "identity": self.identity, "csrf": self.csrf}


class SessionStore:
    def __init__(
        self, *, ttl_s: float = SESSION_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def create(self, credentials: Credentials, identity: dict[str, Any]) -> Session:
        now = self._clock()
        if len(self._sessions) >= MAX_SESSIONS:
            self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
            while len(self._sessions) >= MAX_SESSIONS:  # still full: drop the oldest
                oldest = min(self._sessions.values(), key=lambda s: s.created)
                del self._sessions[oldest.id]
        session = Session(
            id=secrets.token_urlsafe(32),
            credentials=credentials,
            identity=identity,
            csrf=secrets.token_urlsafe(32),
            expires=now + self._ttl_s,
        )
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.expires <= self._clock():
            del self._sessions[session_id]
            return None
        return session

    def end(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

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
