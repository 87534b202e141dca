"""Projects (tenants), quotas and API tokens; who is calling.

A token reads ``vpod_<id>.<secret>``: the id finds the stored record, the
secret is checked against its slow salted hash (the controller's
``credentials``: scrypt, off the event loop). The record is read on every
call, so a token revoked, or its project deleted, through any replica is
refused at the next call on every replica; what is remembered (by a fast
hash of the token, never the token) is only which stored hash the token
already matched, so a busy client does not pay scrypt on every call. An
administrator's token belongs to no project; it manages projects, quotas,
tokens and hosts. A project's token sees that project only.

The first administrator token is made when the cloud first starts on a
database that has none, and written to ``DATA_DIR/cloud-admin.token``
(mode 0600): the operator's starting point, as ``vpod up`` uses it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from vpod.controller.credentials import SecretChecks, hash_key
from vpod.domain.naming import ID_RULE, is_valid_id

from ..drivers.workspace import write_private
from ..model import errors
from ..model.tenants import Project, Token
from ..quotas import check_quota_names, with_defaults
from .context import CloudContext

TOKEN_PREFIX = "vpod_"

T = TypeVar("T")


@dataclass(frozen=True)
class Principal:
    """An authenticated caller of the cloud API."""

    token_id: str
    project_id: str | None
    """None for an administrator."""

    @property
    def admin(self) -> bool:
        return self.project_id is None

    def project(self) -> str:
        """The caller's project; PermissionDenied for an administrator's token."""
        if self.project_id is None:
            raise errors.PermissionDenied(
                "this is an administrator's token: project endpoints take a project's token"
                " (`POST /api/cloud/v1/admin/projects/{id}/tokens` makes one)"
            )
        return self.project_id


def in_project(
    found: T | None, what: str, ref: str, project_id: str, lists_them: str, hint: str = ""
) -> T:
    """``found``, the project's resource named by ``ref`` (id or name), else NotFound saying
    so (with at most 70 characters of ``ref``), the command that lists the project's own
    (``lists_them``) and ``hint``. Another project's resource is not found either: a project
    never learns it exists."""
    if found is None:
        raise errors.NotFound(
            f"{what} {ref[:70]} does not exist in project {project_id}: `{lists_them}` shows"
            f" yours{hint}"
        )
    return found


async def find_own(
    principal: Principal,
    find: Callable[[str, str], Awaitable[T | None]],
    ref: str,
    what: str,
    lists_them: str,
) -> T:
    """The caller's project's resource named by ``ref``, looked up by ``find(project_id,
    ref)``; NotFound otherwise (:func:`in_project`)."""
    project_id = principal.project()
    return in_project(await find(project_id, ref), what, ref, project_id, lists_them)


@dataclass(frozen=True)
class NewToken:
    record: Token
    token: str
    """Shown once; only the hash of its secret is stored."""


def split_token(token: str) -> tuple[str, str]:
    body = token.strip().removeprefix(TOKEN_PREFIX)
    token_id, dot, secret = body.partition(".")
    if not token.strip().startswith(TOKEN_PREFIX) or not dot or not token_id or not secret:
        raise errors.Unauthenticated(
            "that is not a vpod cloud token (vpod_ID.SECRET): check VPOD_TOKEN or --token"
        )
    return token_id, secret


class Projects:
    def __init__(self, ctx: CloudContext) -> None:
        self._ctx = ctx
        self._checks = SecretChecks()

    # -- authentication -----------------------------------------------------------------------

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise errors.Unauthenticated(
                "the cloud API needs a token: send `Authorization: Bearer vpod_...`"
                " (the vpod CLI reads --token, VPOD_TOKEN or its config file)"
            )
        token_id, secret = split_token(token)
        record = await self._ctx.records.find_token(token_id)
        # An unknown id is refused at once: token ids are 64 random bits, so the time of
        # the answer tells nothing worth hiding, and a slow check would let anyone spend
        # the controller's CPU with made-up tokens.
        if record is None or not await self._checks.matches(secret, record.key_hash):
            raise _unknown_token()
        return Principal(token_id=record.id, project_id=record.project_id)

    @staticmethod
    def require_admin(principal: Principal) -> None:
        if not principal.admin:
            raise errors.PermissionDenied(
                "only an administrator's token may do this: yours belongs to project"
                f" {principal.project_id}"
            )

    # -- tokens ---------------------------------------------------------------------------------

    async def _new_token(self, project_id: str | None, label: str) -> NewToken:
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        record = Token(
            id=token_id,
            project_id=project_id,
            key_hash=await asyncio.to_thread(hash_key, secret),
            label=label[:255],
            created_at=self._ctx.clock.now(),
        )
        return NewToken(record=record, token=f"{TOKEN_PREFIX}{token_id}.{secret}")

    async def issue_token(self, project_id: str | None, label: str = "") -> NewToken:
        new = await self._new_token(project_id, label)
        await self._ctx.records.add_token(new.record)
        return new

    async def revoke_token(self, token_id: str) -> None:
        await self._ctx.records.remove_token(token_id)

    async def list_tokens(self, project_id: str | None) -> list[Token]:
        if project_id is not None:
            await self.get(project_id)
        return await self._ctx.records.list_tokens(project_id=project_id, admin=project_id is None)

    async def ensure_admin_token(self, path: Path) -> str | None:
        """Make the first administrator token if there is none; write it to ``path``."""
        if await self._ctx.records.list_tokens(admin=True):
            return None
        new = await self.issue_token(None, "first administrator token")
        write_private(path, new.token + "\n")
        return new.token

    # -- projects -------------------------------------------------------------------------------

    async def create(
        self, project_id: str, name: str = "", quotas: Mapping[str, int] | None = None
    ) -> tuple[Project, NewToken]:
        if not is_valid_id(project_id):
            raise errors.InvalidArgument(f"project id {project_id[:70]!r} is not valid: {ID_RULE}")
        project = Project(
            id=project_id,
            name=name or project_id,
            quotas=with_defaults(check_quota_names(quotas or {})),
            created_at=self._ctx.clock.now(),
        )
        token = await self._new_token(project_id, "first token")
        await self._ctx.records.add_project(project, token.record)
        return project, token

    async def get(self, project_id: str) -> Project:
        return await self._ctx.records.get_project(project_id)

    async def list_projects(self) -> list[Project]:
        return await self._ctx.records.list_projects()

    async def set_quotas(self, project_id: str, quotas: Mapping[str, int]) -> Project:
        current = await self.get(project_id)
        merged = {**current.quotas, **check_quota_names(quotas)}
        return await self._ctx.records.set_quotas(project_id, with_defaults(merged))

    async def remove(self, project_id: str) -> None:
        await self._ctx.records.remove_project(project_id, self._ctx.clock.now())

    async def usage(self, project_id: str) -> dict[str, int]:
        return await self._ctx.records.project_usage(project_id)


def _unknown_token() -> errors.Unauthenticated:
    return errors.Unauthenticated("unknown or revoked token: ask your administrator for a new one")
