"""The audit log: append-only rows of ``events``, read newest first.

Times are given by the caller's clock. Ids grow in append order, so they
order events that share a timestamp; listing is by id, newest first.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from sqlalchemy import Connection, delete, insert, select

from . import prepared
from .records import AuditEvent
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


def list_events(
    conn: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    actor: str | None = None,
    action: str | None = None,
    target: str | None = None,
    outcome: str | None = None,
    before_id: int | None = None,
    after_id: int | None = None,
    limit: int = 100,
) -> list[AuditEvent]:
    """Events matching every filter given, newest first, at most ``limit``.

    ``since`` is inclusive, ``until`` exclusive; ``before_id`` pages further
    back (pass the smallest id of the previous page); ``after_id`` keeps only
    entries newer than that id (a follower's last seen).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    query = select(events).order_by(events.c.id.desc()).limit(limit)
    if since is not None:
        query = query.where(events.c.time >= since)
    if until is not None:
        query = query.where(events.c.time < until)
    if actor is not None:
        query = query.where(events.c.actor == actor)
    if action is not None:
        query = query.where(events.c.action == action)
    if target is not None:
        query = query.where(events.c.target == target)
    if outcome is not None:
        query = query.where(events.c.outcome == outcome)
    if before_id is not None:
        query = query.where(events.c.id < before_id)
    if after_id is not None:
        query = query.where(events.c.id > after_id)
    return [
        AuditEvent(
            time=row.time,
            actor=row.actor,
            action=row.action,
            target=row.target,
            outcome=row.outcome,
            source=row.source,
            detail=row.detail,
            id=row.id,
        )
        for row in conn.execute(query)
    ]


def prune(conn: Connection, *, before: datetime) -> int:
    """Delete events older than ``before``; return how many went."""
    return int(conn.execute(delete(events).where(events.c.time < before)).rowcount)
