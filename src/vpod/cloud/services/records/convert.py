"""A task's row to the cloud's task: the one value the store reads back otherwise than the
cloud speaks of it.

Every other record is one value type of :mod:`vpod.domain.cloud` that the store reads
and writes as it is. A task's parameters are typed one kind per operation
(:mod:`vpod.cloud.model.task_params`); the store writes them as the JSON object
:meth:`~vpod.cloud.model.task_params.TaskParams.to_json` makes, and reads back that
object: it is validated here.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pydantic import TypeAdapter, ValidationError

from vpod.store.cloud_records import TaskRecord

from ...model import errors
from ...model.records import Task, TaskFacts
from ...model.statuses import Operation
from ...model.task_params import TaskParams, params_kind

_ADAPTERS: dict[type[TaskParams], TypeAdapter[TaskParams]] = {}

_FACTS = tuple(f.name for f in fields(TaskFacts))
"""What a task row and a task hold alike."""


def _adapter(kind: type[TaskParams]) -> TypeAdapter[TaskParams]:
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    return _ADAPTERS[kind]


def params_of(task_id: str, operation: Operation, raw: dict[str, Any]) -> TaskParams:
    """A row's parameters as the operation's kind; keys older versions did not write take
    their defaults, keys this version does not know are left out."""
    try:
        return _adapter(params_kind(operation)).validate_python(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'parameters'}: {e['msg']}"
            for e in exc.errors()
        )
        raise errors.FailedPrecondition(
            f"task {task_id} ({operation}) holds parameters this version cannot read"
            f" ({problems}): the database was written by an incompatible version"
        ) from None


def _facts(task: TaskFacts) -> dict[str, Any]:
    return {name: getattr(task, name) for name in _FACTS}


def task_of(record: TaskRecord) -> Task:
    return Task(**_facts(record), params=params_of(record.id, record.operation, record.params))


def tasks_of(records: list[TaskRecord]) -> list[Task]:
    return [task_of(r) for r in records]
