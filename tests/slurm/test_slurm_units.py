"""The integration's pure parts: settings, GRES parsing, valid sizes, exports, the job use-cases."""

from __future__ import annotations

import asyncio

import pytest

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

    def __init__(self) -> None:
        self.partitions: dict[str, tuple[int, str]] = {}
        self.refuse = ""

    async def create(self, partition_id: str, size: int, allocation: str) -> None:
        if self.refuse:
            raise PartitionFailure(self.refuse)
        self.partitions[partition_id] = (size, allocation)

    async def remove(self, partition_id: str) -> bool:
        return self.partitions.pop(partition_id, None) is not None

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
