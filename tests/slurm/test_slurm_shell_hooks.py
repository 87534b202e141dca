"""The bash hooks and the bridge's token-checked TCP port, against a bridge on a stand-in V-IPU.

``squeue`` is a stand-in script here (Slurm's command is the boundary); the
e2e tests in this package run the same hooks under a real slurmctld/slurmd.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from vpod.integrations.slurm.bridge import Bridge, write_hook_file
from vpod.integrations.slurm.bridge_protocol import ipus_in_tres
from vpod.integrations.slurm.hooks import read_assigned, simple_values, task_prolog_lines
from vpod.integrations.slurm.jobs import JobPartitions
from vpod.integrations.slurm.settings import SlurmSettings, render_settings
from vpod.integrations.slurm.shell_hooks import write_hooks

from .test_slurm_units import FakeApi

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
TOKEN = "0123abcd" * 8


def fake_squeue(bin_dir: Path, tres: str, exit_code: int = 0) -> None:
    """A squeue that prints ``%A %U %b`` / ``%b`` rows for the jobs asked, as Slurm's does."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    script.write_text(
        "#!/bin/bash\n"
        'jobs=""; fmt=""\n'
        "while [ $# -gt 0 ]; do case $1 in --jobs) jobs=$2; shift;; --format) fmt=$2; shift;;"
        " esac; shift; done\n"
        f"[ {exit_code} = 0 ] || {{ echo 'squeue: error: slurmctld down'; exit {exit_code}; }}\n"
        f'for j in ${{jobs//,/ }}; do case $fmt in "%b") echo "{tres}";;'
        f' "%A %U %b") echo "$j $(id -u) {tres}";; *) echo "$j {tres}";; esac; done\n'
    )
    script.chmod(0o755)


def setup(tmp_path: Path, tres: str, exit_code: int = 0) -> tuple[SlurmSettings, dict[str, Path]]:
    fake_squeue(tmp_path / "slurm-bin", tres, exit_code)
    settings = SlurmSettings(
        socket=str(tmp_path / "bridge.sock"),
        ipuof_api_host="vipu.example",
        ipuof_api_port=8090,
        ipuof_timeout_s=30,
        slurm_bin_dir=str(tmp_path / "slurm-bin"),
        default_allocation="default",
        credentials_dir=str(tmp_path / "jobs"),
    )
    config = tmp_path / "slurm.toml"
    config.write_text(render_settings(settings))
    fallback_bin = tmp_path / "python-hooks"
    fallback_bin.mkdir()
    for program in ("vpod-slurm-prolog", "vpod-slurm-epilog", "vpod-slurm-task-prolog"):
        stand_in = fallback_bin / program
        stand_in.write_text(f'#!/bin/sh\necho "fallback {program} $*"\n')
        stand_in.chmod(0o755)
    return settings, write_hooks(tmp_path / "hooks", config, fallback_bin)


async def run_hook(path: Path, job_id: str, partition: str = "ipu") -> tuple[int, str, str]:
    env = {"SLURM_JOB_ID": job_id, "SLURM_JOB_PARTITION": partition, "PATH": os.defpath}
    proc = await asyncio.create_subprocess_exec(
        str(path), env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.parametrize(
    "tres", ["gres:ipu:4", "gres/ipu:8", "gres:ipu:bow:2", "gres:gpu:1,gres:ipu:16", "N/A", ""]
)
def test_task_prolog_prints_what_the_python_hook_prints(tmp_path: Path, tres: str) -> None:
    settings, hooks = setup(tmp_path, tres)
    code, out, _ = asyncio.run(run_hook(hooks["task_prolog"], "42"))
    values = simple_values(render_settings(settings))
    assert values is not None
    assert code == 0
    assert out.splitlines() == task_prolog_lines(values, "42", ipus_in_tres(tres))


def test_task_prolog_without_squeue_runs_the_task_without_variables(tmp_path: Path) -> None:
    _, hooks = setup(tmp_path, "gres:ipu:4", exit_code=1)
    code, out, _ = asyncio.run(run_hook(hooks["task_prolog"], "42"))
    assert code == 0
    reason = "cannot read job 42: squeue: error: slurmctld down"
    assert out == f"print vpod-slurm-task-prolog: {reason}\n"


def test_hooks_hand_jobs_to_the_bridge_with_its_token_and_fall_back_without_it(
    tmp_path: Path,
) -> None:
    settings, hooks = setup(tmp_path, "gres:ipu:4")
    api = FakeApi()
    jobs = JobPartitions(settings, api, schedule_retries=False, remove_in_background=True)

    async def scenario() -> None:
        # No bridge yet: the Python hook does the work.
        code, out, _ = await run_hook(hooks["prolog"], "7")
        assert (code, out.split()[:2]) == (0, ["fallback", "vpod-slurm-prolog"])
        server = await asyncio.start_server(
            functools.partial(Bridge(settings, jobs).serve_connection, token=TOKEN),
            "127.0.0.1",
            0,
        )
        port = server.sockets[0].getsockname()[1]
        write_hook_file(Path(settings.hook_file), port, TOKEN)
        assert Path(settings.hook_file).stat().st_mode & 0o777 == 0o600
        async with server:
            code, _, err = await run_hook(hooks["prolog"], "7")
            assert code == 0, err
            assert "vpod-slurm-prolog: job 7: partition slurm_7 of 4 IPUs is ACTIVE" in err
            assert api.partitions == {"slurm_7": (4, "default")}
            code, _, err = await run_hook(hooks["epilog"], "7")
            assert code == 0, err
            assert "job 7: partition slurm_7 is being removed" in err
            await jobs.drain()
            assert api.partitions == {}
            api.refuse = "cannot create partition slurm_8: no aligned block of 4 free IPUs"
            code, _, err = await run_hook(hooks["prolog"], "8")
            assert code == 1
            assert "job 8: cannot create partition slurm_8: no aligned block" in err
            # Without the token the bridge does nothing.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(json.dumps({"op": "end", "job_id": "7", "token": "x"}).encode() + b"\n")
            answer = json.loads(await reader.readline())
            writer.close()
            assert answer == {"ok": False, "error": "refused: wrong or missing token"}

    asyncio.run(scenario())


def test_a_start_waits_for_the_removals_begun_before_it() -> None:
    """The epilog returns at once; the next job's create comes only after the IPUs are free."""
    order: list[str] = []

    class SlowRemoval(FakeApi):
        async def remove(self, partition_id: str) -> bool:
            await asyncio.sleep(0.2)
            order.append(f"removed {partition_id}")
            return await super().remove(partition_id)

        async def create(self, partition_id: str, size: int, allocation: str) -> None:
            order.append(f"created {partition_id}")
            await super().create(partition_id, size, allocation)

    api = SlowRemoval()
    jobs = JobPartitions(SlurmSettings(), api, schedule_retries=False, remove_in_background=True)

    async def scenario() -> None:
        await jobs.start("1", "ipu", 64)
        assert await jobs.end("1") == "partition slurm_1 is being removed"
        assert api.partitions  # not yet
        await jobs.start("2", "ipu", 64)
        # A requeued job ends and starts again under the same id.
        await jobs.end("2")
        await jobs.start("2", "ipu", 64)
        await jobs.drain()

    asyncio.run(scenario())
    assert order == [
        "created slurm_1",
        "removed slurm_1",
        "created slurm_2",
        "removed slurm_2",
        "created slurm_2",
    ]
    assert api.partitions == {"slurm_2": (64, "")}


def test_task_prolog_exports_the_jobs_key_when_its_file_is_readable(tmp_path: Path) -> None:
    """With the job's key file (a secure controller) both TaskProlog hooks export
    VIPU_CLI_CONFIG and the key's id and key; without it, nothing of the kind."""
    settings, hooks = setup(tmp_path, "gres:ipu:4")
    values = simple_values(render_settings(settings))
    assert values is not None
    code, out, _ = asyncio.run(run_hook(hooks["task_prolog"], "42"))
    assert code == 0
    assert not [line for line in out.splitlines() if "VIPU_CLI" in line]
    api = FakeApi(secure=True)
    jobs = JobPartitions(settings, api, schedule_retries=False)
    asyncio.run(jobs.start("42", "ipu", 4, os.getuid()))
    keyfile = Path(settings.credentials_dir) / "slurm_42.vipu-cli.hcl"
    code, out, _ = asyncio.run(run_hook(hooks["task_prolog"], "42"))
    assert code == 0
    assert out.splitlines() == task_prolog_lines(values, "42", 4)
    assert f"export VIPU_CLI_CONFIG={keyfile}" in out.splitlines()
    assert "export VIPU_CLI_API_USER_ID=slurm_42.job" in out.splitlines()
    assert "export VIPU_CLI_API_ACCESS_KEY=key-of-slurm_42.job" in out.splitlines()


@pytest.mark.parametrize("mode", ["static", "reconfigurable"])
@pytest.mark.parametrize(
    "assigned",
    [
        "job=42\npartition=slurm_static4_1\nipus=4\nfirst=0\n",
        "job=42\npartition=slurm_shared\nipus=2\nfirst=4\ndevice=18\n",
        None,
    ],
)
def test_task_prolog_exports_the_assigned_partition_as_the_python_hook_does(
    tmp_path: Path, mode: str, assigned: str | None
) -> None:
    """Static and reconfigurable modes: the job's ``.assigned`` file, not squeue, says what
    it holds (squeue here would say something else); no file: no IPUs, no variables."""
    settings, hooks = setup(tmp_path, "gres:ipu:64")
    settings = replace(
        settings,
        mode=mode,
        static_partitions="4:2" if mode == "static" else "",
    )
    (tmp_path / "slurm.toml").write_text(render_settings(settings))
    if assigned is not None:
        Path(settings.credentials_dir).mkdir()
        (Path(settings.credentials_dir) / "slurm_42.assigned").write_text(assigned)
    values = simple_values(render_settings(settings))
    assert values is not None
    code, out, _ = asyncio.run(run_hook(hooks["task_prolog"], "42"))
    assert code == 0
    held = read_assigned(values, "42")
    expected = task_prolog_lines(values, "42", int(held.get("ipus", "0")), held)
    assert out.splitlines() == expected
    if assigned is None:
        assert out == ""
    else:
        partition = assigned.split("partition=")[1].split("\n")[0]
        assert f"export IPUOF_VIPU_API_PARTITION_ID={partition}" in expected
        assert ("export VPOD_IPU_DEVICE_ID=18" in expected) == ("device=" in assigned)
