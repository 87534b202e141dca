"""The audit log: append-only rows of ``events``, read newest first.

Times are given by the caller's clock. Ids grow in append order, so they
order events that share a timestamp; listing is by id, newest first.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TypedDict, Unpack

from sqlalchemy import Connection, delete, insert, select

from . import prepared
from .filters import where_given
from .records import AuditEvent
from .row_records import record_of
from .schema import events

MAX_DETAIL_CHARS = 4000
"""Longer details are cut: the log is for people, not for dumps."""


_INSERT = insert(events).returning(events.c.id)
"""Built once: SQLAlchemy reuses its compiled form (events are written on every change)."""


def append(conn: Connection, event: AuditEvent) -> AuditEvent:
    """Insert ``event`` (its detail cut to :data:`MAX_DETAIL_CHARS`); return it with its id."""
    detail = event.detail
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[: MAX_DETAIL_CHARS - 3] + "..."
    new_id = prepared.execute(
        conn,
        _INSERT,
        {
            "time": event.time,
            "actor": event.actor,
            "action": event.action,
            "target": event.target,
            "outcome": event.outcome,
            "source": event.source,
            "detail": detail,
        },
    ).scalar_one()
    return dataclasses.replace(event, detail=detail, id=int(new_id))


class EventQuery(TypedDict, total=False):
    """What :func:`list_events` is asked for: every filter is optional."""

    since: datetime | None
    """Only events at or after this time."""
    until: datetime | None
    """Only events before this time."""
    actor: str | None
    action: str | None
    target: str | None
    outcome: str | None
    before_id: int | None
    """Page further back: pass the smallest id of the previous page."""
    after_id: int | None
    """Only entries newer than that id (a follower's last seen)."""
    limit: int
    """The most events returned (100 unless given)."""


def list_events(conn: Connection, **query: Unpack[EventQuery]) -> list[AuditEvent]:
    """Events matching every filter given, newest first, at most ``limit``."""
    limit = query.get("limit", 100)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    given = query.get
    found = where_given(
        select(events).order_by(events.c.id.desc()).limit(limit),
        (given("since"), lambda: events.c.time >= given("since")),
        (given("until"), lambda: events.c.time < given("until")),
        (given("actor"), lambda: events.c.actor == given("actor")),
        (given("action"), lambda: events.c.action == given("action")),
        (given("target"), lambda: events.c.target == given("target")),
        (given("outcome"), lambda: events.c.outcome == given("outcome")),
        (given("before_id"), lambda: events.c.id < given("before_id")),
        (given("after_id"), lambda: events.c.id > given("after_id")),
    )
    return [record_of(AuditEvent, row) for row in conn.execute(found)]


def prune(conn: Connection, *, before: datetime) -> int:
    """Delete events older than ``before``; return how many went."""
    return int(conn.execute(delete(events).where(events.c.time < before)).rowcount)
