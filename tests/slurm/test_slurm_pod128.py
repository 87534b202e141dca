"""A Slurm partition on a 128-IPU allocation: a job of 128 IPUs spans two IPU-Link domains."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .harness import TEST_SETTINGS, SlurmPod, slurm_pod

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module", name="slurm")
def slurm128_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmPod]:
    yield from slurm_pod(tmp_path_factory, TEST_SETTINGS, shape="pod128", ipus=128)


def test_a_128_ipu_job_attaches_all_its_ipus_and_256_is_refused(slurm: SlurmPod) -> None:
    """The node's GRES is the allocation's 128 IPUs; 128 is a size, 256 is asked down to 128.

    A partition over 64 IPUs has one GCD per 64 (IPUOF_VIPU_API_GCD_ID=0 names the first);
    the job attaches the IPUs of both.
    """
    job_id = slurm.ipu_job(128, 0.5, "--export=ALL,ALL_GCDS=1")
    assert slurm.wait_state(job_id, {"COMPLETED", "FAILED"}, 180) == "COMPLETED", slurm.output(
        job_id
    )
    assert f"attached 128 slurm_{job_id}" in slurm.output(job_id)
    done = slurm.cluster.run("sbatch", "--gres=ipu:256", "--wrap", "true", check=False)
    assert done.returncode == 1
    assert "ask for --gres=ipu:128 or fewer (sizes: 1, 2, 4, 8, 16, 64, 128)" in done.stderr
    slurm.check_settled()
