"""Slurm accounting with slurmdbd on MariaDB: each job's IPUs are in its AllocTRES."""

from __future__ import annotations

import pytest

from vpod.integrations.slurm.local_accounting import missing_accounting

from .harness import SlurmPod, wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]


def test_sacct_shows_the_ipus_of_each_job(slurm: SlurmPod) -> None:
    """AccountingStorageTRES=gres/ipu: sacct's AllocTRES has gres/ipu=N per job."""
    reason = missing_accounting()
    if reason:
        pytest.skip(f"no Slurm accounting here: {reason}")
    jobs = {size: slurm.ipu_job(size, 0.2) for size in (2, 8)}
    for job_id in jobs.values():
        assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 120) == "COMPLETED"

    def alloc_tres(job_id: str) -> str:
        out = slurm.slurm("sacct", "-j", job_id, "-X", "-n", "-P", "-o", "AllocTRES")
        return out.strip()

    for size, job_id in jobs.items():
        wait_until(lambda j=job_id: "gres/ipu" in alloc_tres(j), 60, f"job {job_id} in sacct")
        assert f"gres/ipu={size}" in alloc_tres(job_id).split(",")
    slurm.check_settled()
