"""The static and reconfigurable modes without Slurm: settings, assignments, generated config."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from vpod.domain.ipuof import device_listing
from vpod.integrations.slurm import assignments
from vpod.integrations.slurm.assignments import Assignment, Assignments, NoneFree, device_id
from vpod.integrations.slurm.bridge_protocol import static_in_tres
from vpod.integrations.slurm.hooks import task_prolog_lines
from vpod.integrations.slurm.lasting_jobs import LastingPartitions
from vpod.integrations.slurm.settings import (
    SettingsError,
    parse_settings,
    render_settings,
)
from vpod.integrations.slurm.slurm_conf import (
    IpuPartition,
    gres_conf,
    integration_lines,
    job_submit_lua,
    node_gres,
)
from vpod.integrations.slurm.vipu_api import PartitionFailure

from .test_slurm_units import FakeApi

BIN = Path(sys.executable).parent


def test_the_mode_defaults_to_dynamic_and_round_trips_through_the_file() -> None:
    assert parse_settings({}, "t.toml").mode == "dynamic"
    static = parse_settings({"mode": "static", "static_partitions": "1:4, 4:2"}, "t.toml")
    assert static.static_layout() == [(1, 4), (4, 2)]
    assert parse_settings(_toml(render_settings(static)), "again") == static
    assert 'mode = "static"' in render_settings(static)
    assert 'static_partitions = "1:4, 4:2"' in render_settings(static)
    shared = parse_settings({"mode": "reconfigurable", "shared_size": 8}, "t.toml")
    assert shared.shared_partition_id == "slurm_shared"
    assert "shared_size = 8" in render_settings(shared)


def _toml(text: str) -> dict[str, object]:
    import tomllib

    return tomllib.loads(text)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"mode": "elastic"}, "mode must be one of dynamic, static, reconfigurable, not 'elastic'"),
        ({"mode": "static"}, "static_partitions: no partitions listed: give <size>:<count>"),
        ({"mode": "static", "static_partitions": "4"}, "'4' is not <size>:<count>"),
        ({"mode": "static", "static_partitions": "3:2"}, "3 IPUs is not a partition size"),
        ({"mode": "static", "static_partitions": "4:0"}, "the count must be at least 1"),
        ({"mode": "static", "static_partitions": "4:1,4:2"}, "size 4 is listed twice"),
        ({"mode": "static", "static_partitions": "128:1"}, "128 IPUs is not a partition size"),
        ({"static_partitions": "4:2"}, "static_partitions is set but mode is dynamic: set mode"),
        ({"mode": "reconfigurable", "shared_size": 32}, "shared_size must be one of"),
        ({"mode": "reconfigurable", "shared_size": 128}, "one IPU-Link domain"),
        ({"mode": 3}, "mode must be a str, not 3"),
    ],
)
def test_a_bad_mode_configuration_is_refused_naming_the_key(
    values: dict[str, object], words: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        parse_settings(values, "/etc/vpod/slurm.toml")
    assert str(refused.value).startswith("/etc/vpod/slurm.toml: ")
    assert words in str(refused.value)


def test_static_partition_names_are_derived_from_size_and_index() -> None:
    settings = parse_settings({"mode": "static", "static_partitions": "1:2,4:2"}, "t")
    assert settings.static_partition_ids() == {
        1: ["slurm_static1_0", "slurm_static1_1"],
        4: ["slurm_static4_0", "slurm_static4_1"],
    }
    # Not job partitions: the dynamic reconciler never takes them for a job's.
    assert all(settings.job_of(p) is None for p in ["slurm_static1_0", "slurm_shared"])


def test_static_assignments_never_give_one_partition_to_two_jobs() -> None:
    book = Assignments(static={4: ["s4_0", "s4_1"], 1: ["s1_0"]})
    first = book.take_static("10", 4)
    second = book.take_static("11", 4)
    assert {first.partition_id, second.partition_id} == {"s4_0", "s4_1"}
    assert book.take_static("10", 4) is first  # a retried prolog keeps what it has
    with pytest.raises(NoneFree, match="all 2 static partitions of 4 IPUs are held"):
        book.take_static("12", 4)
    with pytest.raises(NoneFree, match=r"no static partition has 8 IPUs \(sizes: 1, 4\)"):
        book.take_static("12", 8)
    book.release("10")
    assert book.take_static("12", 4).partition_id == first.partition_id


@pytest.mark.parametrize("size", [4, 16, 64])
def test_shared_blocks_are_aligned_devices_that_never_overlap(size: int) -> None:
    book = Assignments(shared=("shared", size))
    asks = [1, 2, 1, 4, 2, 1, 1]
    taken = []
    for n, ipus in enumerate(asks):
        with contextlib.suppress(NoneFree):  # a pod's worth already held
            taken.append(book.take_block(str(n), ipus))
    assert sum(block.ipus for block in taken) == min(size, sum(asks))
    listing = {d.id: d.members for d in device_listing(size)}
    held: set[int] = set()
    for block in taken:
        assert block.first % block.ipus == 0
        members = set(range(block.first, block.first + block.ipus))
        assert block.device is not None
        assert set(listing[block.device]) == members
        assert not members & held
        held |= members


def test_a_full_or_fragmented_shared_partition_refuses_with_the_reason() -> None:
    book = Assignments(shared=("shared", 4))
    book.take_block("1", 1)
    book.take_block("2", 1)
    book.take_block("3", 2)
    with pytest.raises(NoneFree, match=r"no aligned block of 1 free IPUs .* \(4 of 4 IPUs held"):
        book.take_block("4", 1)
    book.release("1")
    with pytest.raises(NoneFree, match="no aligned block of 2"):
        book.take_block("4", 2)  # one IPU free: not a pair
    with pytest.raises(NoneFree, match="ask for a power of two up to 4"):
        book.take_block("5", 3)
    assert book.take_block("4", 1).first == 0


def test_device_ids_follow_the_listing() -> None:
    assert device_id(16, 0, 1) == 0
    assert device_id(16, 2, 2) == 17
    assert device_id(16, 4, 4) == 25
    assert device_id(16, 0, 16) == 30
    with pytest.raises(ValueError, match="are no device of 16 IPUs"):
        device_id(16, 1, 2)


def test_an_assignment_file_reads_back_as_written() -> None:
    held = Assignment("42", "slurm_shared", 4, 8, 26)
    assert assignments.parse(assignments.render(held)) == held
    plain = Assignment("7", "slurm_static4_1", 4)
    assert assignments.parse(assignments.render(plain)) == plain
    assert assignments.parse("job=1\npartition=x\n") is None


def test_static_gres_requests_are_read_from_tres() -> None:
    assert static_in_tres("gres:vipu:4:1") == [(4, 1)]
    assert static_in_tres("cpu=1,gres/vipu:1:2") == [(1, 2)]
    assert static_in_tres("gres:vipu:2") == [(0, 2)]
    assert static_in_tres("gres:ipu:4") == []


def test_static_slurm_config_declares_a_vipu_gres_per_size() -> None:
    partitions = [IpuPartition("ipu", "n1", "default", 64)]
    static = [(1, 4), (4, 2)]
    assert "NodeName=n1 Name=vipu Type=1 Count=4" in gres_conf(partitions, static=static)
    assert "NodeName=n1 Name=vipu Type=4 Count=2" in gres_conf(partitions, static=static)
    assert node_gres(partitions, "n1", static=static) == "Gres=vipu:1:4,vipu:4:2"
    assert "GresTypes=ipu,vipu" in integration_lines(
        {"prolog": "p", "epilog": "e", "task_prolog": "t"}
    )
    lua = job_submit_lua(partitions, "ipu", mode="static", static=static)
    assert 'local MODE = "static"' in lua
    assert "1, 4" in lua.split("local STATIC_SIZES = {", 1)[1].split("}", 1)[0]


def test_the_task_prolog_exports_the_assigned_partition_and_device() -> None:
    values = {"ipuof_api_host": "h", "ipuof_api_port": 1, "credentials_dir": "/nonexistent"}
    lines = task_prolog_lines(values, "42", 4, {"partition": "slurm_shared", "device": "25"})
    assert "export IPUOF_VIPU_API_PARTITION_ID=slurm_shared" in lines
    assert "export VPOD_IPU_DEVICE_ID=25" in lines
    static = task_prolog_lines(values, "42", 4, {"partition": "slurm_static4_1"})
    assert "export IPUOF_VIPU_API_PARTITION_ID=slurm_static4_1" in static
    assert not [line for line in static if "VPOD_IPU_DEVICE_ID" in line]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--mode", "static"], "--static-partitions: no partitions listed"),
        (["--mode", "static", "--static-partitions", "3:1"], "3 IPUs is not a partition size"),
        (["--static-partitions", "4:1"], "--static-partitions is set but mode is dynamic"),
        (["--mode", "reconfigurable", "--shared-size", "12"], "--shared-size must be one of"),
        (["--mode", "elastic"], "'elastic' is not one of 'dynamic', 'static', 'reconfigurable'"),
    ],
)
def test_vpod_slurm_up_refuses_a_bad_mode_before_starting_anything(
    tmp_path: Path, args: list[str], words: str
) -> None:
    done = subprocess.run(
        [str(BIN / "vpod"), "slurm", "up", "--data-dir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert not list(tmp_path.iterdir())  # nothing started, nothing written


class FakeLastingApi(FakeApi):
    """FakeApi plus what the lasting modes call; ``fail_reset`` makes resets fail."""

    def __init__(self) -> None:
        super().__init__(secure=True)
        self.fail_reset = False

    async def create_lasting(
        self, partition_id: str, size: int, allocation: str, *, reconfigurable: bool
    ) -> None:
        self.calls.append(f"create {partition_id}")
        self.partitions.setdefault(partition_id, (size, allocation))

    async def reset(self, partition_id: str) -> None:
        self.calls.append(f"reset {partition_id}")
        if self.fail_reset:
            raise PartitionFailure(f"cannot reset partition {partition_id}: agent down")


def test_a_restarted_bridge_keeps_what_running_jobs_hold_and_frees_it_only_once_reset(
    tmp_path: Path,
) -> None:
    settings = parse_settings(
        {"mode": "static", "static_partitions": "4:2", "credentials_dir": str(tmp_path)}, "t"
    )
    running = Assignment("42", "slurm_static4_1", 4)
    (tmp_path / "slurm_42.assigned").write_text(assignments.render(running))
    api = FakeLastingApi()

    async def scenario() -> None:
        jobs = LastingPartitions(settings, api)  # as the bridge does when it starts again
        assert await jobs.prepare() == ["slurm_static4_0", "slurm_static4_1"]
        await jobs.prepare()
        assert sorted(api.partitions) == ["slurm_static4_0", "slurm_static4_1"]
        assert jobs.book.held("42") == running
        assert jobs.book.take_static("43", 4).partition_id == "slurm_static4_0"
        with pytest.raises(NoneFree):
            jobs.book.take_static("44", 4)
        api.fail_reset = True
        with pytest.raises(PartitionFailure, match="agent down"):
            await jobs.end("42")
        assert jobs.book.held("42") == running  # not handed to a next job un-reset
        api.fail_reset = False
        assert await jobs.end("42") == "slurm_static4_1 freed"
        assert api.calls[-2:] == ["revoke slurm_42.job", "reset slurm_static4_1"]
        assert not (tmp_path / "slurm_42.assigned").exists()
        assert jobs.book.take_static("44", 4).partition_id == "slurm_static4_1"

    asyncio.run(scenario())
