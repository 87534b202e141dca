"""Credentials from HTTP headers, turned into a :class:`~vpod.controller.caller.Caller`.

Two equivalent ways to name the caller (the same user id and access key the
CLIs take as ``--api-user-id`` / ``--api-access-key``):

- ``X-Vipu-User-Id: alice`` and ``X-Vipu-Access-Key: KEY``;
- ``Authorization: Bearer alice:KEY`` (split at the first ``:``; access keys
  are URL-safe base64, so they hold no ``:``).

When both are sent they must name the same user. Without ``--secure`` both
are optional and everyone may do everything, as with the gRPC API. The
check itself is :meth:`vpod.controller.auth.Authenticator.caller`, shared
with the gRPC transports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from vpod.domain.naming import ID_RULE, is_valid_id

from .. import errors
from ..auth import Authenticator
from ..caller import Caller
from .rest_deps import AuthenticatorDep

USER_HEADER = "X-Vipu-User-Id"
KEY_HEADER = "X-Vipu-Access-Key"

user_header = APIKeyHeader(
    name=USER_HEADER,
    scheme_name="VipuUserId",
    description="The user id (`--api-user-id`). Needed when the controller runs with --secure.",
    auto_error=False,
)
key_header = APIKeyHeader(
    name=KEY_HEADER,
    scheme_name="VipuAccessKey",
    description="The access key (`--api-access-key`), shown once by `vipu-admin create user`.",
    auto_error=False,
)
bearer_scheme = HTTPBearer(
    scheme_name="VipuBearer",
    description="`Authorization: Bearer USER:KEY`, the same pair in one header.",
    auto_error=False,
)


def parse_credentials(
    user_id: str | None, access_key: str | None, bearer: str | None
) -> tuple[str, str]:
    """The (user id, access key) a request names; empty strings when it names none."""
    user_id = (user_id or "").strip()
    access_key = (access_key or "").strip()
    if bearer is not None:
        user_id, access_key = _merge_bearer(user_id, access_key, bearer)
    if user_id and not is_valid_id(user_id):
        # Even without --secure the id names the caller in the audit log: keep it an id.
        raise errors.Unauthenticated(f"{user_id[:40]!r} is not a user id: {ID_RULE}")
    return user_id, access_key


def _merge_bearer(user_id: str, access_key: str, bearer: str) -> tuple[str, str]:
    bearer_user, colon, bearer_key = bearer.strip().partition(":")
    if not colon or not bearer_user:
        raise errors.Unauthenticated(
            "the Authorization header must be `Bearer USER:KEY` (user id, a colon, then the"
            " access key)"
        )
    if user_id and user_id != bearer_user:
        raise errors.Unauthenticated(
            f"the {USER_HEADER} header ({user_id}) and the Authorization header ({bearer_user})"
            " name different users: send one of them"
        )
    if access_key and access_key != bearer_key:
        raise errors.Unauthenticated(
            f"the {KEY_HEADER} and Authorization headers carry different access keys:"
            " send one of them"
        )
    return bearer_user, bearer_key


def _source(request: Request) -> str:
    client = request.client
    return f"http:{client.host}:{client.port}" if client else "http:unknown"


@dataclass(frozen=True, repr=False)  # no repr: it holds an access key
class Presented:
    """The credentials a request's headers present (unchecked), and where it came from."""

    user_id: str | None
    access_key: str | None
    bearer: HTTPAuthorizationCredentials | None
    source: str

    async def caller(self, auth: Authenticator, *, admin: bool) -> Caller:
        """The authenticated caller (an administrator when ``admin``)."""
        bearer = self.bearer.credentials if self.bearer is not None else None
        who, key = parse_credentials(self.user_id, self.access_key, bearer)
        return await auth.caller(who, key, source=self.source, admin=admin)


async def presented(
    request: Request,
    user_id: str | None = Depends(user_header),
    access_key: str | None = Depends(key_header),
    bearer: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
) -> Presented:
    """What the request presents (FastAPI dependency: the headers' security schemes)."""
    return Presented(user_id, access_key, bearer, _source(request))


PresentedDep = Annotated[Presented, Depends(presented)]


async def user_caller(auth: AuthenticatorDep, credentials: PresentedDep) -> Caller:
    """The authenticated caller of a user route (FastAPI dependency)."""
    return await credentials.caller(auth, admin=False)


async def admin_caller(auth: AuthenticatorDep, credentials: PresentedDep) -> Caller:
    """The authenticated administrator of an admin route (FastAPI dependency)."""
    return await credentials.caller(auth, admin=True)


AsUser = Annotated[Caller, Depends(user_caller)]
AsAdmin = Annotated[Caller, Depends(admin_caller)]
