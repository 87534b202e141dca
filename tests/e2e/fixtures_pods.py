"""Shared end-to-end helpers: a POD256 fixture, a generated user-API client, the admin's view.

Fixtures (import the ``*_fixture`` functions into a test module; they are
used by the names in brackets):

- ``pod256_fixture`` [``pod256``]: one ``vpod up --open --pod pod256`` per module,
  64 emulated machines in 4 IPU-Link domains of 16, looped GW-Links;
- ``api64_fixture`` [``api64``], ``api256_fixture`` [``api256``]: a
  :class:`UserApi` on the module's pod that force-removes every partition
  left at the end of the test, so tests do not depend on their order.

:class:`UserApi` is what any V-IPU client is: stubs generated from the public
user proto on a plain channel. :func:`rpc_error` runs one call that must fail
and returns its status. :class:`AdminView` reads ``vipu-admin ... --json``,
the administrator's picture that tests cross-check the user API against.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from vpod.wire import virmgrpc_pb2 as pb
from vpod.wire import virmgrpc_pb2_grpc as pb_grpc

from .conftest import Pod, start_pod

IPUS_PER_MACHINE = 4
MACHINES_PER_DOMAIN = 16
CALL_TIMEOUT_S = 60.0


@pytest.fixture(scope="module", name="pod256")
def pod256_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    """A running ``vpod up --open --pod pod256`` (open mode, as ``pod64``), shared by the tests
    of one module."""
    pod = start_pod(tmp_path_factory.mktemp("pod256"), "--open", "--pod", "pod256")
    yield pod
    pod.stop()


@dataclass(frozen=True)
class Failure:
    """A failed call: its status code and the sentence the controller sent."""

    code: grpc.StatusCode
    details: str


def rpc_error(call: Callable[..., Any], request: Any) -> Failure:
    """Run ``call(request)``, which must fail, and return how it failed."""
    try:
        call(request, timeout=CALL_TIMEOUT_S)
    except grpc.RpcError as exc:
        return Failure(code=exc.code(), details=exc.details() or "")
    raise AssertionError(f"{request.__class__.__name__} succeeded but was expected to fail")


class UserApi:
    """A client generated from the V-IPU user proto, on a plain channel (open mode)."""

    def __init__(self, pod: Pod) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{pod.user_port}")
        self.users = pb_grpc.UserServiceStub(self.channel)
        self.version = pb_grpc.VersionServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def create(
        self, pid: str, size: int, *, disable_auto_reset: bool = False, **fields: Any
    ) -> str:
        """Create a partition; ``fields`` are further ``PartitionRequirements`` fields."""
        request = pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id=pid, size=size, **fields),
            disable_auto_reset=disable_auto_reset,
        )
        reply = self.users.CreatePartition(request, timeout=CALL_TIMEOUT_S)
        return str(reply.partition_id)

    def create_error(self, pid: str, size: int, **fields: Any) -> Failure:
        """Create a partition that must be refused; returns the refusal."""
        request = pb.CreatePartitionRequest(
            requirements=pb.PartitionRequirements(id=pid, size=size, **fields)
        )
        return rpc_error(self.users.CreatePartition, request)

    def remove(self, pid: str, *, force: bool = False) -> None:
        request = pb.RemovePartitionRequest(partition_id=pid, force=force)
        self.users.RemovePartition(request, timeout=CALL_TIMEOUT_S)

    def remove_all(self) -> None:
        """Remove (with force) every partition left behind, so tests do not depend on order."""
        for partition in self.list().partitions:
            self.remove(partition.id, force=True)

    def list(self, allocation_id: str = "") -> pb.ListPartitionsReply:
        request = pb.ListPartitionsRequest(allocation_id=allocation_id)
        reply: pb.ListPartitionsReply = self.users.ListPartitions(request, timeout=CALL_TIMEOUT_S)
        return reply

    def partition(self, pid: str) -> pb.Partition:
        """One partition as ``ListPartitions`` shows it."""
        found = [p for p in self.list().partitions if p.id == pid]
        assert len(found) == 1, f"partition {pid} listed {len(found)} times"
        return found[0]

    def status(self, pid: str) -> pb.PartitionStatus:
        request = pb.GetPartitionStatusRequest(partition_id=pid)
        reply = self.users.GetPartitionStatus(request, timeout=CALL_TIMEOUT_S)
        status: pb.PartitionStatus = reply.status
        return status

    def config(self, pid: str, gcd: int | None = None) -> pb.PartitionConfig:
        request = pb.GetPartitionIpuofConfigRequest(partition_id=pid)
        if gcd is not None:
            request.gcd_id.id = gcd
        reply = self.users.GetPartitionIpuofConfig(request, timeout=CALL_TIMEOUT_S)
        config: pb.PartitionConfig = reply.ipuof_config
        return config


@pytest.fixture(name="api64")
def api64_fixture(pod64: Pod) -> Iterator[UserApi]:
    """A user-API client on the module's POD64; partitions left at the end are force-removed."""
    yield from _client(pod64)


@pytest.fixture(name="api256")
def api256_fixture(pod256: Pod) -> Iterator[UserApi]:
    """A user-API client on the module's POD256; partitions left at the end are force-removed."""
    yield from _client(pod256)


def _client(pod: Pod) -> Iterator[UserApi]:
    client = UserApi(pod)
    try:
        yield client
    finally:
        client.remove_all()
        client.close()


def wait_until(check: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    """Poll ``check`` until it holds (live processes change state on their own time)."""
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true within {within_s:.0f} s")
        time.sleep(0.2)


def devices_of(config: pb.PartitionConfig) -> list[pb.IpuofDevice]:
    """Every device of every GCD of an IPUoF config, in routing order."""
    devices = [d for gcd in config.gcd_configs for d in gcd.devices]
    return sorted(devices, key=lambda d: d.routing_id)


class AdminView:
    """What ``vipu-admin --json`` says about agents and partitions (the administrator's view)."""

    def __init__(self, pod: Pod) -> None:
        self._pod = pod

    def _json(self, *args: str) -> dict[str, Any]:
        done = self._pod.run("vipu-admin", *args, "--json")
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    def agents(self) -> dict[str, dict[str, Any]]:
        """Agents by id, as ``vipu-admin list agents --json`` lists them."""
        return {a["id"]: a for a in self._json("list", "agents")["agents"]}

    def locations(self, pid: str) -> list[dict[str, Any]]:
        """Where each IPU of a partition is (agent, device id), by routing id."""
        infos = self._json("list", "partitions")["partitions"]
        found = [i for i in infos if i["partition"]["id"] == pid]
        assert len(found) == 1, f"vipu-admin lists partition {pid} {len(found)} times"
        locations: list[dict[str, Any]] = found[0]["locations"]
        return sorted(locations, key=lambda loc: loc["routing_id"])


def machine_index(agent_id: str) -> int:
    """``vpod up`` names machine *i* ``ag{i+1}``."""
    assert agent_id.startswith("ag"), agent_id
    return int(agent_id[2:]) - 1


def ladder_place(agent_id: str, device_id: int) -> tuple[int, int]:
    """(IPU-Link domain, position in ladder order) of an IPU of a ``vpod up`` pod.

    Machine *m* is in domain ``m // 16``; its IPUs take positions
    ``4*(m % 16) .. +3`` in ladder order, device ids 3, 2, 1, 0.
    """
    machine = machine_index(agent_id)
    rank = IPUS_PER_MACHINE - 1 - device_id
    return machine // MACHINES_PER_DOMAIN, IPUS_PER_MACHINE * (machine % MACHINES_PER_DOMAIN) + rank
