"""Jobs of a trace, as the simulator replays them.

A trace row asks for ``num_gpu`` accelerators; the job runs in the smallest
valid partition that holds them (a job asking for 32 gets 64 IPUs, because 32
is not a partition size), and it occupies the whole partition while it runs.

Parsing is pure: :func:`jobs_from_rows` takes rows already read (by
:mod:`vpod.sim.trace_csv`, or built by hand in tests) and checks them, with
messages that name the row and the column at fault.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vpod.domain.errors import InvalidSpec
from vpod.domain.sizes import smallest_partition_size_at_least

COLUMNS: tuple[str, ...] = ("job_id", "submission_time", "duration", "num_gpu")
"""The columns a trace must have (extra columns are ignored)."""


class TraceError(ValueError):
    """A trace row is malformed; the message names the row and the column."""


@dataclass(frozen=True, slots=True)
class Job:
    """One job of a trace.

    ``index`` is the job's position in the trace: it breaks ties between jobs
    submitted at the same second (earlier row first) and is the identity the
    placers use, because nothing guarantees trace ids are unique.
    """

    index: int
    job_id: str
    submit: float
    duration: float
    requested: int
    size: int

    @property
    def name(self) -> str:
        """A partition id that is unique in one replay."""
        return f"sim-{self.index}"


def make_job(
    index: int, submit: float, duration: float, requested: int, job_id: str | None = None
) -> Job:
    """A job asking for ``requested`` accelerators, sized to the smallest partition that fits."""
    try:
        size = smallest_partition_size_at_least(requested)
    except InvalidSpec as exc:
        raise TraceError(f"job {index}: {exc}") from exc
    return Job(
        index=index,
        job_id=job_id if job_id is not None else str(index),
        submit=submit,
        duration=duration,
        requested=requested,
        size=size,
    )


def _number(row: Mapping[str, str], column: str, where: str) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{where}: {column} {text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise TraceError(f"{where}: {column} {text!r} is not a finite number of seconds")
    return int(value) if value.is_integer() else value


def jobs_from_rows(rows: Iterable[Mapping[str, str]], *, first_line: int = 2) -> list[Job]:
    """Check trace rows and turn them into jobs, in trace order.

    ``first_line`` is the line number of the first row in its file (2 after a
    header), so that messages point at the line a person would open.
    """
    jobs: list[Job] = []
    for offset, row in enumerate(rows):
        where = f"line {first_line + offset}"
        missing = [c for c in COLUMNS if row.get(c) is None]
        if missing:
            raise TraceError(
                f"{where}: missing column(s) {', '.join(missing)};"
                f" a trace has the columns {','.join(COLUMNS)}"
            )
        submit = _number(row, "submission_time", where)
        duration = _number(row, "duration", where)
        if duration < 0:
            raise TraceError(f"{where}: duration {duration} is negative")
        gpus_text = row["num_gpu"].strip()
        try:
            requested = int(gpus_text)
        except ValueError:
            raise TraceError(f"{where}: num_gpu {gpus_text!r} is not a whole number") from None
        if requested < 1:
            raise TraceError(f"{where}: num_gpu is {requested}; a job needs at least 1")
        jobs.append(make_job(len(jobs), submit, duration, requested, row["job_id"].strip()))
    return jobs


def split_oversized(jobs: Iterable[Job], num_ipus: int) -> tuple[list[Job], list[Job]]:
    """Split jobs into those a pod of ``num_ipus`` IPUs can ever hold and those it cannot.

    The simulator drops the second kind up front (and reports how many):
    queueing them would block a FIFO queue forever.
    """
    fits: list[Job] = []
    too_big: list[Job] = []
    for job in jobs:
        (fits if job.size <= num_ipus else too_big).append(job)
    return fits, too_big
