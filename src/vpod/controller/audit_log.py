"""Reading the audit log: filters checked once, for every transport; admins only.

Every change the controller makes is appended by :meth:`.context.Context.audit`
(who, what, which target, outcome, from where, when); refused credentials are
appended by :class:`.auth.Authenticator`. This use-case lists them, newest
first; the store applies every filter.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from vpod.domain.moments import TimeOutOfRange, optional_utc
from vpod.store.records import AuditEvent

from . import errors
from .caller import Caller
from .context import Context

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_FILTER_CHARS = 200
MAX_EVENT_ID = 2**63 - 1
"""Ids are SQL BIGINTs: a larger ``before_id`` could never match anything."""


@dataclass(frozen=True)
class EventFilter:
    """Which events to list: every field given must match (empty strings match all)."""

    since: datetime | None = None
    """Inclusive."""
    until: datetime | None = None
    """Exclusive."""
    actor: str = ""
    action: str = ""
    target: str = ""
    outcome: str = ""
    limit: int = DEFAULT_LIMIT
    before_id: int | None = None
    """Page back: only events older than this id (the smallest id of the previous page)."""

    def checked(self) -> EventFilter:
        """This filter with naive times read as UTC; InvalidArgument when it cannot match sense."""
        if not 1 <= self.limit <= MAX_LIMIT:
            raise errors.InvalidArgument(
                f"limit must be between 1 and {MAX_LIMIT}, not {self.limit}: page further back"
                " with before_id"
            )
        for name in ("actor", "action", "target", "outcome"):
            if len(getattr(self, name)) > _FILTER_CHARS:
                raise errors.InvalidArgument(
                    f"the {name} filter is longer than {_FILTER_CHARS} characters"
                )
        try:
            since, until = optional_utc(self.since, "since"), optional_utc(self.until, "until")
        except TimeOutOfRange as exc:
            raise errors.InvalidArgument(str(exc)) from None
        if since is not None and until is not None and since >= until:
            raise errors.InvalidArgument(
                f"since ({since.isoformat()}) must be before until ({until.isoformat()})"
            )
        if self.before_id is not None and not 1 <= self.before_id <= MAX_EVENT_ID:
            raise errors.InvalidArgument(
                f"before_id must be between 1 and {MAX_EVENT_ID}, not {self.before_id}"
            )
        return replace(self, since=since, until=until)


class AuditLog:
    """The audit log's read side (writing is :meth:`Context.audit`)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def list_events(self, caller: Caller, wanted: EventFilter) -> list[AuditEvent]:
        """Events matching ``wanted``, newest first; PermissionDenied unless ``caller`` is admin."""
        if not caller.admin:
            raise errors.PermissionDenied(
                f"user {caller.user_id} is not an administrator: only admins may read the audit log"
            )
        wanted = wanted.checked()
        return await self._ctx.db(
            self._ctx.db.store.list_events,
            since=wanted.since,
            until=wanted.until,
            actor=wanted.actor or None,
            action=wanted.action or None,
            target=wanted.target or None,
            outcome=wanted.outcome or None,
            before_id=wanted.before_id,
            limit=wanted.limit,
        )
