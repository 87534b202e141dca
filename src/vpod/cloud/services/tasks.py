"""Reading tasks (a project sees only its own), and making the record of a new one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..model import errors
from ..model.records import Cluster, Task, Volume
from ..model.task_params import TaskParams
from ..states import Operation, Phase, TaskState
from .context import CloudContext
from .projects import Principal

MAX_WAIT_S = 600.0


def new_task(
    ctx: CloudContext,
    operation: Operation,
    resource: Cluster | Volume,
    params: TaskParams | None = None,
    *,
    state: TaskState = TaskState.NEW,
) -> Task:
    """The record of a new task of ``operation`` on ``resource`` (in its project), made now."""
    now = ctx.clock.now()
    return Task(
        id=ctx.ids.new("task"),
        project_id=resource.project_id,
        operation=operation,
        resource_type="cluster" if isinstance(resource, Cluster) else "volume",
        resource_id=resource.id,
        resource_name=resource.name,
        state=state,
        created_at=now,
        updated_at=now,
        params=params or TaskParams(),
        finished_at=now if state.done else None,
        detailed_state=Phase.FINISHED if state is TaskState.FINISHED else None,
    )


Waiter = Callable[[str, float | None], Awaitable[Task]]


class Tasks:
    def __init__(self, ctx: CloudContext, wait: Waiter) -> None:
        self._ctx = ctx
        self._wait = wait

    async def get(self, principal: Principal, task_id: str) -> Task:
        project_id = principal.project()
        try:
            task = await self._ctx.records.get_task(task_id)
        except errors.NotFound:
            task = None
        if task is None or task.project_id != project_id:
            raise errors.NotFound(f"task {task_id} does not exist: `vpod task list` shows yours")
        return task

    async def list_tasks(
        self,
        principal: Principal,
        *,
        resource_id: str | None = None,
        state: str | None = None,
        limit: int = 50,
    ) -> list[Task]:
        if state is not None and state not in {s.value for s in TaskState}:
            raise errors.InvalidArgument(
                f"task state {state!r} is not known: use {', '.join(s.value for s in TaskState)}"
            )
        return await self._ctx.records.list_tasks(
            project_id=principal.project(),
            resource_id=resource_id,
            states=[TaskState(state)] if state else None,
            limit=max(1, min(limit, 500)),
        )

    async def wait(self, principal: Principal, task_id: str, timeout_s: float) -> Task:
        """The task once ended, or as it is when ``timeout_s`` runs out."""
        task = await self.get(principal, task_id)
        if task.state.done or timeout_s <= 0:
            return task
        try:
            return await self._wait(task_id, min(timeout_s, MAX_WAIT_S))
        except TimeoutError:
            return await self.get(principal, task_id)
        except asyncio.CancelledError:
            raise
