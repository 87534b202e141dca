"""Slurm with IPUs when things break: the controller stops, slurmctld is killed, and a stress run.

After each: every job reached a final state (none lost), no two jobs ever
held one IPU (sampled from the agents), no ``slurm_*`` partition is left.
Through all three a job runs into its time limit (Slurm's smallest is a
minute, which it enforces up to 30 s late): started before the first, it is
killed during the last, which then checks it; the others leave it be.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from .harness import ALLOCATION_IPUS, FINAL_STATES, AgentSampler, SlurmPod, wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]

JOB_S = 15
"""Long enough that the jobs are still running when slurmctld is killed."""
SLURM_STATE_SAVE_S = 6.0
"""Longer than slurmctld's longest delay before it writes a change of job state (5 s)."""
CHECK_ENV = 'test "$IPUOF_VIPU_API_PARTITION_ID" = "slurm_$SLURM_JOB_ID" || exit 7'
TIME_LIMIT_S = 60
"""``--time=1``: Slurm's smallest time limit."""
KILL_MARGIN_S = 15
"""The slurmctld kill waits out the time-limited job when it is this close to its limit."""
TIME_LIMIT_CHECK_S = 30
"""slurmctld checks time limits every 30 s, counted from its start."""


def exit_code(slurm: SlurmPod, job_id: str) -> str:
    return slurm.job(job_id).get("ExitCode", "")


def run_seconds(slurm: SlurmPod, job_id: str) -> int:
    """The job's RunTime ([days-]hh:mm:ss) in seconds."""
    days, _, clock = slurm.job(job_id).get("RunTime", "0:0:0").rpartition("-")
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


@pytest.fixture(scope="module", autouse=True, name="time_limited")
def time_limited_fixture(slurm: SlurmPod) -> Iterator[str]:
    """A job of one IPU that runs into its time limit, submitted before the module's scenarios.

    Its minute passes while they run instead of after them. One IPU: beside it
    the slurmctld scenario's seven jobs of 63 IPUs still fit the pod.
    """
    job_id = slurm.sbatch("--gres=ipu:1", "--time=1", wrap="sleep 600")
    slurm.running_beside.add(job_id)
    try:
        slurm.wait_state(job_id, {"RUNNING"})
        assert f"slurm_{job_id}" in slurm.partitions()
        yield job_id
    finally:
        slurm.running_beside.discard(job_id)
        if slurm.state(job_id) not in FINAL_STATES:  # the stress scenario did not run
            slurm.slurm("scancel", job_id, check=False)
            slurm.wait_state(job_id, FINAL_STATES, 120)


def test_jobs_starting_while_the_controller_is_stopped_run_once_it_is_back(
    slurm: SlurmPod,
) -> None:
    """Prologs fail while V-IPU is down: jobs wait in the queue, then run; leaks are reconciled."""
    with AgentSampler(slurm):
        running = slurm.sbatch("--gres=ipu:4", wrap=f"{CHECK_ENV}; sleep 3")
        slurm.wait_state(running, {"RUNNING"})
        slurm.pod.stop()
        waiting = [slurm.ipu_job(4, 0.5) for _ in range(3)]
        # Ends while the controller is down: its epilog cannot remove the partition.
        assert slurm.wait_state(running, {"COMPLETED", "FAILED"}) == "COMPLETED"
        wait_until(
            lambda: all(int(slurm.job(j).get("Restarts", "0")) >= 1 for j in waiting),
            60,
            "the waiting jobs to be requeued",
        )
        wait_until(lambda: "AdminComment" in slurm.job(waiting[0]), 30, "the reason")
        reason = slurm.slurm("scontrol", "show", "job", waiting[0])
        assert "cannot reach the V-IPU controller" in reason
        slurm.restart_pod()
        for job_id in waiting:
            assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 120) == "COMPLETED"
            assert f"attached 4 slurm_{job_id}" in slurm.output(job_id)
        slurm.check_settled()


def test_slurmctld_killed_and_restarted_loses_no_job_and_no_partition(
    slurm: SlurmPod, time_limited: str
) -> None:
    """SIGKILL slurmctld with jobs running and queued; after a restart all finish, nothing leaks."""
    # Restarted once the time-limited job has run 30 s, slurmctld's first time-limit check
    # finds it at its limit (restarted sooner, only the second, up to 30 s later).
    wait_until(
        lambda: (
            slurm.state(time_limited) != "RUNNING"
            or run_seconds(slurm, time_limited) >= TIME_LIMIT_CHECK_S
        ),
        TIME_LIMIT_S,
        "the time-limited job to run half its minute",
    )
    with AgentSampler(slurm):
        # Seven jobs fill the pod (63 IPUs, 64 with the time-limited job's); the last one
        # queues behind them and is short: only its way through the restart matters.
        jobs = [
            slurm.sbatch(f"--gres=ipu:{size}", wrap=f"{CHECK_ENV}; sleep {seconds}")
            for size, seconds in [(s, JOB_S) for s in (16, 16, 16, 8, 4, 2, 1)] + [(16, 1)]
        ]
        wait_until(lambda: sum(slurm.state(j) == "RUNNING" for j in jobs) >= 7, 60, "jobs to run")
        # slurmctld writes its job state up to a few seconds after a change, and a SIGKILL
        # loses what it has not written (Slurm's own window: such jobs vanish, their ids are
        # handed out again and slurmd drains the node for "Duplicate jobid"). Kill it once
        # the running jobs are on disk: a job update marks the state dirty, and the next
        # write of job_state after it holds every running job. A loaded host can take
        # longer than the usual few seconds, so wait for the file rather than a fixed time.
        job_state = slurm.cluster.root / "state" / "job_state"
        while True:
            marked = time.time()
            slurm.cluster.run("scontrol", "update", f"jobid={jobs[0]}", "comment=state-saved")
            wait_until(
                lambda since=marked: job_state.stat().st_mtime > since,
                60,
                "slurmctld to save its job state",
            )
            # The time-limited job's TIMEOUT must not fall between that save and the kill
            # (it would be lost like any change): when its limit is near, let it pass first.
            if slurm.state(time_limited) != "RUNNING":
                break
            if run_seconds(slurm, time_limited) < TIME_LIMIT_S - KILL_MARGIN_S:
                break
            slurm.wait_state(time_limited, FINAL_STATES, 120)
        time.sleep(SLURM_STATE_SAVE_S / 6)
        slurm.cluster.kill("slurmctld", signal.SIGKILL)
        time.sleep(2)
        slurm.cluster.start_slurmctld()
        try:
            for job_id in jobs:
                assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 120) == "COMPLETED", (
                    slurm.job(job_id)
                )
                assert exit_code(slurm, job_id) == "0:0"
            slurm.check_settled()
        finally:
            # Whatever happened here, the next scenarios get a node that takes jobs.
            slurm.cluster.run("scontrol", "update", "nodename=vpod", "state=resume", check=False)


def test_stress_300_jobs_with_random_cancels_beside_a_time_limit_kill(
    slurm: SlurmPod, time_limited: str
) -> None:
    """300 short jobs, sizes 1..64, a fifth cancelled at random moments: all accounted for.

    Beside them the job of time_limited_fixture runs into its time limit
    (--time=1: Slurm's smallest, a minute) and is killed (TIMEOUT); its
    partition goes with it.
    """
    rng = random.Random(20261125)
    sizes = [1, 1, 1, 2, 2, 2, 4, 4, 4, 4, 8, 8, 8, 16, 16] * 2 + [64]
    timed = time_limited
    slurm.running_beside.discard(timed)  # from here on the checks wait for it too
    with AgentSampler(slurm) as sampler:
        requests = [(rng.choice(sizes), rng.choice([0, 0.2, 0.5])) for _ in range(300)]
        # Whole-pod jobs go in last: Slurm's FIFO scheduler (sched/builtin) would otherwise
        # stop the whole queue at the first of them until the time-limited job is killed
        # (when it is still running).
        requests.sort(key=lambda r: r[0] == ALLOCATION_IPUS)
        with ThreadPoolExecutor(max_workers=6) as pool:  # sbatch one by one takes half a minute
            jobs = list(
                pool.map(
                    lambda r: slurm.sbatch(
                        f"--gres=ipu:{r[0]}",
                        "--output=/dev/null",
                        wrap=f"{CHECK_ENV}; sleep {r[1]}",
                    ),
                    requests,
                )
            )
        cancelled = rng.sample(jobs, 60)
        for job_id in cancelled:
            time.sleep(rng.uniform(0, 0.2))
            slurm.slurm("scancel", job_id)
        slurm.check_settled(timeout=300)
    assert sampler.samples > 5
    assert slurm.state(timed) == "TIMEOUT"
    states = slurm.states()
    for job_id in jobs:
        state = states[job_id]
        if job_id in cancelled:
            assert state in {"CANCELLED", "COMPLETED"}, (job_id, state)
        else:
            # COMPLETED is exit status 0: a job that missed its variables exits 7 (FAILED).
            assert state == "COMPLETED", (job_id, slurm.job(job_id))
