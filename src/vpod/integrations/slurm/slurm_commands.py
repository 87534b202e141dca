"""The Slurm commands the bridge runs: squeue to read jobs, scontrol to annotate them.

Slurm's prolog environment does not say how many IPUs a job asked for, so the
bridge reads the job's ``TresPerNode`` (``gres:ipu:4``) with ``squeue``.
"""

from __future__ import annotations

import asyncio
import re

from .settings import SlurmSettings

GRES_NAME = "ipu"
ALIVE_STATES = frozenset(
    {"RUNNING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "RESIZING", "STAGE_OUT"}
)
"""Job states in which a job may still be using its partition: the reconciler keeps those."""
COMMAND_TIMEOUT_S = 30.0

_GRES_ITEM = re.compile(r"^gres[:/]" + GRES_NAME + r"(?::[^:,]+)?:(\d+)$")


class SlurmCommandError(Exception):
    """A Slurm command failed; the message has its stderr."""


def ipus_in_tres(tres_per_node: str) -> int:
    """IPUs in a TresPerNode value (``gres:ipu:4``, ``gres/ipu:bow:4`` ...); 0 if none."""
    total = 0
    for item in tres_per_node.split(","):
        match = _GRES_ITEM.match(item.strip())
        if match:
            total += int(match[1])
    return total


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


async def job_ipus(settings: SlurmSettings, job_id: str) -> int:
    """How many IPUs job ``job_id`` asked for (``--gres=ipu:N``)."""
    code, out, err = await _run(
        settings, "squeue", "--noheader", "--jobs", job_id, "--format", "%b"
    )
    if code != 0:
        raise SlurmCommandError(f"squeue --jobs {job_id}: {err.strip() or f'exit {code}'}")
    return ipus_in_tres(out.strip())


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
