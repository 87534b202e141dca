"""The Slurm commands the bridge runs: squeue to read jobs, scontrol to annotate them.

Slurm's prolog environment does not say how many IPUs a job asked for, so the
bridge reads the job's ``TresPerNode`` (``gres:ipu:4``) with ``squeue``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from .bridge_protocol import ipus_in_tres, static_in_tres
from .settings import SlurmSettings

ALIVE_STATES = frozenset(
    {
        "RUNNING",
        "CONFIGURING",
        "COMPLETING",
        "SUSPENDED",
        "STOPPED",
        "SIGNALING",
        "RESIZING",
        "STAGE_OUT",
    }
)
"""Job states in which a job may still be using its partition: the reconciler keeps those.

COMPLETING is among them: its tasks may still be dying, and right after a
slurmctld restart Slurm's idea of which jobs are done is not yet reliable.
The epilog removes the partition; if it is lost, the job leaves COMPLETING for
a final state and the next pass removes it.
"""
COMMAND_TIMEOUT_S = 30.0


class SlurmCommandError(Exception):
    """A Slurm command failed; the message has its stderr."""


async def _run(settings: SlurmSettings, *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        settings.slurm_command(argv[0]),
        *argv[1:],
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=settings.slurm_env(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise SlurmCommandError(
            f"{argv[0]} did not finish within {COMMAND_TIMEOUT_S:g} s"
        ) from None
    return proc.returncode or 0, out.decode(), err.decode()


@dataclass(frozen=True)
class JobRequest:
    """What a starting job asked for and whose it is."""

    ipus: int
    uid: int | None
    """The job's user (None when squeue did not say)."""
    static: tuple[tuple[int, int], ...] = ()
    """Static mode: (size, count) of each ``--gres=vipu:<size>:<count>``."""


async def jobs_requests(settings: SlurmSettings, job_ids: list[str]) -> dict[str, JobRequest]:
    """IPUs each job asked for (``--gres=ipu:N``) and its user; jobs squeue does not list are
    left out."""
    code, out, err = await _run(
        settings, "squeue", "--noheader", "--jobs", ",".join(job_ids), "--format", "%A %U %b"
    )
    if code != 0:
        raise SlurmCommandError(
            f"squeue --jobs {','.join(job_ids)}: {err.strip() or f'exit {code}'}"
        )
    found: dict[str, JobRequest] = {}
    for line in out.splitlines():
        job_id, _, rest = line.strip().partition(" ")
        uid, _, tres = rest.strip().partition(" ")
        found[job_id] = JobRequest(
            ipus=ipus_in_tres(tres.strip()),
            uid=int(uid) if uid.isdigit() else None,
            static=tuple(static_in_tres(tres.strip())),
        )
    return found


class IpuRequests:
    """Reads jobs' IPU requests, one ``squeue`` for every job that asks while one runs.

    When many jobs start at once (a queue draining), their prologs arrive
    together; one squeue call for all of them costs slurmctld one RPC instead
    of one each.
    """

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings
        self._waiting: dict[str, list[asyncio.Future[JobRequest]]] = {}
        self._runner: asyncio.Task[None] | None = None

    async def get(self, job_id: str) -> JobRequest:
        future: asyncio.Future[JobRequest] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(job_id, []).append(future)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run())
        return await future

    async def _run(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, {}
            try:
                found = await jobs_requests(self.settings, list(batch))
            except SlurmCommandError as exc:
                for futures in batch.values():
                    for future in futures:
                        future.set_exception(SlurmCommandError(str(exc)))
                continue
            for job_id, futures in batch.items():
                for future in futures:
                    if job_id in found:
                        future.set_result(found[job_id])
                    else:
                        future.set_exception(
                            SlurmCommandError(f"squeue does not list job {job_id}")
                        )


async def job_states(settings: SlurmSettings) -> dict[str, str]:
    """Every job slurmctld still knows (any state) -> its state name."""
    code, out, err = await _run(
        settings, "squeue", "--noheader", "--states", "all", "--format", "%A %T"
    )
    if code != 0:
        raise SlurmCommandError(f"squeue: {err.strip() or f'exit {code}'}")
    states: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


async def job_state(settings: SlurmSettings, job_id: str) -> str | None:
    """The state of one job, None when slurmctld no longer knows it."""
    code, out, err = await _run(
        settings, "squeue", "--noheader", "--jobs", job_id, "--states", "all", "--format", "%T"
    )
    if code != 0:
        if "invalid job id" in err.lower():
            return None
        raise SlurmCommandError(f"squeue --jobs {job_id}: {err.strip() or f'exit {code}'}")
    return out.strip() or None


async def update_job(settings: SlurmSettings, job_id: str, **fields: str) -> None:
    """``scontrol update JobId=ID Field=value ...``."""
    pairs = [f"{name}={value}" for name, value in fields.items()]
    code, _out, err = await _run(settings, "scontrol", "update", f"JobId={job_id}", *pairs)
    if code != 0:
        raise SlurmCommandError(f"scontrol update JobId={job_id}: {err.strip() or f'exit {code}'}")
