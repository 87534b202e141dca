"""Slurm jobs with IPUs, end to end on real daemons: one partition per job, nothing leaked.

Each test submits real jobs with sbatch to a real slurmctld/slurmd whose
PrologSlurmctld, EpilogSlurmctld, TaskProlog and job_submit.lua are the
integration's, against a real ``vpod up`` pod64; then checks what the job
saw and that the queue, V-IPU and the agents are clean again.
"""

from __future__ import annotations

import re

import pytest

from .harness import AgentSampler, SlurmPod, wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]


def test_each_size_gets_its_own_partition_and_attaches_exactly_its_ipus(slurm: SlurmPod) -> None:
    """Sizes 1..64: the job sees IPUOF_VIPU_API_*, its partition is ACTIVE, it holds N IPUs."""
    with AgentSampler(slurm) as sampler:
        jobs = {size: slurm.ipu_job(size, 1.0) for size in (1, 2, 4, 8, 16, 64)}
        for size, job_id in jobs.items():
            assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 120) == "COMPLETED", (
                slurm.output(job_id)
            )
            assert f"attached {size} slurm_{job_id}" in slurm.output(job_id)
    assert sampler.samples > 0
    slurm.check_settled()


def test_every_task_of_a_job_has_the_ipuof_variables(slurm: SlurmPod) -> None:
    """The batch script and each srun task see the same five variables, for their own job."""
    job_id = slurm.sbatch(
        "--gres=ipu:4",
        "--ntasks=2",
        wrap="env | grep ^IPUOF_ | sort; srun sh -c 'echo task $SLURM_PROCID"
        " $IPUOF_VIPU_API_PARTITION_ID $IPUOF_VIPU_API_HOST'",
    )
    assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}) == "COMPLETED"
    out = slurm.output(job_id)
    port = slurm.pod.user_port
    for line in (
        "IPUOF_VIPU_API_GCD_ID=0",
        "IPUOF_VIPU_API_HOST=127.0.0.1",
        f"IPUOF_VIPU_API_PARTITION_ID=slurm_{job_id}",
        f"IPUOF_VIPU_API_PORT={port}",
        "IPUOF_VIPU_API_TIMEOUT=120",
    ):
        assert line in out.splitlines(), out
    assert sorted(re.findall(r"^task \d slurm_\d+ \S+$", out, re.M)) == [
        f"task 0 slurm_{job_id} 127.0.0.1",
        f"task 1 slurm_{job_id} 127.0.0.1",
    ]
    no_ipus = slurm.sbatch(wrap="env | grep -c ^IPUOF_ || true")
    assert slurm.wait_state(no_ipus, {"COMPLETED", "FAILED"}) == "COMPLETED"
    assert slurm.output(no_ipus).strip() == "0"
    slurm.check_settled()


@pytest.mark.parametrize(
    ("ipus", "advice"),
    [
        (3, "3 IPUs is not a partition size: ask for --gres=ipu:4"),
        (32, "32 IPUs is not a partition size: ask for --gres=ipu:64"),
        (0, "0 IPUs is not a partition size: ask for --gres=ipu:N with N one of 1, 2, 4, 8, 16"),
        (65, "65 IPUs is more than Slurm partition ipu has: ask for --gres=ipu:64 or fewer"),
        (128, "128 IPUs is more than Slurm partition ipu has: ask for --gres=ipu:64 or fewer"),
    ],
)
def test_a_size_v_ipu_cannot_make_is_refused_at_submission(
    slurm: SlurmPod, ipus: int, advice: str
) -> None:
    """sbatch fails at once with one line saying what to ask instead; nothing is queued."""
    before = slurm.slurm("squeue", "--noheader", "--states", "all", "--format", "%A")
    done = slurm.cluster.run("sbatch", f"--gres=ipu:{ipus}", "--wrap", "true", check=False)
    assert done.returncode == 1
    ours = [line for line in done.stderr.splitlines() if "vpod:" in line]
    assert ours == [f"sbatch: error: vpod: {ours[0].split('vpod: ', 1)[1]}"]
    assert advice in ours[0]
    assert slurm.slurm("squeue", "--noheader", "--states", "all", "--format", "%A") == before


def test_scancel_of_a_running_and_of_a_pending_job(slurm: SlurmPod) -> None:
    """The running job's partition is removed; the pending one never had one."""
    with AgentSampler(slurm):
        running = slurm.sbatch("--gres=ipu:64", wrap="sleep 300")
        slurm.wait_state(running, {"RUNNING"})
        pending = slurm.sbatch("--gres=ipu:4", wrap="sleep 300")
        wait_until(lambda: f"slurm_{running}" in slurm.partitions(), 30, "the partition")
        assert slurm.state(pending) == "PENDING"
        slurm.slurm("scancel", pending)
        slurm.slurm("scancel", running)
        assert slurm.wait_state(running, {"CANCELLED"}) == "CANCELLED"
        assert slurm.wait_state(pending, {"CANCELLED"}) == "CANCELLED"
        slurm.check_settled(timeout=30)
        assert slurm.job(pending)["Restarts"] == "0"


def test_a_job_whose_partition_cannot_be_placed_waits_then_runs(slurm: SlurmPod) -> None:
    """No aligned block free: the job goes back to the queue with the reason, then runs."""
    slurm.pod.run("vipu", "create", "partition", "blocker", "--size", "64")
    try:
        job_id = slurm.ipu_job(4, 0.5)
        wait_until(lambda: int(slurm.job(job_id).get("Restarts", "0")) >= 1, 60, "a requeue")
        wait_until(lambda: "AdminComment" in slurm.job(job_id), 30, "the reason")
        comment = slurm.slurm("scontrol", "show", "job", job_id)
        assert "vpod: no IPU partition yet" in comment
        assert "no aligned block of 4" in comment
        assert slurm.state(job_id) == "PENDING"
        assert f"slurm_{job_id}" not in slurm.partitions()
    finally:
        slurm.pod.run("vipu", "remove", "partition", "blocker")
    assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 120) == "COMPLETED"
    assert f"attached 4 slurm_{job_id}" in slurm.output(job_id)
    slurm.check_settled()
