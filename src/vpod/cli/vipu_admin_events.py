"""``vipu-admin list events``: the controller's audit log, newest first.

Times on the command line are either a moment in ISO 8601 / RFC 3339
(``2026-03-01``, ``2026-03-01T12:00:00Z``; without an offset they are UTC)
or an age: a number and a unit, ``90s``, ``30m``, ``12h``, ``7d``, meaning
that long before now. The controller filters; this module only parses and
renders (``docs/security.md`` describes the log).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict, Unpack

import click

from vpod.client import EventFilter, admin_calls
from vpod.domain.excerpts import excerpt
from vpod.domain.moments import TimeOutOfRange, utc_moment
from vpod.wire import admin_pb2 as apb

from .render import message_dict, table, timestamp_text
from .short_help import CONTEXT
from .vipu_admin_inventory import admin_client
from .vipu_group import WholeNumber, echo_json, json_option

EVENT_HEADERS = ("Time", "Actor", "Action", "Target", "Outcome", "Source", "Detail")
MAX_LIMIT = 1000
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class Moment(click.ParamType):  # type: ignore[type-arg]
    """An ISO 8601 time (UTC unless it says otherwise) or an age such as ``30m`` or ``7d``."""

    name = "TIME"

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        self._now = now or (lambda: datetime.now(UTC))

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        age = _AGE.match(text)
        if age:
            seconds = float(age[1]) * _UNIT_SECONDS[age[2].lower()]
            try:
                return self._now() - timedelta(seconds=seconds)
            except OverflowError:  # past what a timedelta or a datetime holds
                self.fail(
                    f"{excerpt(text, quote=True)} reaches back before year 1: give a shorter"
                    " age or a time (2026-03-01)",
                    param,
                    ctx,
                )
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            self.fail(
                f"{excerpt(text, quote=True)} is neither a time (2026-03-01T12:00:00Z) nor an"
                " age (30m, 12h, 7d)",
                param,
                ctx,
            )
        try:  # an offset can carry year 1 or 9999 out of what UTC (and the API) holds
            return utc_moment(parsed, "the time")
        except TimeOutOfRange as exc:
            self.fail(str(exc), param, ctx)


class EventOptions(TypedDict):
    """The filters ``list events`` takes (``since``/``until`` unset: no bound)."""

    since: datetime | None
    until: datetime | None
    actor: str
    action: str
    target: str
    outcome: str
    limit: int


def events_request(**options: Unpack[EventOptions]) -> apb.ListEventsRequest:
    """The ListEvents request for these filters (unset ones stay unset)."""
    return admin_calls.events_request(event_filter(**options))


def event_filter(**options: Unpack[EventOptions]) -> EventFilter:
    """The client's filter for these options (unset ones left out)."""
    found: EventFilter = {"actor": options["actor"], "action": options["action"]}
    found.update({"target": options["target"], "outcome": options["outcome"]})
    found["limit"] = options["limit"]
    since, until = options["since"], options["until"]
    if since is not None:
        found["since"] = since
    if until is not None:
        found["until"] = until
    return found


def event_row(event: apb.AuditEvent) -> list[object]:
    return [
        timestamp_text(event.time),
        event.actor,
        event.action,
        event.target,
        event.outcome,
        event.source,
        event.detail,
    ]


@click.command("events", context_settings=CONTEXT)
@click.option("--since", type=Moment(), help="Only events at or after TIME (or age: 2h, 7d).")
@click.option("--until", type=Moment(), help="Only events before TIME (or age).")
@click.option("--actor", default="", metavar="USER", help="Only what USER did.")
@click.option("--action", default="", metavar="ACTION", help="Only this action.")
@click.option("--target", default="", metavar="ID", help="Only changes to this target.")
@click.option("--outcome", default="", metavar="OUTCOME", help="Only this outcome.")
@click.option(
    "--limit",
    type=WholeNumber(1, MAX_LIMIT),
    default=100,
    show_default=True,
    help=f"At most N events (up to {MAX_LIMIT}), newest first.",
)
@json_option
@click.pass_context
def list_events(ctx: click.Context, as_json: bool, **options: Unpack[EventOptions]) -> None:
    """List the audit log: who changed what, when, from where and how it ended.

    Table columns: Time | Actor | Action | Target | Outcome | Source | Detail.
    Newest first. Actions include create_partition, remove_partition,
    reset_partition, create_user, create_allocation, authenticate (refused
    credentials, outcome denied) and secure_mode; outcomes include ok,
    failed, denied and detected.

    \b
    Examples:
      vipu-admin list events --since 2h
      vipu-admin list events --actor alice --action create_partition
      vipu-admin list events --outcome denied --since 2026-03-01 --json
    """
    filters = event_filter(**options)
    reply = apb.ListEventsReply(events=[e.raw for e in admin_client(ctx).list_events(**filters)])
    if as_json:
        echo_json(message_dict(reply))
        return
    click.echo(table(EVENT_HEADERS, [event_row(e) for e in reply.events]))
