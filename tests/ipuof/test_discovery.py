"""Finding the partition: the order the IPUoF client follows; one clear line when it fails."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from vpod.domain.ipuof import device_listing
from vpod.ipuof import (
    ConfigInvalid,
    ConfigNotFound,
    IpuofDevice,
    PartitionNotReady,
    find_partition,
    list_devices,
)
from vpod.ipuof.source import Gcds, NotActiveYet


def device(routing_id: int, port: int = 50052) -> dict[str, object]:
    return {
        "ip": "127.9.0.1",
        "server_port": port + routing_id,
        "rdma_port": 7471,
        "device_id": 3 - routing_id % 4,
        "ipulink_segment_id": 0,
        "routing_id": routing_id,
        "ipu_arch_id": 2,
        "ipu_id": 3,
        "chip_id": "0x1",
        "gwsw_version": "2.6.0",
    }


def write_conf(path: Path, routing_ids: Sequence[int], gcd: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "devices": [device(r) for r in routing_ids],
                "attributes": {"GCD Id": str(gcd), "Num Replicas": "1"},
            }
        )
    )
    return path


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Controller:
    """A stand-in for the user API (the real one is exercised in test_applications.py)."""

    def __init__(self, states: list[str], routing_ids: Sequence[int] = (0, 1)) -> None:
        self.states = states
        self.asked: list[tuple[str, int | None]] = []
        self.closed = False
        self._ipus = [
            IpuofDevice(
                ip="127.9.0.1", server_port=50052 + r, rdma_port=7471, device_id=3 - r,
                routing_id=r,
            )
            for r in routing_ids
        ]  # fmt: skip

    @property
    def where(self) -> str:
        return "ctl:8090"

    def ipuof_gcds(self, partition_id: str, gcd_id: int | None) -> Gcds:
        self.asked.append((partition_id, gcd_id))
        state = self.states.pop(0) if self.states else "ACTIVE"
        if state != "ACTIVE":
            raise NotActiveYet(state)
        return [(self._ipus, {"GCD Id": "0"})]

    def close(self) -> None:
        self.closed = True

    def factory(self, host: str, port: int, env: Mapping[str, str]) -> Controller:
        self.host_port = (host, port)
        return self


def dynamic(partition: str = "p1", **extra: str) -> dict[str, str]:
    return {"IPUOF_VIPU_API_HOST": "ctl", "IPUOF_VIPU_API_PARTITION_ID": partition, **extra}


def test_the_controller_comes_first_and_the_port_defaults_to_8090(tmp_path: Path) -> None:
    ctl = Controller([])
    conf = write_conf(tmp_path / "other.conf", [0])
    env = dynamic(IPUOF_CONFIG_PATH=str(conf), IPUOF_VIPU_API_GCD_ID="0")
    target = find_partition(env, source_factory=ctl.factory, home=tmp_path)
    assert ctl.host_port == ("ctl", 8090)
    assert ctl.asked == [("p1", 0)]
    assert ctl.closed
    assert (target.partition_id, target.gcd_id, target.num_ipus) == ("p1", 0, 2)
    assert target.source == "controller ctl:8090"


def test_a_partition_that_becomes_active_late_is_waited_for() -> None:
    ctl = Controller(["PENDING/CREATING", "PENDING/CREATING", "ACTIVE"])
    clock = Clock()
    target = find_partition(
        dynamic(IPUOF_VIPU_API_TIMEOUT="5"),
        source_factory=ctl.factory,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
    )
    assert target.num_ipus == 2
    assert len(ctl.asked) == 3
    assert clock.now < 5


def test_not_active_before_the_timeout_names_the_partition_and_its_state() -> None:
    ctl = Controller(["ERROR/IDLE"] * 1000)
    clock = Clock()
    with pytest.raises(PartitionNotReady) as failed:
        find_partition(
            dynamic(IPUOF_VIPU_API_TIMEOUT="3"),
            source_factory=ctl.factory,
            sleep=clock.sleep,
            monotonic=clock.monotonic,
        )
    assert "partition p1 on ctl:8090 is ERROR/IDLE, not ACTIVE, after 3 s" in str(failed.value)
    assert "\n" not in str(failed.value)
    assert 3 <= clock.now < 4


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"IPUOF_VIPU_API_HOST": "ctl"}, "IPUOF_VIPU_API_PARTITION_ID is not"),
        (dynamic(IPUOF_VIPU_API_PORT="http"), "IPUOF_VIPU_API_PORT='http'"),
        (dynamic(IPUOF_VIPU_API_TIMEOUT="soon"), "IPUOF_VIPU_API_TIMEOUT='soon'"),
        (dynamic(IPUOF_VIPU_API_GCD_ID="-1"), "IPUOF_VIPU_API_GCD_ID='-1'"),
    ],
)
def test_bad_variables_are_one_line_and_exit_2(env: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigInvalid) as failed:
        find_partition(env, source_factory=Controller([]).factory)
    assert words in str(failed.value)
    assert failed.value.exit_code == 2


def test_ipuof_config_path_comes_before_the_directories(tmp_path: Path) -> None:
    chosen = write_conf(tmp_path / "p7_gcd0.conf", [0, 1, 2, 3])
    write_conf(tmp_path / "home" / ".ipuof.conf.d" / "x.conf", [0])
    target = find_partition(
        {"IPUOF_CONFIG_PATH": str(chosen)}, home=tmp_path / "home", system_dir=tmp_path / "etc"
    )
    assert (target.partition_id, target.gcd_id, target.num_ipus) == ("p7", 0, 4)
    assert target.source == str(chosen)


def test_the_user_directory_comes_before_the_system_one(tmp_path: Path) -> None:
    write_conf(tmp_path / "etc" / "sys_gcd0.conf", [0])
    write_conf(tmp_path / "home" / ".ipuof.conf.d" / "mine_gcd0.conf", [0, 1])
    target = find_partition({}, home=tmp_path / "home", system_dir=tmp_path / "etc")
    assert (target.partition_id, target.num_ipus) == ("mine", 2)
    only_system = find_partition({}, home=tmp_path / "nobody", system_dir=tmp_path / "etc")
    assert (only_system.partition_id, only_system.num_ipus) == ("sys", 1)


def test_one_file_per_gcd_makes_one_partition_in_routing_order(tmp_path: Path) -> None:
    d = tmp_path / "home" / ".ipuof.conf.d"
    write_conf(d / "big_gcd1.conf", [2, 3], gcd=1)
    write_conf(d / "big_gcd0.conf", [0, 1], gcd=0)
    target = find_partition({}, home=tmp_path / "home", system_dir=tmp_path / "none")
    assert [i.routing_id for i in target.ipus] == [0, 1, 2, 3]
    assert target.partition_id == "big"
    assert target.gcd_id is None
    assert "GCD Id" not in target.attributes


def test_a_list_of_gcds_as_vipu_prints_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "any.conf"
    path.write_text(
        json.dumps(
            [
                {"devices": [device(0), device(1)], "attributes": {"GCD Id": "0"}},
                {"devices": [device(2), device(3)], "attributes": {"GCD Id": "1"}},
            ]
        )
    )
    target = find_partition({"IPUOF_CONFIG_PATH": str(path)}, home=tmp_path)
    assert target.num_ipus == 4
    assert target.partition_id is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{not json", "is not JSON"),
        ('{"attributes": {}}', 'no "devices" list'),
        ('{"devices": [{"ip": "x"}]}', "a device lacks server_port"),
        ('{"devices": [{"ip": "x", "server_port": "a", "rdma_port": 1, "device_id": 0,'
         ' "ipulink_segment_id": 0, "routing_id": 0}]}', "whole numbers"),
        ('{"devices": []}', "lists no devices"),
    ],
)  # fmt: skip
def test_a_broken_file_says_what_is_wrong(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.conf"
    path.write_text(text)
    with pytest.raises(ConfigInvalid) as failed:
        find_partition({"IPUOF_CONFIG_PATH": str(path)}, home=tmp_path)
    assert words in str(failed.value)
    assert str(path) in str(failed.value)


def test_nothing_to_find_says_every_way_there_is(tmp_path: Path) -> None:
    with pytest.raises(ConfigNotFound) as failed:
        find_partition({}, home=tmp_path, system_dir=tmp_path / "etc")
    text = str(failed.value)
    for way in ("IPUOF_VIPU_API_HOST", "IPUOF_CONFIG_PATH", ".ipuof.conf.d", "--ipuof-configs"):
        assert way in text
    missing = tmp_path / "gone.conf"
    with pytest.raises(ConfigNotFound, match="no such file"):
        find_partition({"IPUOF_CONFIG_PATH": str(missing)}, home=tmp_path)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64])
def test_devices_are_2n_minus_1_with_members_by_dnc_id(tmp_path: Path, n: int) -> None:
    path = write_conf(tmp_path / "p_gcd0.conf", list(range(n)))
    devices = list_devices(find_partition({"IPUOF_CONFIG_PATH": str(path)}, home=tmp_path))
    assert len(devices) == 2 * n - 1
    assert [d.members for d in devices] == [d.members for d in device_listing(n)]
    assert devices[-1].members == tuple(range(n))
    for d in devices:
        assert [ipu.routing_id for ipu in d.ipus] == list(d.members)
