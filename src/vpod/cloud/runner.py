"""The task runner: runs every NEW or RUNNING task to its end, across controller restarts.

A mutating call records its task (NEW) in the same transaction that claims
the cluster or volume, then hands it to the runner. The runner runs it as a
:class:`Job`: the operation's ``run`` walks its phases, each recorded in the
store as it is entered (``detailed_state`` and the phase history). The task
ends FINISHED with the operation's final changes, or, when ``run`` raises,
the operation's ``fail`` brings the resources to a defined state (rolls a
creation back, keeps a failed resume SUSPENDED) and the task ends ERROR with
the sentence of what went wrong.

Temporary failures (:func:`.model.errors.is_temporary`: the database or the
controller unreachable, a lost race, a back end that may answer later) are
retried first: the task enters the RETRY phase (so the phases record every
attempt, and the count survives a restart), waits ``task_retry_s``, doubled
after each attempt up to :data:`MAX_BACKOFF_S`, and runs the operation
again from the start, at most ``task_attempts`` times in all. Permanent
failures, and a temporary one on the last attempt, roll back at once.

Restarts: a task is only ever RUNNING in the store while a runner works on
it. When the controller stops (or dies) mid-task, the task stays RUNNING;
the next runner to start finds it and runs the operation again from the
beginning. Operations are written so that running them twice is harmless:
every step checks what exists before doing anything (see ``operations/``).

Several controller replicas: only the holder of the ``cloud-tasks`` lease
runs tasks; the others record theirs (NEW) and the holder picks them up
within ``task_poll_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from .model import errors
from .model.errors import CloudError, is_temporary
from .model.metering import MeterEntry
from .model.records import Cluster, Task
from .model.results import ClusterChange, VolumeChange, volume_fields
from .model.task_params import TaskParams
from .services.context import CloudContext
from .states import ClusterStatus, Phase, TaskState, VolumeStatus

log = logging.getLogger("vpod.cloud.tasks")

LEASE = "cloud-tasks"
MAX_BACKOFF_S = 30.0
"""The longest wait between two attempts of a task, however many came before."""
INTERNAL = "internal error while running task {task}: see the controller log; the cluster was"

P = TypeVar("P", bound=TaskParams)


@dataclass
class Outcome:
    """What a finished (or rolled back) operation leaves behind, applied with the task's end."""

    cluster: ClusterChange | None = None
    volumes: dict[str, VolumeChange] = field(default_factory=dict)
    """By volume id."""
    meter: list[MeterEntry] = field(default_factory=list)


class Job:
    """A task being run: its record, its context, and how it reports progress."""

    def __init__(self, ctx: CloudContext, task: Task) -> None:
        self.ctx = ctx
        self.task = task
        self.secrets: dict[str, str] = {}
        """Values that must never reach the store (a new V-IPU access key)."""
        self.warnings: list[str] = []

    @property
    def now(self) -> datetime:
        return self.ctx.clock.now()

    @property
    def params(self) -> TaskParams:
        """What the task was asked to do (its operation's kind of parameters)."""
        return self.task.params

    def params_as(self, kind: type[P]) -> P:
        """The parameters as ``kind``, the one the operation records (see ``PARAMS_OF``)."""
        params = self.task.params
        if not isinstance(params, kind):
            raise errors.FailedPrecondition(
                f"task {self.task.id} ({self.task.operation}) holds {type(params).__name__},"
                f" not {kind.__name__}: it was recorded by another version"
            )
        return params

    async def begin(self) -> None:
        if self.task.state != TaskState.RUNNING:
            self.task = await self.ctx.records.update_task(
                self.task.id,
                state=TaskState.RUNNING,
                updated_at=self.now,
            )

    async def phase(self, phase: Phase) -> None:
        """Enter ``phase``: the task's ``detailed_state`` shows it from now on."""
        self.task = await self.ctx.records.enter_phase(
            self.task.id,
            phase,
            self.now,
            state=TaskState.RUNNING,
        )

    @property
    def attempt(self) -> int:
        """Which attempt at the operation this is: 1, plus one per RETRY phase entered."""
        return 1 + sum(1 for phase, _at in self.task.phases if phase == Phase.RETRY)

    def warn(self, sentence: str) -> None:
        self.warnings.append(sentence)

    async def cluster(self) -> Cluster:
        return await self.ctx.records.get_cluster(self.task.resource_id)


class Operation(Protocol):
    async def run(self, job: Job) -> Outcome:
        """Do the work; raise a cloud error with a sentence to fail (a temporary one to have
        it run again after a while)."""

    async def fail(self, job: Job, error: str, /) -> Outcome:
        """Bring the resources to the operation's defined failure state."""


class TaskRunner:
    def __init__(
        self,
        ctx: CloudContext,
        operations: Mapping[str, Operation],
        *,
        holder: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._ctx = ctx
        self._sleep = sleep
        self._operations = operations
        self._holder = holder
        self._inbox = ctx.inbox
        self._running: dict[str, asyncio.Task[None]] = {}
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._health: Callable[[], Awaitable[None]] | None = None

    def on_health_check(self, check: Callable[[], Awaitable[None]]) -> None:
        """A coroutine function run every ``health_check_s`` by the lease holder."""
        self._health = check

    async def start(self) -> None:
        if self._loop_task is None:
            self._stopping = False
            self._loop_task = asyncio.create_task(self._loop(), name="cloud-tasks")

    async def stop(self) -> None:
        """Stop looking for tasks and interrupt the running ones (they resume on restart)."""
        loop_task, self._loop_task = self._loop_task, None
        # A flag as well as the cancellation: Python 3.11's timeouts can swallow a
        # cancellation that lands in the turn their deadline passes, and the loop must end
        # all the same (a cloud's stop once waited for it for ever).
        self._stopping = True
        self._inbox.wake.set()
        tasks = [t for t in (loop_task, *self._running.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._running.clear()
        with contextlib.suppress(errors.ServiceError):
            await self._ctx.records.release_lease(LEASE, self._holder)

    def submit(self, task_id: str) -> None:
        """A task was recorded: look for it now rather than at the next poll."""
        self._inbox.submit(task_id)

    async def wait(self, task_id: str, timeout_s: float | None = None) -> Task:
        """The task once it has ended (FINISHED or ERROR)."""

        async def until_done() -> Task:
            while True:
                task = await self._ctx.records.get_task(task_id)
                if task.state.done:
                    return task
                event = self._inbox.finished(task_id)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._ctx.settings.task_poll_s):
                        await event.wait()

        async with asyncio.timeout(timeout_s):
            return await until_done()

    @property
    def running(self) -> list[str]:
        return sorted(self._running)

    async def _loop(self) -> None:
        ttl = self._ctx.settings.lease_ttl_s
        next_health = 0.0
        while not self._stopping:
            self._inbox.wake.clear()
            try:
                now = self._ctx.clock.now()
                held = await self._ctx.records.try_acquire_lease(LEASE, self._holder, now, ttl)
                if held:
                    for task in await self._ctx.records.unfinished_tasks():
                        if task.id not in self._running:
                            self._spawn(task)
                    if self._health is not None and self._ctx.clock.monotonic() >= next_health:
                        next_health = (
                            self._ctx.clock.monotonic() + self._ctx.settings.health_check_s
                        )
                        await self._health()
            except asyncio.CancelledError:
                raise
            except Exception:  # the loop must survive a database hiccup; it retries next round
                log.exception("cloud task runner: looking for tasks failed; retrying")
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns normally when the
            # event is set as the task is cancelled, and the loop would outlive stop(); a
            # cancellation a timeout still swallows is caught by the flag stop() sets first
            # (with the wake-up, so this wait returns at once and the loop ends)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._ctx.settings.task_poll_s):
                    await self._inbox.wake.wait()

    def _spawn(self, task: Task) -> None:
        runner = asyncio.create_task(self._execute(task), name=f"cloud-task-{task.id}")
        self._running[task.id] = runner

        def forget(_done: asyncio.Task[None], task_id: str = task.id) -> None:
            self._running.pop(task_id, None)

        runner.add_done_callback(forget)

    async def _execute(self, task: Task) -> None:
        operation = self._operations.get(task.operation)
        job = Job(self._ctx, task)
        if operation is None:
            await self._finish(job, TaskState.ERROR, f"no operation {task.operation}", Outcome())
            return
        try:
            await job.begin()
            outcome = await self._attempts(operation, job)
        except asyncio.CancelledError:
            raise
        except CloudError as exc:
            log.info("task %s (%s %s) failed: %s", task.id, task.operation, task.resource_name, exc)
            await self._finish(
                job, TaskState.ERROR, str(exc), await self._fail(operation, job, str(exc))
            )
            return
        except Exception:
            log.exception("task %s (%s) failed unexpectedly", task.id, task.operation)
            message = INTERNAL.format(task=task.id) + " left in a defined state"
            await self._finish(
                job, TaskState.ERROR, message, await self._fail(operation, job, message)
            )
            return
        await self._finish(job, TaskState.FINISHED, "", outcome)

    async def _attempts(self, operation: Operation, job: Job) -> Outcome:
        """Run the operation, again after a temporary failure while attempts remain."""
        settings = self._ctx.settings
        while True:
            try:
                return await operation.run(job)
            except CloudError as exc:
                attempt = job.attempt
                if not is_temporary(exc) or attempt >= settings.task_attempts:
                    raise
                delay = min(settings.task_retry_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
                log.info(
                    "task %s (%s %s): attempt %d of %d failed (%s); again in %.1f s",
                    job.task.id,
                    job.task.operation,
                    job.task.resource_name,
                    attempt,
                    settings.task_attempts,
                    exc,
                    delay,
                )
                job.warn(
                    f"attempt {attempt} of {settings.task_attempts} failed ({exc}); tried again"
                    f" after {delay:g} s"
                )
                await job.phase(Phase.RETRY)
                await self._sleep(delay)

    async def _fail(self, operation: Operation, job: Job, error: str) -> Outcome:
        try:
            return await operation.fail(job, error)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("task %s: cleaning up after a failure failed too", job.task.id)
            sentence = f"{error}; cleaning up failed too ({exc}): delete the resource and retry"
            if job.task.resource_type == "cluster":
                return Outcome(cluster=ClusterChange(ClusterStatus.ERROR, error=sentence))
            return Outcome(volumes={job.task.resource_id: VolumeChange(VolumeStatus.ERROR)})

    async def _finish(self, job: Job, state: TaskState, error: str, outcome: Outcome) -> None:
        phase = Phase.FINISHED if state is TaskState.FINISHED else Phase.ERROR
        await self._ctx.records.finish_task(
            job.task.id,
            state=state,
            at=job.now,
            detailed_state=phase,
            error=error,
            warnings=job.warnings,
            cluster_changes=outcome.cluster.fields(job.now) if outcome.cluster else None,
            volume_changes=volume_fields(outcome.volumes, job.now),
            meter=outcome.meter,
        )
        self._ctx.published(outcome.meter)
        self._inbox.finished(job.task.id).set()
