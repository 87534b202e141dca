"""One V-IPU partition per Slurm job: made before the job starts, removed when it ends.

:class:`JobPartitions` is what the bridge runs for PrologSlurmctld (``start``),
EpilogSlurmctld (``end``) and the reconciler (``reconcile``). Every action on
one job holds that job's lock, so the reconciler can never remove a partition
a prolog is creating at the same moment: it re-reads the job's state under
the lock before removing anything.

When a partition cannot be made the prolog fails, and Slurm puts the job back
in the queue (only batch jobs can go back; Slurm cancels interactive ones).
Slurm's own delay before a requeued job is eligible again is fixed, so the
bridge sets the job's ``StartTime`` itself, doubling from ``retry_initial_s``
up to ``retry_max_s``, and writes why into the job's ``AdminComment``
(``scontrol show job`` shows it).

With ``remove_in_background`` (the bridge) ``end`` answers the epilog as soon
as the removal is under way, so Slurm releases the job's IPUs without waiting
for V-IPU; every ``start`` first waits for the removals begun before it, so a
new partition never competes with one still being removed for the same IPUs.

Under a ``--secure`` controller each job also gets a partition key for its
partition (:mod:`.job_credentials`), minted once the partition is ACTIVE and
deleted with its partition when the job ends (revoked explicitly only when
that removal fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TypedDict

from vpod.domain.sizes import is_partition_size

from . import slurm_commands
from .job_credentials import CredentialsFailure, JobCredentials
from .settings import SlurmSettings
from .slurm_commands import ALIVE_STATES, SlurmCommandError
from .vipu_api import PartitionApi, PartitionFailure

log = logging.getLogger("vpod.slurm")

FINAL_STATES = frozenset(
    {
        "CANCELLED",
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)
REQUEUE_WAIT_S = 15.0
"""How long the bridge waits for Slurm to put a failed job back in the queue before its backoff."""


class StartRefused(Exception):
    """The job must not run now; the message is the reason the prolog reports."""


@dataclass
class _Retry:
    attempts: int = 0
    last_reason: str = ""


@dataclass
class ReconcileReport:
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


class JobOptions(TypedDict, total=False):
    """The keyword options of :class:`JobPartitions`, for a subclass to pass on."""

    clock: Callable[[], float]
    schedule_retries: bool
    remove_in_background: bool


@dataclass(eq=False, repr=False)
class JobPartitions:
    """The integration's use-cases over V-IPU (``api``) and Slurm's commands."""

    settings: SlurmSettings
    api: PartitionApi
    _: KW_ONLY
    clock: Callable[[], float] = time.time
    schedule_retries: bool = True
    remove_in_background: bool = False
    credentials: JobCredentials = field(init=False)
    _locks: dict[str, asyncio.Lock] = field(init=False, default_factory=dict)
    _retries: dict[str, _Retry] = field(init=False, default_factory=dict)
    _background: set[asyncio.Task[None]] = field(init=False, default_factory=set)
    _removals: dict[str, asyncio.Task[bool]] = field(init=False, default_factory=dict)
    _ipu_requests: slurm_commands.IpuRequests = field(init=False)

    def __post_init__(self) -> None:
        self._ipu_requests = slurm_commands.IpuRequests(self.settings)
        self.credentials = JobCredentials(self.settings, self.api)

    def _lock(self, job_id: str) -> asyncio.Lock:
        lock = self._locks.get(job_id)
        if lock is None:
            lock = self._locks[job_id] = asyncio.Lock()
        return lock

    def _forget_lock(self, job_id: str) -> None:
        lock = self._locks.get(job_id)
        if lock is not None and not lock.locked():
            del self._locks[job_id]

    async def start(
        self,
        job_id: str,
        slurm_partition: str,
        ipus: int | None = None,
        uid: int | None = None,
    ) -> str:
        """Make the job's partition and key; return what was done, raise StartRefused to
        requeue. ``ipus`` and ``uid`` unknown: read with squeue."""
        # Outside the job's lock: the removal of this job's previous run (a requeue) takes it.
        await self._removals_begun()
        async with self._lock(job_id):
            try:
                return await self._start(job_id, slurm_partition, ipus, uid)
            except StartRefused as exc:
                if self.schedule_retries:
                    self._schedule_retry(job_id, str(exc))
                raise
            finally:
                self._forget_lock(job_id)

    async def _start(
        self, job_id: str, slurm_partition: str, ipus: int | None, uid: int | None
    ) -> str:
        began = time.perf_counter()
        if ipus is None:
            try:
                request = await self._ipu_requests.get(job_id)
            except SlurmCommandError as exc:
                raise StartRefused(f"cannot read the job's IPU request: {exc}") from None
            ipus = request.ipus
            uid = request.uid if uid is None else uid
        if ipus == 0:
            return f"job {job_id} asked for no IPUs"
        partition_id = self.settings.partition_id(job_id)
        if not is_partition_size(ipus):
            # job_submit.lua refuses these at submission; a job from before that rule lands here.
            raise StartRefused(f"{ipus} IPUs is not a partition size V-IPU can make")
        allocation = self.settings.allocation_for(slurm_partition)
        asked = time.perf_counter()
        try:
            await self.api.create(partition_id, ipus, allocation)
        except PartitionFailure as exc:
            raise StartRefused(str(exc)) from None
        except Exception as exc:  # a bug, but the job must still go back to the queue
            log.exception("job %s: creating %s failed unexpectedly", job_id, partition_id)
            raise StartRefused(f"cannot create partition {partition_id}: {exc!r}") from None
        created = time.perf_counter()
        try:
            keyed = await self.credentials.issue(
                partition_id, uid if uid is not None else (lambda: self._uid(job_id))
            )
        except (PartitionFailure, CredentialsFailure, SlurmCommandError, OSError) as exc:
            raise StartRefused(f"cannot give job {job_id} its V-IPU key: {exc}") from None
        retry = self._retries.pop(job_id, None)
        if retry is not None:
            await self._annotate(
                job_id, f"vpod: partition {partition_id} made after {retry.attempts + 1} attempts"
            )
        done = time.perf_counter()
        log.info(
            "job %s: partition %s of %d IPUs is ACTIVE, %s (squeue %.0f ms, create %.0f ms,"
            " key %.0f ms)",
            job_id,
            partition_id,
            ipus,
            keyed,
            (asked - began) * 1000,
            (created - asked) * 1000,
            (done - created) * 1000,
        )
        return f"partition {partition_id} of {ipus} IPUs is ACTIVE"

    async def _uid(self, job_id: str) -> int | None:
        return (await self._ipu_requests.get(job_id)).uid

    async def end(self, job_id: str) -> str:
        """Remove the job's partition (any end: done, failed, cancelled, timed out, requeued)."""
        partition_id = self.settings.partition_id(job_id)
        self.credentials.forget_file(partition_id)  # the job's tasks are gone: now, not later
        if not self.remove_in_background:
            if await self._remove(job_id, partition_id):
                return f"partition {partition_id} removed"
            return f"partition {partition_id} was already gone"
        task = asyncio.create_task(self._remove_logged(job_id, partition_id))
        self._removals[job_id] = task
        task.add_done_callback(lambda done: self._removal_done(job_id, done))
        return f"partition {partition_id} is being removed"

    async def _remove(self, job_id: str, partition_id: str) -> bool:
        began = time.perf_counter()
        async with self._lock(job_id):
            try:
                # Removing the partition deletes its key with it; a removal that fails
                # (controller busy, agent down) must not leave the key working meanwhile.
                try:
                    removed = await self.api.remove(partition_id)
                except PartitionFailure:
                    with contextlib.suppress(PartitionFailure):
                        await self.credentials.revoke(partition_id)
                    raise
            finally:
                self._forget_lock(job_id)
        if removed:
            log.info(
                "job %s ended: partition %s removed with its key (%.0f ms)",
                job_id,
                partition_id,
                (time.perf_counter() - began) * 1000,
            )
        return removed

    async def _remove_logged(self, job_id: str, partition_id: str) -> bool:
        """A removal nobody waits for: its failure is logged, and the reconciler retries it."""
        try:
            return await self._remove(job_id, partition_id)
        except PartitionFailure as exc:
            log.warning("job %s ended: %s; the reconciler will remove it", job_id, exc)
        except Exception:
            log.exception("job %s ended: removing %s failed unexpectedly", job_id, partition_id)
        return False

    def _removal_done(self, job_id: str, task: asyncio.Task[bool]) -> None:
        if self._removals.get(job_id) is task:
            del self._removals[job_id]

    async def _removals_begun(self) -> None:
        """Wait for every removal begun so far (each is bounded by the API's timeout)."""
        pending = list(self._removals.values())
        if pending:
            await asyncio.wait(pending)

    async def reconcile(self) -> ReconcileReport:
        """Remove our partitions whose job is gone or not running; never a running job's."""
        report = ReconcileReport()
        # Partitions first, then jobs: a partition listed here existed before the job snapshot.
        ours = [
            (pid, job)
            for pid in await self.api.list_ids()
            if (job := self.settings.job_of(pid)) is not None
        ]
        if not ours:
            return report
        states = await slurm_commands.job_states(self.settings)
        for partition_id, job_id in ours:
            if states.get(job_id) in ALIVE_STATES:
                report.kept.append(partition_id)
                continue
            async with self._lock(job_id):
                try:
                    state = await slurm_commands.job_state(self.settings, job_id)
                    if state in ALIVE_STATES:
                        report.kept.append(partition_id)
                        continue
                    self.credentials.forget_file(partition_id)
                    if await self.api.remove(partition_id):
                        log.info("reconcile: removed %s (job %s: %s)", partition_id, job_id, state)
                        report.removed.append(partition_id)
                finally:
                    self._forget_lock(job_id)
        return report

    # -- going back to the queue

    def _schedule_retry(self, job_id: str, reason: str) -> None:
        retry = self._retries.setdefault(job_id, _Retry())
        retry.attempts += 1
        retry.last_reason = reason
        delay = min(
            self.settings.retry_initial_s * 2 ** (retry.attempts - 1), self.settings.retry_max_s
        )
        log.warning("job %s: %s; back in the queue for %.0f s", job_id, reason, delay)
        task = asyncio.create_task(self._after_requeue(job_id, reason, retry.attempts, delay))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _after_requeue(self, job_id: str, reason: str, attempt: int, delay: float) -> None:
        """Once Slurm has requeued the job: say why, and set when it may start again."""
        when = time.strftime("%H:%M:%S", time.localtime(self.clock() + delay))
        comment = f"vpod: no IPU partition yet ({reason}); attempt {attempt}, next try at {when}"
        deadline = self.clock() + REQUEUE_WAIT_S
        try:
            while self.clock() < deadline:
                state = await slurm_commands.job_state(self.settings, job_id)
                if state == "PENDING":
                    await slurm_commands.update_job(
                        self.settings, job_id, AdminComment=comment, StartTime=f"now+{round(delay)}"
                    )
                    return
                if state is None or state in FINAL_STATES:
                    break  # interactive jobs are cancelled instead of requeued
                await asyncio.sleep(0.1)
            self._retries.pop(job_id, None)
        except SlurmCommandError as exc:
            log.warning("job %s: cannot set its retry time: %s", job_id, exc)

    async def _annotate(self, job_id: str, comment: str) -> None:
        try:
            await slurm_commands.update_job(self.settings, job_id, AdminComment=comment)
        except SlurmCommandError as exc:
            log.warning("job %s: cannot write its comment: %s", job_id, exc)

    async def drain(self) -> None:
        """Wait for background removals and retry bookkeeping (for a clean shutdown)."""
        await self._removals_begun()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
