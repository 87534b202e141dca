"""Which job holds which lasting partition (static mode) or sub-device (reconfigurable mode).

Slurm counts: a ``vipu:<size>`` GRES of count N lets at most N jobs of that
size run at once, and an ``ipu`` GRES of the shared partition's size lets no
more IPUs run than it has. Slurm's count-only GRES carry no index, so *which*
partition or block a job gets is chosen here, in the bridge's one event
loop (each choice is one call without an await, so none interleave):
:class:`Assignments` hands out a free static partition of the asked size,
or the first free aligned block of the asked size in the shared partition
(a block of 2^k IPUs at a multiple of 2^k, which is exactly
a device of the partition's listing), and never one a running job holds.

Each assignment is also written to a small file per job (see
:func:`render`), which the TaskProlog reads to export the job's partition
and device, and which the bridge reads back when it starts again, so a
restart never hands a held partition or block to a second job.
"""

from __future__ import annotations

from dataclasses import dataclass

from vpod.domain.ipuof import device_listing


@dataclass(frozen=True)
class Assignment:
    """What a job was given: a partition, and in it IPUs ``first .. first + ipus - 1``."""

    job_id: str
    partition_id: str
    ipus: int
    first: int = 0
    device: int | None = None
    """Reconfigurable mode: the device id of the job's block in the shared partition."""


class NoneFree(Exception):
    """Nothing of that size is free now; the message says what is held."""


class Assignments:
    """Running jobs' static partitions and shared-partition blocks; pure bookkeeping."""

    def __init__(
        self, static: dict[int, list[str]] | None = None, shared: tuple[str, int] | None = None
    ) -> None:
        self.static = static or {}
        """Size -> ids of the static partitions of that size."""
        self.shared = shared
        """(id, size) of the shared reconfigurable partition."""
        self.by_job: dict[str, Assignment] = {}

    def held(self, job_id: str) -> Assignment | None:
        return self.by_job.get(job_id)

    def restore(self, assignment: Assignment) -> None:
        """Take back an assignment read from its file (the bridge started again)."""
        self.by_job[assignment.job_id] = assignment

    def release(self, job_id: str) -> Assignment | None:
        return self.by_job.pop(job_id, None)

    def take_static(self, job_id: str, size: int) -> Assignment:
        """A free static partition of ``size`` IPUs for the job (the one it holds, if any)."""
        mine = self.by_job.get(job_id)
        if mine is not None:
            return mine
        names = self.static.get(size)
        if not names:
            sizes = ", ".join(str(s) for s in sorted(self.static)) or "none"
            raise NoneFree(f"no static partition has {size} IPUs (sizes: {sizes})")
        busy = {a.partition_id for a in self.by_job.values()}
        for name in names:
            if name not in busy:
                found = Assignment(job_id, name, size)
                self.by_job[job_id] = found
                return found
        raise NoneFree(f"all {len(names)} static partitions of {size} IPUs are held by jobs")

    def take_block(self, job_id: str, ipus: int) -> Assignment:
        """The first free aligned block of ``ipus`` IPUs in the shared partition."""
        mine = self.by_job.get(job_id)
        if mine is not None:
            return mine
        assert self.shared is not None, "no shared partition in this mode"
        partition_id, size = self.shared
        if ipus < 1 or ipus > size or ipus & (ipus - 1):
            raise NoneFree(
                f"{ipus} IPUs is not a block of shared partition {partition_id}"
                f" ({size} IPUs): ask for a power of two up to {size}"
            )
        used = [
            (a.first, a.first + a.ipus)
            for a in self.by_job.values()
            if a.partition_id == partition_id
        ]
        for first in range(0, size, ipus):
            end = first + ipus
            if all(end <= lo or first >= hi for lo, hi in used):
                found = Assignment(job_id, partition_id, ipus, first, device_id(size, first, ipus))
                self.by_job[job_id] = found
                return found
        held = sum(hi - lo for lo, hi in used)
        raise NoneFree(
            f"no aligned block of {ipus} free IPUs in shared partition {partition_id}"
            f" ({held} of {size} IPUs held by running jobs)"
        )


def device_id(partition_ipus: int, first: int, ipus: int) -> int:
    """The id of the device of IPUs ``first .. first + ipus - 1`` in the partition's listing."""
    members = tuple(range(first, first + ipus))
    for device in device_listing(partition_ipus):
        if device.members == members:
            return device.id
    raise ValueError(f"IPUs {first}..{first + ipus - 1} are no device of {partition_ipus} IPUs")


FILE_SUFFIX = ".assigned"
"""``<credentials_dir>/<prefix><jobid>.assigned``: the job's assignment, the job user's."""


def render(assignment: Assignment) -> str:
    """The file the TaskProlog reads: ``name=value`` lines, simple enough for bash."""
    lines = [
        f"job={assignment.job_id}",
        f"partition={assignment.partition_id}",
        f"ipus={assignment.ipus}",
        f"first={assignment.first}",
    ]
    if assignment.device is not None:
        lines.append(f"device={assignment.device}")
    return "\n".join(lines) + "\n"


def parse(text: str) -> Assignment | None:
    """An assignment file's content; None when it is not one (truncated, hand-edited)."""
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        device = values.get("device")
        return Assignment(
            job_id=values["job"],
            partition_id=values["partition"],
            ipus=int(values["ipus"]),
            first=int(values["first"]),
            device=int(device) if device is not None else None,
        )
    except (KeyError, ValueError):
        return None
