"""``vpod slurm up``: one command brings up the pod and a one-node Slurm, and says what to type."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vpod.integrations.slurm.local_cluster import missing_requirements

from .harness import wait_until

pytestmark = [pytest.mark.system, pytest.mark.e2e, pytest.mark.slow]
BIN = Path(sys.executable).parent


def test_vpod_slurm_up_secure_runs_a_job_with_its_own_user(tmp_path: Path) -> None:
    """The printed commands work; the integration's V-IPU key is in a file only root reads."""
    reason = missing_requirements()
    if reason:
        pytest.skip(f"cannot run Slurm here: {reason}")
    proc = subprocess.Popen(
        [
            str(BIN / "vpod"),
            "slurm",
            "up",
            "--data-dir",
            str(tmp_path),
            "--port",
            "0",
            "--admin-port",
            "0",
            "--http-port",
            "0",
            "--secure",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
    try:
        wait_until(lambda: any("vpod slurm is up" in x for x in lines), 180, "vpod slurm up")
        ready = next(x for x in lines if "vpod slurm is up" in x)
        match = re.search(r"export SLURM_CONF=(\S+)", ready)
        assert match, ready
        assert "sbatch --gres=ipu:8" in ready
        key_file = tmp_path / "slurm.vipu-cli.hcl"
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert "api-access-key" in key_file.read_text()
        env = dict(os.environ, SLURM_CONF=match[1], PATH=os.environ["PATH"] + ":/usr/sbin")
        out = tmp_path / "job.out"
        job = subprocess.run(
            [
                "sbatch",
                "--parsable",
                "--gres=ipu:8",
                f"--output={out}",
                "--wrap",
                "env | grep ^IPUOF_VIPU_API_PARTITION_ID",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        wait_until(lambda: out.exists() and out.read_text().strip(), 120, "the job's output")
        assert out.read_text().strip() == f"IPUOF_VIPU_API_PARTITION_ID=slurm_{job}"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines)
    assert "vpod slurm stopped" in "".join(lines)


def test_vpod_slurm_up_static_mode_makes_its_partitions_and_runs_the_printed_job(
    tmp_path: Path,
) -> None:
    """--mode static: the ready line names the mode and the GRES to ask; the job gets one."""
    reason = missing_requirements()
    if reason:
        pytest.skip(f"cannot run Slurm here: {reason}")
    proc = subprocess.Popen(
        [
            str(BIN / "vpod"),
            "slurm",
            "up",
            "--data-dir",
            str(tmp_path),
            "--pod",
            "pod16",
            "--port",
            "0",
            "--admin-port",
            "0",
            "--http-port",
            "0",
            "--open",
            "--mode",
            "static",
            "--static-partitions",
            "1:2,4:1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
    try:
        wait_until(lambda: any("vpod slurm is up" in x for x in lines), 180, "vpod slurm up")
        ready = next(x for x in lines if "vpod slurm is up" in x)
        assert "mode static: static partitions (2 of 1 IPUs, 1 of 4 IPUs)" in ready
        assert "sbatch --gres=vipu:1:1" in ready
        match = re.search(r"export SLURM_CONF=(\S+)", ready)
        assert match, ready
        written = (Path(match[1]).parent / "vpod-slurm.toml").read_text()
        assert 'mode = "static"' in written
        assert 'static_partitions = "1:2,4:1"' in written
        env = dict(os.environ, SLURM_CONF=match[1], PATH=os.environ["PATH"] + ":/usr/sbin")
        out = tmp_path / "job.out"
        subprocess.run(
            [
                "sbatch",
                "--gres=vipu:1:1",
                f"--output={out}",
                "--wrap",
                "env | grep ^IPUOF_VIPU_API_PARTITION_ID",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        wait_until(lambda: out.exists() and out.read_text().strip(), 120, "the job's output")
        assert out.read_text().strip() in {
            "IPUOF_VIPU_API_PARTITION_ID=slurm_static1_0",
            "IPUOF_VIPU_API_PARTITION_ID=slurm_static1_1",
        }
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    assert proc.returncode == 0, "".join(lines)
