"""Jobs on the secure default: each job's tasks authenticate with a key for its own partition.

A pod that authenticates every call (as ``vpod up`` and ``vpod slurm up`` run
by default) and a one-node Slurm whose integration is the V-IPU user
``slurm``. Inside ``sbatch``, ``srun`` and ``salloc`` jobs an IPUoF
application attaches its IPUs, ``vipu get partition`` and ``vpod-run`` work,
and a job sees no other job's partition; the key file is the job user's
alone and goes, with the key, when the job ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.e2e.conftest as e2e
from vpod.client import UserClient
from vpod.client.errors import Unauthenticated

from .harness import IPU_JOB, TEST_SETTINGS, SlurmPod, slurm_pod, wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmPod]:
    # A pod16: the scenarios need 8 IPUs at most, and it starts in a quarter of a pod64's time.
    # A secure start also makes the administrator's and the default user's keys (scrypt): on
    # a loaded shared machine that took over the usual 90 s, so this pod gets longer.
    ready_timeout = e2e.READY_TIMEOUT_S
    e2e.READY_TIMEOUT_S = max(ready_timeout, 300)
    try:
        yield from slurm_pod(tmp_path_factory, TEST_SETTINGS, shape="pod16", ipus=16, secure=True)
    finally:
        e2e.READY_TIMEOUT_S = ready_timeout


def _py(slurm: SlurmPod) -> str:
    return str(slurm.cluster.bin_dir / "python")


def _tool(slurm: SlurmPod, name: str) -> str:
    return str(slurm.cluster.bin_dir / name)


def _finished(slurm: SlurmPod, job_id: str) -> str:
    return slurm.wait_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, 120)


def test_a_batch_job_attaches_reads_and_runs_vpod_run_with_its_own_key(secure: SlurmPod) -> None:
    vipu, run = _tool(secure, "vipu"), _tool(secure, "vpod-run")
    script = " && ".join(
        [
            f"{_py(secure)} {IPU_JOB} 0",
            f"{vipu} get partition $IPUOF_VIPU_API_PARTITION_ID",
            f"{vipu} list partitions --json",
            f"{run} --num-replicas 4 --ipus-per-replica 1"
            f" --vipu-partition $IPUOF_VIPU_API_PARTITION_ID -- {_py(secure)} {IPU_JOB} 0",
            "stat -c 'mode=%a uid=%u' $VIPU_CLI_CONFIG",
            "echo user=$VIPU_CLI_API_USER_ID key=$VIPU_CLI_API_ACCESS_KEY",
        ]
    )
    job = secure.sbatch("--gres=ipu:4", wrap=script)
    assert _finished(secure, job) == "COMPLETED", secure.output(job)
    out = secure.output(job)
    partition = f"slurm_{job}"
    assert f"attached 4 {partition}" in out
    assert out.count(f"attached 4 {partition}") == 2, out  # the payload, then under vpod-run
    listing = _json_in(out)
    assert [p["id"] for p in listing["partitions"]] == [partition]
    assert "mode=600 uid=0" in out
    user, key = re.search(r"user=(\S+) key=(\S+)", out).groups()  # type: ignore[union-attr]
    assert user == f"{partition}.job"
    # The job is over: its file is gone and its key no longer works.
    keyfile = Path(secure.cluster.settings.credentials_dir) / f"{partition}.vipu-cli.hcl"
    wait_until(lambda: not keyfile.exists(), 30, "the job's key file to go")
    with UserClient.from_config(
        env={},
        api_host="127.0.0.1",
        api_port=secure.pod.user_port,
        api_user_id=user,
        api_access_key=key,
    ) as client:
        wait_until(lambda: _refused(client), 30, "the job's key to be revoked")


def _json_in(out: str) -> dict[str, Any]:
    """The first JSON object printed on a line of its own in ``out``."""
    found, _ = json.JSONDecoder().raw_decode(out[out.index("{\n") :])
    assert isinstance(found, dict)
    return found


def _refused(client: UserClient) -> bool:
    try:
        client.list_partitions()
    except Unauthenticated:
        return True
    return False


def test_srun_and_salloc_jobs_attach_their_ipus(secure: SlurmPod) -> None:
    step = secure.cluster.run("srun", "--gres=ipu:4", _py(secure), str(IPU_JOB), "0", check=False)
    assert step.returncode == 0, step.stderr
    assert re.search(r"attached 4 slurm_\d+", step.stdout), step.stdout
    alloc = secure.cluster.run(
        "salloc", "--gres=ipu:1", "srun", _py(secure), str(IPU_JOB), "0", check=False
    )
    assert alloc.returncode == 0, alloc.stderr
    assert re.search(r"attached 1 slurm_\d+", alloc.stdout), alloc.stdout


def test_ipus_option_on_srun_sbatch_and_salloc(secure: SlurmPod) -> None:
    """--ipus=N (the SPANK plugin built at set-up) asks for N IPUs as --gres=ipu:N does."""
    if secure.cluster.spank_plugin is None:
        pytest.skip(f"no --ipus plugin here: {secure.cluster.spank_missing}")
    step = secure.cluster.run("srun", "--ipus=4", _py(secure), str(IPU_JOB), "0", check=False)
    assert step.returncode == 0, step.stderr
    assert re.search(r"attached 4 slurm_\d+", step.stdout), step.stdout
    job = secure.sbatch("--ipus=8", wrap=f"{_py(secure)} {IPU_JOB} 0")
    assert _finished(secure, job) == "COMPLETED", secure.output(job)
    assert f"attached 8 slurm_{job}" in secure.output(job)
    assert "gres/ipu:8" in secure.job(job).get("TresPerNode", "") or "ipu:8" in str(secure.job(job))
    alloc = secure.cluster.run(
        "salloc", "--ipus=2", "srun", _py(secure), str(IPU_JOB), "0", check=False
    )
    assert alloc.returncode == 0, alloc.stderr
    assert re.search(r"attached 2 slurm_\d+", alloc.stdout), alloc.stdout
    before = secure.queue()
    for bad, words in (
        ("--ipus=3", "3 IPUs is not a partition size"),
        ("--ipus=0", "0 IPUs is not a partition size"),
        ("--ipus=lots", "--ipus=lots is not a number of IPUs"),
    ):
        refused = secure.cluster.run("sbatch", bad, "--wrap", "true", check=False)
        assert refused.returncode != 0, bad
        assert words in refused.stderr, refused.stderr
    both = secure.cluster.run("sbatch", "--ipus=4", "--gres=ipu:8", "--wrap", "true", check=False)
    assert both.returncode != 0
    assert "not both" in both.stderr
    # nothing refused was queued (jobs that were there may have left meanwhile)
    assert set(_ids(secure.queue())) <= set(_ids(before))


def test_a_job_cannot_see_another_running_jobs_partition(secure: SlurmPod) -> None:
    holder = secure.ipu_job(4, 60)
    wait_until(lambda: "attached 4" in secure.output(holder), 90, "the first job to attach")
    other = f"slurm_{holder}"
    vipu = _tool(secure, "vipu")
    probe = "; ".join(
        [
            f"{vipu} get partition {other}; echo get-rc=$?",
            f"{vipu} list partitions --json",
            f"{vipu} reset partition {other}; echo reset-rc=$?",
            f"{vipu} remove partition $IPUOF_VIPU_API_PARTITION_ID; echo remove-rc=$?",
            f"IPUOF_VIPU_API_PARTITION_ID={other} {_py(secure)} {IPU_JOB} 0; echo attach-rc=$?",
        ]
    )
    try:
        done = secure.cluster.run("srun", "--gres=ipu:1", "bash", "-c", probe, check=False)
        assert done.returncode == 0, done.stderr
        out = done.stdout + done.stderr
        assert "get-rc=1" in out, out
        assert f"partition {other} does not exist" in out, out
        assert "reset-rc=1" in out, out
        assert "remove-rc=1" in out, out
        assert "not remove it" in out, out
        assert "attach-rc=3" in out, out
        listed = _json_in(done.stdout)
        assert [p["id"] for p in listed["partitions"]] != []
        assert other not in [p["id"] for p in listed["partitions"]]
    finally:
        secure.slurm("scancel", holder)
    assert _finished(secure, holder) in {"CANCELLED", "COMPLETED"}
    assert "attached 4" in secure.output(holder)


def test_every_partition_and_key_is_gone_afterwards(secure: SlurmPod) -> None:
    wait_until(lambda: not secure.queue(), 120, "the queue to drain")
    wait_until(
        lambda: not [p for p in secure.partitions() if p.startswith("slurm_")],
        60,
        "every job partition removed",
    )
    listed = secure.pod.run(
        "vipu", "--config", str(secure.cluster.settings.vipu_config), "list", "partitions"
    )
    assert listed.returncode == 0, listed.stderr
    keys = Path(secure.cluster.settings.credentials_dir)
    assert keys.stat().st_mode & 0o777 == 0o711
    assert list(keys.iterdir()) == []
    with UserClient.from_config(secure.cluster.settings.vipu_config, env={}) as integration:
        assert integration.list_partition_keys() == []


def _ids(queue: list[str]) -> list[str]:
    """Job ids of ``squeue`` lines ("<id> <state>")."""
    return [line.split()[0] for line in queue if line.strip()]
