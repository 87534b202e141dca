"""Who is calling: credentials to a :class:`Caller`, shared by every transport.

Open mode (no ``--secure``): everyone is the anonymous caller, who sees every
allocation, and the admin endpoint is open, as the spec describes V-IPU
without security. Secure mode: every call names a user id and access key;
the key is checked against its slow salted hash, and a verified pair is
remembered for a short while (keyed by a fast hash of the key, never the
key itself) so that a busy client does not pay scrypt on every call.

What is remembered never outlives a change: every call reads the user's key
hash and access version (one primary-key read), which the store bumps with
every change to what the user may do (a new key, the admin flag, a grant, a
revoke, a removed allocation; ``vpod.store.access_versions``). A removed
user, or a change made by this replica or any other sharing the store, is
seen at the next call; a changed version costs one more read, never scrypt.

The scrypt check runs in a worker thread: it takes tens of milliseconds and
would otherwise stall every other call on the event loop. An unknown user id
costs the same check as a wrong key, so timing does not reveal which ids
exist.

A user id that is no user's may be a partition key's (:mod:`.partition_keys`):
its caller sees one partition and nothing else, and never the admin endpoint.
Its key is checked against a SHA-256 hash at every call (one primary-key
read): the key is 256 random bits, so a slow hash would add nothing but
time to every job that starts.

Refusals (no credentials, a wrong key, a user on the admin endpoint) go to
the audit log as ``authenticate`` events with outcome ``denied``, at most
one per claimed user, endpoint and peer host per :data:`DENIAL_AUDIT_INTERVAL_S`,
so a misconfigured client retrying in a loop cannot flood the store.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from vpod.domain.entities import User
from vpod.domain.naming import ID_RULE, is_valid_id

from . import errors
from .caller import ANONYMOUS, Caller
from .context import Context
from .credentials import SecretChecks
from .partition_keys import PartitionKeyBook

VERIFIED_TTL_S = 30.0
DENIAL_AUDIT_INTERVAL_S = 60.0
MAX_KEY_CHARS = 256
"""Longer than any key :func:`~.credentials.new_access_key` makes: refused before hashing."""
_MAX_REMEMBERED_DENIALS = 1024

WRONG_CREDENTIALS = "unknown user id or wrong access key: check api-user-id and api-access-key"


class Authenticator:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._partition_keys = PartitionKeyBook(ctx)
        self._checks = SecretChecks()
        self._verified: dict[tuple[str, str], _Verified] = {}
        """(user id, sha256 of the key) -> what was verified, and when."""
        self._denials: dict[tuple[str, bool, str], float] = {}

    @property
    def secure(self) -> bool:
        return self._ctx.settings.secure

    async def caller(self, user_id: str, access_key: str, *, source: str, admin: bool) -> Caller:
        if user_id and not is_valid_id(user_id):
            raise errors.Unauthenticated(f"user id {user_id[:64]!r} is not valid: {ID_RULE}")
        if not self.secure:
            who = user_id or ANONYMOUS.user_id
            return Caller(user_id=who, admin=admin, allocation_ids=None, source=source)
        if not user_id or not access_key:
            await self._deny(user_id, source, admin, "no credentials")
            raise errors.Unauthenticated(
                "this controller runs with --secure: give --api-user-id and --api-access-key"
                " (or api-user-id/api-access-key in vipu-cli.hcl)"
            )
        user = await self._check(user_id, access_key)
        if isinstance(user, Caller):
            if admin:
                await self._deny(user_id, source, admin, "a partition key")
                raise errors.PermissionDenied(
                    f"{user_id} is a partition key: the admin endpoint is for admins only"
                )
            return dataclasses.replace(user, source=source)
        if user is None:
            await self._deny(user_id, source, admin, "unknown user id or wrong access key")
            raise errors.Unauthenticated(WRONG_CREDENTIALS)
        if admin and not user.admin:
            await self._deny(user_id, source, admin, "not an administrator")
            raise errors.PermissionDenied(
                f"user {user_id} is not an administrator: the admin endpoint is for admins only"
            )
        allocations = None if user.admin else frozenset(user.allocation_ids)
        return Caller(user_id=user.id, admin=user.admin, allocation_ids=allocations, source=source)

    async def _check(self, user_id: str, access_key: str) -> User | Caller | None:
        """The user whose id and key these are, the caller of a partition key, or None."""
        if len(access_key) > MAX_KEY_CHARS:
            return None
        token = (user_id, hashlib.sha256(access_key.encode()).hexdigest())
        now = self._ctx.clock.monotonic()
        cached = self._verified.get(token)
        if cached is not None and now - cached.at < VERIFIED_TTL_S:
            access = await self._ctx.db(self._ctx.db.store.user_access, user_id)
            if access == (cached.key_hash, cached.version):
                return cached.user
            if access is not None and access[0] == cached.key_hash:
                # Same key, other grants: read the user again, no need to hash the key.
                fresh = await self._ctx.db(self._ctx.db.store.find_user_with_access, user_id)
                if fresh is not None and fresh[1] == cached.key_hash:
                    self._verified[token] = _Verified(cached.at, *fresh)
                    return fresh[0]
            del self._verified[token]
        found = await self._ctx.db(self._ctx.db.store.find_user_with_access, user_id)
        if found is None:
            scoped = await self._partition_keys.caller(user_id, access_key)
            if scoped is not None:
                return scoped
            await self._checks.unknown(access_key)
            return None
        user, key_hash, version = found
        if not await self._checks.matches(access_key, key_hash):
            return None
        self._verified[token] = _Verified(now, user, key_hash, version)
        return user

    async def _deny(self, user_id: str, source: str, admin: bool, why: str) -> None:
        """Record a refusal in the audit log, unless the same one was recorded just now."""
        now = self._ctx.clock.monotonic()
        key = (user_id, admin, _host_of(source))
        last = self._denials.get(key)
        if last is not None and now - last < DENIAL_AUDIT_INTERVAL_S:
            return
        if len(self._denials) >= _MAX_REMEMBERED_DENIALS:
            self._denials = {
                k: t for k, t in self._denials.items() if now - t < DENIAL_AUDIT_INTERVAL_S
            }
        self._denials[key] = now
        who = Caller(user_id=user_id or ANONYMOUS.user_id, source=source)
        endpoint = "admin endpoint" if admin else "user endpoint"
        await self._ctx.audit(who, "authenticate", endpoint, "denied", why)

    def forget(self, user_id: str) -> None:
        """Drop remembered verifications of a user (after removal or a grant change).

        Not needed for correctness (the access version is checked at every call): it only
        frees what cannot be used again."""
        for token in [t for t in self._verified if t[0] == user_id]:
            del self._verified[token]


@dataclass(frozen=True)
class _Verified:
    at: float
    """When the key was checked against its hash (monotonic)."""
    user: User
    key_hash: str
    """The stored hash the key matched."""
    version: int
    """The user's access version when ``user`` was read."""


def _host_of(source: str) -> str:
    """``grpc:ipv4:10.0.0.5:51234`` -> ``grpc:ipv4:10.0.0.5``: one peer, whatever its port."""
    head = source.split(" ", 1)[0]
    return head.rsplit(":", 1)[0] if ":" in head else head
