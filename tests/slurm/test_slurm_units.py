"""The integration's pure parts: settings, GRES parsing, valid sizes, exports, the job use-cases."""

from __future__ import annotations

import asyncio
import os
import pwd
from pathlib import Path

import pytest

from vpod.client.config import parse_hcl
from vpod.integrations.slurm.bridge_protocol import ipus_in_tres
from vpod.integrations.slurm.hooks import simple_values, task_prolog_lines
from vpod.integrations.slurm.jobs import JobPartitions, StartRefused
from vpod.integrations.slurm.settings import (
    SettingsError,
    SlurmSettings,
    parse_settings,
    render_settings,
)
from vpod.integrations.slurm.slurm_conf import IpuPartition, gres_conf, job_submit_lua, valid_sizes
from vpod.integrations.slurm.vipu_api import PartitionFailure


class FakeApi:
    """V-IPU as the jobs logic sees it; ``refuse`` makes creates fail with that sentence."""

    def __init__(self, *, secure: bool = False) -> None:
        self.partitions: dict[str, tuple[int, str]] = {}
        self.refuse = ""
        self.secure = secure
        """Whether V-IPU mints keys (a --secure controller)."""
        self.keys: dict[str, str] = {}
        """Key id -> partition, of the keys minted and not revoked."""
        self.calls: list[str] = []
        self.refuse_removal = False

    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        if self.refuse:
            raise PartitionFailure(self.refuse)
        self.partitions[partition_id] = (size, allocation)

    async def remove(self, partition_id: str) -> bool:
        self.calls.append(f"remove {partition_id}")
        if self.refuse_removal:
            raise PartitionFailure(f"cannot remove partition {partition_id}: controller busy")
        # V-IPU deletes a partition's keys with it.
        self.keys = {k: p for k, p in self.keys.items() if p != partition_id}
        return self.partitions.pop(partition_id, None) is not None

    async def mint_key(self, partition_id: str, key_id: str) -> str | None:
        self.calls.append(f"mint {key_id}")
        if not self.secure:
            return None
        assert partition_id in self.partitions
        self.keys[key_id] = partition_id
        return f"key-of-{key_id}"

    async def revoke_key(self, key_id: str) -> bool:
        self.calls.append(f"revoke {key_id}")
        return self.keys.pop(key_id, None) is not None

    async def list_ids(self) -> list[str]:
        return list(self.partitions)

    async def close(self) -> None:
        pass


def test_settings_round_trip_and_refuse_unknown_keys() -> None:
    settings = SlurmSettings(partition_prefix="job_", allocations={"ipu": "a1"}, ipuof_api_port=1)
    import tomllib

    assert parse_settings(tomllib.loads(render_settings(settings)), "x") == settings
    with pytest.raises(SettingsError, match="unknown key 'prefix'"):
        parse_settings({"prefix": "x"}, "f.toml")
    with pytest.raises(SettingsError, match="ipuof_api_port must be a int"):
        parse_settings({"ipuof_api_port": "8090"}, "f.toml")
    with pytest.raises(SettingsError, match="partition_prefix"):
        parse_settings({"partition_prefix": "a b"}, "f.toml")


def test_partition_ids_map_back_to_jobs_only_for_our_prefix() -> None:
    settings = SlurmSettings(partition_prefix="slurm_")
    assert settings.partition_id("42") == "slurm_42"
    assert settings.job_of("slurm_42") == "42"
    assert settings.job_of("slurm_x") is None
    assert settings.job_of("p1") is None


@pytest.mark.parametrize(
    ("tres", "ipus"),
    [
        ("gres:ipu:4", 4),
        ("gres/ipu:8", 8),
        ("gres:ipu:bow:2", 2),
        ("gres:gpu:1", 0),
        ("gres:gpu:1,gres:ipu:16", 16),
        ("N/A", 0),
        ("", 0),
    ],
)
def test_ipus_are_read_from_tres_per_node(tres: str, ipus: int) -> None:
    assert ipus_in_tres(tres) == ipus


def test_valid_sizes_follow_the_allocation() -> None:
    assert valid_sizes(16) == [1, 2, 4, 8, 16]
    assert valid_sizes(32) == [1, 2, 4, 8, 16]
    assert valid_sizes(64) == [1, 2, 4, 8, 16, 64]
    assert valid_sizes(256) == [1, 2, 4, 8, 16, 64, 128, 192, 256]


def test_generated_config_names_each_partition_and_node() -> None:
    partitions = [IpuPartition("ipu", "n1", "default", 64), IpuPartition("small", "n2", "a2", 16)]
    lua = job_submit_lua(partitions, "ipu")
    assert '["ipu"] = {1, 2, 4, 8, 16, 64},' in lua
    assert '["small"] = {1, 2, 4, 8, 16},' in lua
    assert 'local DEFAULT_PARTITION = "ipu"' in lua
    assert "NodeName=n1 Name=ipu Count=64" in gres_conf(partitions)


def test_task_prolog_exports_only_for_jobs_with_ipus() -> None:
    settings = SlurmSettings(ipuof_api_host="h", ipuof_api_port=9, ipuof_timeout_s=7)
    values = simple_values(render_settings(settings))
    assert values is not None
    assert task_prolog_lines(values, "5", 0) == []
    assert task_prolog_lines(values, "5", 4) == [
        "export IPUOF_VIPU_API_HOST=h",
        "export IPUOF_VIPU_API_PORT=9",
        "export IPUOF_VIPU_API_PARTITION_ID=slurm_5",
        "export IPUOF_VIPU_API_GCD_ID=0",
        "export IPUOF_VIPU_API_TIMEOUT=7",
    ]


def test_a_job_gets_a_partition_in_its_slurm_partitions_allocation_and_loses_it_at_the_end() -> (
    None
):
    api = FakeApi()
    settings = SlurmSettings(default_allocation="big", allocations={"small": "a2"})
    jobs = JobPartitions(settings, api, schedule_retries=False)

    async def scenario() -> None:
        assert "ACTIVE" in await jobs.start("7", "small", 4)
        assert api.partitions == {"slurm_7": (4, "a2")}
        assert "no IPUs" in await jobs.start("8", "small", 0)
        await jobs.start("9", "other", 1)
        assert api.partitions["slurm_9"] == (1, "big")
        assert await jobs.end("7") == "partition slurm_7 removed"
        assert await jobs.end("7") == "partition slurm_7 was already gone"
        api.refuse = "cannot create partition slurm_10: no aligned block"
        with pytest.raises(StartRefused, match="no aligned block"):
            await jobs.start("10", "small", 4)
        with pytest.raises(StartRefused, match="3 IPUs is not a partition size"):
            await jobs.start("11", "small", 3)

    asyncio.run(scenario())


def test_the_hooks_quick_reader_agrees_with_toml_or_defers_to_it() -> None:
    """simple_values reads what render_settings writes exactly as tomllib does, else says None."""
    import tomllib

    text = render_settings(SlurmSettings(socket="/run/x.sock", allocations={"ipu": "a"}))
    quick = simple_values(text)
    assert quick is not None
    full = tomllib.loads(text)
    del full["allocations"]
    assert quick == full
    assert simple_values('socket = "a\\"b"') is None
    assert simple_values("ports = [1, 2]") is None


def test_a_secure_jobs_key_is_minted_written_for_its_user_and_goes_with_the_partition(
    tmp_path: Path,
) -> None:
    settings = SlurmSettings(
        credentials_dir=str(tmp_path / "jobs"),
        ipuof_api_host="vipu.example",
        ipuof_api_port=8090,
        default_allocation="a1",
    )
    api = FakeApi(secure=True)
    jobs = JobPartitions(settings, api, schedule_retries=False)
    keyfile = tmp_path / "jobs" / "slurm_5.vipu-cli.hcl"

    async def scenario() -> None:
        assert "ACTIVE" in await jobs.start("5", "ipu", 4, os.getuid())
        assert api.keys == {"slurm_5.job": "slurm_5"}
        assert keyfile.stat().st_mode & 0o777 == 0o600
        assert keyfile.stat().st_uid == os.getuid()
        assert (tmp_path / "jobs").stat().st_mode & 0o777 == 0o711
        assert parse_hcl(keyfile.read_text()) == {
            "api-host": "vipu.example",
            "api-port": "8090",
            "api-user-id": "slurm_5.job",
            "api-access-key": "key-of-slurm_5.job",
        }
        assert "removed" in await jobs.end("5")
        assert not keyfile.exists()
        assert api.keys == {}
        assert api.calls == ["mint slurm_5.job", "remove slurm_5"]  # the key goes with it
        # A removal that fails revokes the key all the same.
        await jobs.start("6", "ipu", 4, os.getuid())
        api.refuse_removal = True
        with pytest.raises(PartitionFailure):
            await jobs.end("6")
        assert api.keys == {}
        assert api.calls[-1] == "revoke slurm_6.job"

    asyncio.run(scenario())


def test_an_open_controller_gives_jobs_no_key(tmp_path: Path) -> None:
    settings = SlurmSettings(credentials_dir=str(tmp_path / "jobs"), default_allocation="a1")
    api = FakeApi()
    jobs = JobPartitions(settings, api, schedule_retries=False)

    async def scenario() -> None:
        assert "ACTIVE" in await jobs.start("6", "ipu", 4, os.getuid())
        assert "ACTIVE" in await jobs.start("7", "ipu", 4, os.getuid())

    asyncio.run(scenario())
    assert api.keys == {}
    assert not (tmp_path / "jobs").exists()
    # Told once that the controller is open, the bridge stops asking for a while.
    assert [c for c in api.calls if c.startswith("mint")] == ["mint slurm_6.job"]


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a file to another user needs root")
def test_the_key_file_belongs_to_the_jobs_user(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    settings = SlurmSettings(credentials_dir=str(tmp_path / "jobs"), default_allocation="a1")
    jobs = JobPartitions(settings, FakeApi(secure=True), schedule_retries=False)
    asyncio.run(jobs.start("7", "ipu", 1, nobody.pw_uid))
    stat = (tmp_path / "jobs" / "slurm_7.vipu-cli.hcl").stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o777) == (nobody.pw_uid, nobody.pw_gid, 0o600)
