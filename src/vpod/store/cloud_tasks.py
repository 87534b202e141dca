"""Cloud tasks (what a mutating call started, and how far it got) and metering entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, insert, select

from .cloud_records import MeterEntry, TaskRecord
from .cloud_rows import update_by_id
from .cloud_schema import cloud_metering, cloud_tasks
from .errors import NotFound

_TASK_FIELDS = [f.name for f in dataclasses.fields(TaskRecord)]


def task_not_found(task_id: str) -> NotFound:
    return NotFound(f"task {task_id} does not exist: `vpod task list` shows yours")


def _phases_out(phases: Iterable[tuple[str, datetime]]) -> list[list[str]]:
    return [[phase, at.isoformat()] for phase, at in phases]


def _phases_in(raw: Any) -> list[tuple[str, datetime]]:
    return [(str(phase), datetime.fromisoformat(at)) for phase, at in raw or []]


def _task(row: Any) -> TaskRecord:
    values = {name: row._mapping[name] for name in _TASK_FIELDS}
    values["phases"] = _phases_in(values["phases"])
    values["params"] = dict(values["params"] or {})
    values["warnings"] = list(values["warnings"] or [])
    return TaskRecord(**values)


def _task_values(task: TaskRecord) -> dict[str, Any]:
    values = {name: getattr(task, name) for name in _TASK_FIELDS}
    values["phases"] = _phases_out(task.phases)
    values["warnings"] = list(task.warnings)
    values["params"] = dict(task.params)
    return values


def insert_task(conn: Connection, task: TaskRecord) -> None:
    conn.execute(insert(cloud_tasks).values(**_task_values(task)))


def get_task(conn: Connection, task_id: str) -> TaskRecord:
    row = conn.execute(select(cloud_tasks).where(cloud_tasks.c.id == task_id)).one_or_none()
    if row is None:
        raise task_not_found(task_id)
    return _task(row)


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
    if project_id is not None:
        query = query.where(cloud_tasks.c.project_id == project_id)
    if resource_id is not None:
        query = query.where(cloud_tasks.c.resource_id == resource_id)
    if states is not None:
        query = query.where(cloud_tasks.c.state.in_(list(states)))
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
        columns=_TASK_FIELDS,
        plural="tasks",
        not_found=task_not_found,
    )


# -- metering ---------------------------------------------------------------------------------


def append_meter(conn: Connection, entries: Iterable[MeterEntry]) -> None:
    rows = [
        {
            "time": e.time,
            "project_id": e.project_id,
            "resource_type": e.resource_type,
            "resource_id": e.resource_id,
            "resource_name": e.resource_name,
            "item": e.item,
            "quantity": e.quantity,
            "unit_price_per_hour": str(e.unit_price_per_hour),
            "billable": e.billable,
            "state": e.state,
        }
        for e in entries
    ]
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
    if project_id is not None:
        query = query.where(cloud_metering.c.project_id == project_id)
    if resource_id is not None:
        query = query.where(cloud_metering.c.resource_id == resource_id)
    if before is not None:
        query = query.where(cloud_metering.c.time < before)
    return [
        MeterEntry(
            id=int(row.id),
            time=row.time,
            project_id=row.project_id,
            resource_type=row.resource_type,
            resource_id=row.resource_id,
            resource_name=row.resource_name,
            item=row.item,
            quantity=int(row.quantity),
            unit_price_per_hour=Decimal(row.unit_price_per_hour),
            billable=bool(row.billable),
            state=row.state,
        )
        for row in conn.execute(query)
    ]
