"""Cloud tasks (what a mutating call started, and how far it got) and metering entries."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, insert, select

from vpod.domain.cloud.metering import MeterEntry
from vpod.domain.cloud.resources import TaskFacts
from vpod.domain.cloud.statuses import Operation, Phase, TaskState

from .cloud_records import TaskRecord
from .cloud_rows import one_by_id, update_by_id
from .cloud_schema import cloud_metering, cloud_tasks
from .errors import NotFound
from .filters import where_given
from .row_records import member_of, record_of, values_of


def task_not_found(task_id: str) -> NotFound:
    return NotFound(f"task {task_id} does not exist: `vpod task list` shows yours")


def _phases_out(phases: Iterable[tuple[str, datetime]]) -> list[list[str]]:
    return [[phase, at.isoformat()] for phase, at in phases]


def _phases_in(raw: Any) -> list[tuple[Phase, datetime]]:
    return [(member_of(Phase, phase), datetime.fromisoformat(at)) for phase, at in raw or []]


def _task(row: Any) -> TaskRecord:
    return record_of(
        TaskRecord,
        row,
        operation=member_of(Operation, row.operation),
        state=member_of(TaskState, row.state),
        detailed_state=member_of(Phase, row.detailed_state) if row.detailed_state else None,
        phases=_phases_in(row.phases),
        params=dict(row.params or {}),
        warnings=list(row.warnings or []),
    )


def _task_values(task: TaskFacts) -> dict[str, Any]:
    return values_of(
        task,
        phases=_phases_out(task.phases),
        warnings=list(task.warnings),
        params=task.params_json(),
    )


def insert_task(conn: Connection, task: TaskFacts) -> None:
    conn.execute(insert(cloud_tasks).values(**_task_values(task)))


def record_started(conn: Connection, task: TaskFacts, meter: Iterable[MeterEntry]) -> None:
    """Record a task that starts, with the metering entries its start writes."""
    insert_task(conn, task)
    append_meter(conn, meter)


def get_task(conn: Connection, task_id: str) -> TaskRecord:
    return _task(one_by_id(conn, cloud_tasks, task_id, task_not_found))


def list_tasks(
    conn: Connection,
    *,
    project_id: str | None = None,
    resource_id: str | None = None,
    states: Collection[str] | None = None,
    limit: int = 100,
) -> list[TaskRecord]:
    """Tasks matching every filter, newest first."""
    query = select(cloud_tasks).order_by(cloud_tasks.c.created_at.desc(), cloud_tasks.c.id.desc())
    query = where_given(
        query,
        (project_id, lambda: cloud_tasks.c.project_id == project_id),
        (resource_id, lambda: cloud_tasks.c.resource_id == resource_id),
        (states, lambda: cloud_tasks.c.state.in_(list(states or ()))),
    )
    return [_task(row) for row in conn.execute(query.limit(limit))]


def update_task(conn: Connection, task_id: str, changes: Mapping[str, Any]) -> None:
    values = dict(changes)
    if "phases" in values:
        values["phases"] = _phases_out(values["phases"])
    update_by_id(
        conn,
        cloud_tasks,
        task_id,
        values,
        plural="tasks",
        not_found=task_not_found,
    )


# -- metering ---------------------------------------------------------------------------------


def _meter_values(entry: MeterEntry) -> dict[str, Any]:
    """The entry's columns; its ``id`` is the database's to give."""
    values = values_of(entry, unit_price_per_hour=str(entry.unit_price_per_hour))
    del values["id"]
    return values


def append_meter(conn: Connection, entries: Iterable[MeterEntry]) -> None:
    rows = [_meter_values(e) for e in entries]
    if rows:
        conn.execute(insert(cloud_metering), rows)


def list_meter(
    conn: Connection,
    *,
    project_id: str | None = None,
    resource_id: str | None = None,
    before: datetime | None = None,
) -> list[MeterEntry]:
    """Metering entries in the order they were written (time, then id)."""
    query = select(cloud_metering).order_by(cloud_metering.c.time, cloud_metering.c.id)
    query = where_given(
        query,
        (project_id, lambda: cloud_metering.c.project_id == project_id),
        (resource_id, lambda: cloud_metering.c.resource_id == resource_id),
        (before, lambda: cloud_metering.c.time < before),
    )
    return [
        record_of(MeterEntry, row, unit_price_per_hour=Decimal(row.unit_price_per_hour))
        for row in conn.execute(query)
    ]
