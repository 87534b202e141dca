"""The dynamic source asks the partition's status before its IPUoF config, against a
controller double: a partition in ERROR is waited for even when the controller serves
its recorded config (as it does while an agent of it is unreachable)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cli.fake_controller import FakeState, RunningFake, serve
from vpod.client import Endpoint, UserClient
from vpod.ipuof.controller import ControllerSource
from vpod.ipuof.source import NotActiveYet
from vpod.wire import virmgrpc_pb2 as pb


@pytest.fixture
def source() -> Iterator[tuple[ControllerSource, RunningFake]]:
    with serve(FakeState()) as fake:
        client = UserClient(Endpoint("127.0.0.1", fake.user_port, timeout_s=10))
        client.create_partition("p1", 4)
        yield ControllerSource(client), fake
        client.close()


def test_an_active_partition_gives_its_devices(
    source: tuple[ControllerSource, RunningFake],
) -> None:
    controller, _ = source
    ((devices, attributes),) = controller.ipuof_gcds("p1", None)
    assert sorted(d.routing_id for d in devices) == [0, 1, 2, 3]
    assert attributes["GCD Id"] == "0"


def test_a_partition_in_error_is_waited_for_without_taking_its_config(
    source: tuple[ControllerSource, RunningFake],
) -> None:
    controller, fake = source
    fake.state.statuses["p1"].ready_state = pb.PS_ERROR
    asked = len(fake.state.calls_to("GetPartitionIpuofConfig"))
    with pytest.raises(NotActiveYet) as waiting:
        controller.ipuof_gcds("p1", None)
    assert waiting.value.state.startswith("ERROR")
    assert len(fake.state.calls_to("GetPartitionIpuofConfig")) == asked
