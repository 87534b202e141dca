"""Who may register an agent: registration tokens, and the agent ids bound to them.

Under ``--secure`` an agent announces itself (``RegisterAgent`` on the
admin endpoint) with a registration token an administrator issued
(``vipu-admin create agent-token``), sent as gRPC metadata
``vipu-agent-token``. Without a valid token the registration is refused
(``UNAUTHENTICATED``). The first registration of an agent id with a token
binds the id to that token; a registration of the same id with another
token is refused (``PERMISSION_DENIED``), so a process holding some other
token can neither take over a known agent nor move its address. Agents an
administrator created (``vipu-admin create agent``) bind at their first
registration. Tokens are ``vat_ID.SECRET``; the store keeps only a scrypt
hash of the secret (:mod:`.credentials`), and a verified token is
remembered by a fast hash of itself, checked against the stored hash at
every use, so a removed token stops at once on every replica.

In open mode (no ``--secure``) registrations need no token; one given is
checked and binds all the same.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from dataclasses import dataclass

from vpod.store.agent_tokens import AgentTokenRecord, AgentTokenStore
from vpod.store.errors import NotFound
from vpod.wire.rest.agent_tokens import MAX_LABEL  # the API documents the bound

from . import errors
from .caller import Caller
from .context import Context
from .credentials import SecretChecks, hash_key

PREFIX = "vat_"
_TOKEN = re.compile(r"vat_([0-9a-f]{16})\.([A-Za-z0-9_-]{20,100})")
METADATA_KEY = "vipu-agent-token"
DENIAL_AUDIT_INTERVAL_S = 60.0
HOW_TO = (
    "an administrator issues one with `vipu-admin create agent-token`; give it to the agent"
    " with --token-file FILE or VIPU_AGENT_TOKEN"
)


@dataclass(frozen=True)
class IssuedToken:
    record: AgentTokenRecord
    token: str
    """``vat_ID.SECRET``: shown once."""


class AgentTokens:
    """Issue, list and remove registration tokens; admit registrations."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._store = AgentTokenStore.of(ctx.db.store)
        self._checks = SecretChecks()
        self._denials: dict[str, float] = {}

    @property
    def required(self) -> bool:
        return self._ctx.settings.secure

    async def issue(self, caller: Caller, label: str = "") -> IssuedToken:
        if len(label) > MAX_LABEL:
            raise errors.InvalidArgument(f"the label is longer than {MAX_LABEL} characters")
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        key_hash = await asyncio.to_thread(hash_key, secret)
        now = self._ctx.clock.now()
        await self._ctx.db(self._store.add, token_id, key_hash, label, now)
        await self._ctx.audit(caller, "create_agent_token", token_id, "ok", label)
        return IssuedToken(AgentTokenRecord(token_id, label, now), f"{PREFIX}{token_id}.{secret}")

    async def list(self) -> list[AgentTokenRecord]:
        return await self._ctx.db(self._store.list)

    async def remove(self, caller: Caller, token_id: str) -> None:
        try:
            await self._ctx.db(self._store.remove, token_id)
        except NotFound as exc:
            raise errors.NotFound(f"{exc}: `vipu-admin list agent-tokens` lists them") from None
        await self._ctx.audit(caller, "remove_agent_token", token_id, "ok")

    async def token_of(self, token: str) -> str | None:
        """The id of a valid token, or ``None`` (a wrong or unknown one)."""
        match = _TOKEN.fullmatch(token)
        if match is None:
            return None
        token_id, secret = match[1], match[2]
        stored = await self._ctx.db(self._store.key_hash, token_id)
        # An unknown id is refused at once: ids are 64 random bits, so the answer's timing
        # hides nothing worth hiding, and a slow check per made-up token would spend the CPU.
        if stored is None or not await self._checks.matches(secret, stored):
            return None
        return token_id

    async def admit(self, agent_id: str, token: str, *, source: str) -> str | None:
        """Check a registration's token before anything is stored; returns the token id (or
        ``None`` in open mode without one). Refusals are errors with a sentence."""
        if not token:
            if not self.required:
                return None
            await self._deny(agent_id, source, "no agent token")
            raise errors.Unauthenticated(
                f"this controller runs with --secure: agent {agent_id} must register with an"
                f" agent token: {HOW_TO}"
            )
        token_id = await self.token_of(token)
        if token_id is None:
            await self._deny(agent_id, source, "unknown or wrong agent token")
            raise errors.Unauthenticated(
                f"the agent token of {agent_id} is unknown or wrong (removed?): {HOW_TO}"
            )
        bound = await self._ctx.db(self._store.bound_token, agent_id)
        if bound is not None and bound != token_id:
            await self._deny(agent_id, source, f"bound to another token (token {token_id})")
            raise errors.PermissionDenied(
                f"agent {agent_id} is registered with another agent token: an agent id answers"
                " to the token it first registered with; remove the agent (`vipu-admin remove"
                " agent`) to register it anew"
            )
        return token_id

    async def bind(self, agent_id: str, token_id: str) -> None:
        """Bind a (now stored) agent to the token it registered with, if it is not bound yet;
        PermissionDenied when another registration bound it meanwhile."""
        bound = await self._ctx.db(self._store.bind, agent_id, token_id, self._ctx.clock.now())
        if bound is not None and bound != token_id:
            raise errors.PermissionDenied(
                f"agent {agent_id} is registered with another agent token"
            )

    async def registered(
        self, agent_id: str, token_id: str | None, message: str, *, source: str
    ) -> None:
        """After the registration is stored: bind the agent to its token (PermissionDenied
        when another registration bound it meanwhile) and audit it."""
        if token_id is not None:
            await self.bind(agent_id, token_id)
        detail = message if token_id is None else f"{message} (agent token {token_id})"
        who = Caller(user_id="agent", source=source)
        await self._ctx.audit(who, "register_agent", agent_id, "ok", detail)

    async def _deny(self, agent_id: str, source: str, why: str) -> None:
        """Audit a refused registration, at most once a minute per peer host."""
        host = source.rsplit(":", 1)[0]
        now = self._ctx.clock.monotonic()
        last = self._denials.get(host)
        if last is not None and now - last < DENIAL_AUDIT_INTERVAL_S:
            return
        if len(self._denials) > 10_000:
            self._denials.clear()
        self._denials[host] = now
        who = Caller(user_id="agent", source=source)
        await self._ctx.audit(who, "register_agent", agent_id[:64], "denied", why)


__all__ = ["METADATA_KEY", "AgentTokenRecord", "AgentTokens", "IssuedToken"]
