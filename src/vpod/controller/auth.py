"""Who is calling: credentials to a :class:`Caller`, shared by every transport.

Open mode (no ``--secure``): everyone is the anonymous caller, who sees every
allocation, and the admin endpoint is open, as the spec describes V-IPU
without security. Secure mode: every call names a user id and access key;
the key is checked against its slow salted hash, and a verified pair is
remembered for a short while (keyed by a fast hash of the key, never the
key itself) so that a busy client does not pay scrypt on every call.
"""

from __future__ import annotations

import hashlib

from vpod.domain.entities import User
from vpod.domain.naming import ID_RULE, is_valid_id

from . import errors
from .caller import ANONYMOUS, Caller
from .context import Context
from .credentials import verify_key

VERIFIED_TTL_S = 30.0


class Authenticator:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._verified: dict[tuple[str, str], tuple[float, User]] = {}

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
            raise errors.Unauthenticated(
                "this controller runs with --secure: give --api-user-id and --api-access-key"
                " (or api-user-id/api-access-key in vipu-cli.hcl)"
            )
        user = await self._check(user_id, access_key)
        if admin and not user.admin:
            raise errors.PermissionDenied(
                f"user {user_id} is not an administrator: the admin endpoint is for admins only"
            )
        allocations = None if user.admin else frozenset(user.allocation_ids)
        return Caller(user_id=user.id, admin=user.admin, allocation_ids=allocations, source=source)

    async def _check(self, user_id: str, access_key: str) -> User:
        token = (user_id, hashlib.sha256(access_key.encode()).hexdigest())
        now = self._ctx.clock.monotonic()
        cached = self._verified.get(token)
        if cached is not None and now - cached[0] < VERIFIED_TTL_S:
            return cached[1]
        found = await self._ctx.db(self._ctx.db.store.find_user_with_hash, user_id)
        denied = errors.Unauthenticated(
            "unknown user id or wrong access key: check api-user-id and api-access-key"
        )
        if found is None:
            raise denied
        user, key_hash = found
        if not verify_key(access_key, key_hash):
            raise denied
        self._verified[token] = (now, user)
        return user

    def forget(self, user_id: str) -> None:
        """Drop remembered verifications of a user (after removal or a grant change)."""
        for token in [t for t in self._verified if t[0] == user_id]:
            del self._verified[token]
