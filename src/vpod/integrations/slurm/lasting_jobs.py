"""The static and reconfigurable modes: jobs share partitions made once, not one each.

- **static**: the partitions of ``static_partitions`` (``<size>:<count>``)
  are made once, named ``<prefix>static<size>_<n>``; Slurm schedules them as
  the GRES ``vipu:<size>`` with that count, a job asks ``--gres=vipu:<size>:1``
  and gets a free one of that size. When it ends its key is revoked and the
  partition reset, and only then may another job have it.
- **reconfigurable**: one reconfigurable partition of ``shared_size`` IPUs,
  ``<prefix>shared``, made once; Slurm counts its IPUs as the GRES ``ipu``, a
  job asks ``--gres=ipu:N`` (N a power of two) and gets the first free aligned
  block of N IPUs in it, a device of the partition's listing, exported as
  ``VPOD_IPU_DEVICE_ID``. A reconfigurable partition is never reset
  automatically (that would end every job's attachment), so a job's end
  frees its block and nothing else.

Which partition or block a job holds is chosen in the bridge's one event
loop, with no await between looking and taking (:mod:`.assignments`), and
written to the job's ``.assigned`` file before the prolog answers, so two
jobs never get the same one, even across a restart of the bridge. Each
job's partition key (secure controllers) is named after the job,
``<prefix><jobid>.job``, and scoped to its partition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Unpack

from . import assignments, slurm_commands
from .assignments import Assignment, Assignments, NoneFree
from .job_credentials import CredentialsFailure, write_owned
from .jobs import JobOptions, JobPartitions, ReconcileReport, StartRefused
from .settings import SlurmSettings
from .slurm_commands import ALIVE_STATES, SlurmCommandError
from .vipu_api import PartitionFailure, SharedPartitionApi

log = logging.getLogger("vpod.slurm")


class LastingPartitions(JobPartitions):
    """:class:`~.jobs.JobPartitions` for the modes whose partitions outlive jobs."""

    def __init__(
        self, settings: SlurmSettings, api: SharedPartitionApi, **options: Unpack[JobOptions]
    ) -> None:
        super().__init__(settings, api, **options)
        self.shared_api = api
        if settings.mode == "static":
            self.book = Assignments(static=settings.static_partition_ids())
        else:
            self.book = Assignments(shared=(settings.shared_partition_id, settings.shared_size))
        self._made = False
        self._restore()

    # -- the partitions, made once

    def lasting(self) -> list[tuple[str, int, bool]]:
        """(id, size, reconfigurable) of every partition this mode keeps."""
        if self.settings.mode == "static":
            return [
                (name, size, False)
                for size, names in self.settings.static_partition_ids().items()
                for name in names
            ]
        return [(self.settings.shared_partition_id, self.settings.shared_size, True)]

    async def prepare(self) -> list[str]:
        """Make every lasting partition that is not there yet; those made already are kept
        (a repeated create of the same shape finds them), so restarts duplicate nothing."""
        allocation = self.settings.default_allocation
        made = []
        for partition_id, size, reconfigurable in self.lasting():
            await self.shared_api.create_lasting(
                partition_id, size, allocation, reconfigurable=reconfigurable
            )
            made.append(partition_id)
        self._made = True
        return made

    # -- a job starts

    async def _start(
        self,
        job_id: str,
        slurm_partition: str,  # noqa: ARG002 - the lasting partitions are all in one allocation
        ipus: int | None,  # noqa: ARG002 - a --gres=vipu job has no IPU count: squeue says
        uid: int | None,
    ) -> str:
        began = time.perf_counter()
        try:
            request = await self._ipu_requests.get(job_id)
        except SlurmCommandError as exc:
            raise StartRefused(f"cannot read the job's IPU request: {exc}") from None
        owner = uid if uid is not None else request.uid
        if self.settings.mode == "static":
            if not request.static:
                return f"job {job_id} asked for no static partition"
            if len(request.static) != 1 or request.static[0][1] != 1 or request.static[0][0] < 1:
                raise StartRefused("a job gets one static partition: ask --gres=vipu:<size>:1")
        elif request.ipus == 0:
            return f"job {job_id} asked for no IPUs"
        if not self._made:
            try:
                await self.prepare()
            except PartitionFailure as exc:
                raise StartRefused(str(exc)) from None
        # Taken without an await in between: no other job's start interleaves (one event loop).
        try:
            if self.settings.mode == "static":
                held = self.book.take_static(job_id, request.static[0][0])
            else:
                held = self.book.take_block(job_id, request.ipus)
        except NoneFree as exc:
            raise StartRefused(str(exc)) from None
        try:
            await self._hand_over(job_id, held, owner)
        except BaseException:
            # A key minted for a job that will not run must not outlive the attempt.
            with contextlib.suppress(PartitionFailure):
                await self.credentials.revoke(self.settings.partition_id(job_id))
            self.book.release(job_id)
            self._forget_files(job_id)
            raise
        log.info(
            "job %s: %s (%.0f ms)", job_id, describe(held), (time.perf_counter() - began) * 1000
        )
        return describe(held)

    async def _hand_over(self, job_id: str, held: Assignment, owner: int | None) -> None:
        """The job's assignment file and key, for its user alone."""
        if owner is None:
            raise StartRefused(f"cannot tell which user job {job_id} belongs to")
        name = self.settings.partition_id(job_id)
        try:
            await asyncio.to_thread(
                write_owned, self._assigned_path(job_id), assignments.render(held), owner
            )
            await self.credentials.issue(held.partition_id, owner, name=name)
        except (PartitionFailure, CredentialsFailure, OSError) as exc:
            raise StartRefused(f"cannot give job {job_id} its V-IPU key: {exc}") from None

    # -- a job ends

    async def end(self, job_id: str) -> str:
        """Revoke the job's key, reset its static partition, then free it for the next job."""
        self.credentials.forget_file(self.settings.partition_id(job_id))
        held = self.book.held(job_id)
        if held is None:
            return f"job {job_id} held no partition"
        if not self.remove_in_background:
            await self._release(held)
            return f"{held.partition_id} freed"
        task = asyncio.create_task(self._release_logged(held))
        self._removals[job_id] = task
        task.add_done_callback(lambda done: self._removal_done(job_id, done))
        return f"{held.partition_id} is being freed"

    async def _release(self, held: Assignment) -> bool:
        """Freed only when the key is revoked (and a static partition reset): until then a
        new job cannot get it, lest the last job's key or attachment reach the next one."""
        async with self._lock(held.job_id):
            try:
                if self.book.held(held.job_id) is not held:
                    return False  # freed meanwhile (the reconciler)
                await self.credentials.revoke(self.settings.partition_id(held.job_id))
                if self.settings.mode == "static":
                    await self.shared_api.reset(held.partition_id)
                self.book.release(held.job_id)
                self._forget_files(held.job_id)
            finally:
                self._forget_lock(held.job_id)
        log.info("job %s ended: %s freed", held.job_id, describe(held))
        return True

    async def _release_logged(self, held: Assignment) -> bool:
        try:
            return await self._release(held)
        except PartitionFailure as exc:
            log.warning("job %s ended: %s; the reconciler will retry", held.job_id, exc)
        except Exception:
            log.exception("job %s ended: freeing %s failed", held.job_id, held.partition_id)
        return False

    # -- nothing held by a job that is gone

    async def reconcile(self) -> ReconcileReport:
        """Free what jobs no longer running hold; make lasting partitions that went missing."""
        # Job partitions of dynamic mode (the mode was switched): removed as there.
        report = await super().reconcile()
        present = set(await self.api.list_ids())
        if any(pid not in present for pid, _, _ in self.lasting()):
            self._made = False
            with contextlib.suppress(PartitionFailure):
                await self.prepare()
        if not self.book.by_job:
            return report
        states = await slurm_commands.job_states(self.settings)
        for job_id, held in list(self.book.by_job.items()):
            if states.get(job_id) in ALIVE_STATES:
                report.kept.append(held.partition_id)
                continue
            state = await slurm_commands.job_state(self.settings, job_id)
            if state in ALIVE_STATES:
                report.kept.append(held.partition_id)
                continue
            self.credentials.forget_file(self.settings.partition_id(job_id))
            if await self._release(held):
                log.info("reconcile: freed %s (job %s: %s)", held.partition_id, job_id, state)
                report.removed.append(held.partition_id)
        return report

    # -- the files

    def _assigned_path(self, job_id: str) -> Path:
        name = self.settings.partition_id(job_id) + assignments.FILE_SUFFIX
        return Path(self.settings.credentials_dir) / name

    def _forget_files(self, job_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._assigned_path(job_id).unlink()

    def _restore(self) -> None:
        """Take back the assignments of jobs started before this bridge (their files)."""
        directory = Path(self.settings.credentials_dir)
        with contextlib.suppress(FileNotFoundError):
            for path in directory.glob(
                f"{self.settings.partition_prefix}*{assignments.FILE_SUFFIX}"
            ):
                found = assignments.parse(path.read_text(errors="replace"))
                if found is not None and found.partition_id in {p for p, _, _ in self.lasting()}:
                    self.book.restore(found)


def describe(held: Assignment) -> str:
    if held.device is None:
        return f"partition {held.partition_id} of {held.ipus} IPUs"
    return (
        f"device {held.device} (IPUs {held.first}-{held.first + held.ipus - 1}) of"
        f" partition {held.partition_id}"
    )


def job_partitions(
    settings: SlurmSettings, api: SharedPartitionApi, **options: Unpack[JobOptions]
) -> JobPartitions:
    """The use-cases of the configured mode."""
    kind = JobPartitions if settings.mode == "dynamic" else LastingPartitions
    return kind(settings, api, **options)
