"""Tasks: their records, phases and ends (parameters typed per operation: see convert)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ...model.metering import MeterEntry
from ...model.records import Task
from ...model.statuses import Phase, TaskState
from .base import RecordsBase
from .convert import meter_rows, row_of_task, task_of


class TaskRecords(RecordsBase):
    async def add_task(self, task: Task) -> Task:
        await self._db(self._store.add_task, row_of_task(task))
        return task

    async def get_task(self, task_id: str) -> Task:
        return task_of(await self._db(self._store.get_task, task_id))

    async def list_tasks(
        self,
        *,
        project_id: str | None = None,
        resource_id: str | None = None,
        states: Sequence[TaskState] | None = None,
        limit: int = 100,
    ) -> list[Task]:
        """Tasks matching every filter given, newest first."""
        found = await self._db(
            self._store.list_tasks,
            project_id=project_id,
            resource_id=resource_id,
            states=states,
            limit=limit,
        )
        return [task_of(t) for t in found]

    async def update_task(self, task_id: str, **changes: Any) -> Task:
        return task_of(await self._db(self._store.update_task, task_id, **changes))

    async def enter_phase(
        self, task_id: str, phase: Phase, at: datetime, *, state: TaskState
    ) -> Task:
        """Record that the task reached ``phase`` (appended to its phase history)."""
        return task_of(await self._db(self._store.enter_phase, task_id, phase, at, state=state))

    async def finish_task(
        self,
        task_id: str,
        *,
        state: TaskState,
        at: datetime,
        detailed_state: Phase | None,
        error: str = "",
        warnings: Sequence[str] = (),
        cluster_changes: Mapping[str, Any] | None = None,
        volume_changes: Mapping[str, Mapping[str, Any]] | None = None,
        meter: Iterable[MeterEntry] = (),
    ) -> Task:
        """End a task, apply its last changes and free what it claimed, in one transaction."""
        return task_of(
            await self._db(
                self._store.finish_task,
                task_id,
                state=state,
                at=at,
                detailed_state=detailed_state,
                error=error,
                warnings=warnings,
                cluster_changes=cluster_changes,
                volume_changes=volume_changes,
                meter=meter_rows(meter),
            )
        )

    async def unfinished_tasks(self) -> list[Task]:
        """Tasks NEW or RUNNING, oldest first."""
        return [task_of(t) for t in await self._db(self._store.unfinished_tasks)]

    # -- the runner's lease -------------------------------------------------------------------

    async def try_acquire_lease(self, name: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Take lease ``name`` for ``holder`` (one runner runs tasks); True if it holds it."""
        return await self._db(self._store.try_acquire_lease, name, holder, now, ttl_s)

    async def release_lease(self, name: str, holder: str) -> None:
        await self._db(self._store.release_lease, name, holder)
