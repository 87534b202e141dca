"""A backend whose driver blocks keeps the agent serving: its calls run in a thread.

The backend here stands where a hardware one would: its link tests call a
"driver" that blocks its thread until the test lets it go (the boundary is
faked, everything above it is the real agent on loopback gRPC). It runs the
blocking call through ``asyncio.to_thread`` behind the async protocol, as
the NVML backend does, and serves no software IPUoF (the hardware would).
While one RPC waits on the driver, others are answered.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable
from types import SimpleNamespace

import pynvml
import pytest

from vpod.agent.client import AgentClient
from vpod.agent.emulated import EmulatedMachine
from vpod.agent.emulated_backend import EmulatedBackend
from vpod.agent.errors import AgentRefused, Reason
from vpod.agent.gpu.nvml import NvmlBackend
from vpod.agent.host import AgentHost
from vpod.agent.model import Fault, FaultKind, LinkTestKind, LinkTestResult

from .conftest import ephemeral_plan

pytestmark = pytest.mark.anyio

DRIVER_PATIENCE_S = 30.0
"""How long the fake driver waits to be let go; only reached when the test is already failing."""


class BlockingDriverBackend(EmulatedBackend):
    """Link tests go through a driver call that blocks its thread until ``go`` is set."""

    def __init__(self, machine: EmulatedMachine) -> None:
        super().__init__(machine)
        self.entered = threading.Event()
        self.go = threading.Event()

    def _driver_link_tests(self, tests: tuple[LinkTestKind, ...]) -> list[LinkTestResult]:
        self.entered.set()
        if not self.go.wait(DRIVER_PATIENCE_S):
            raise TimeoutError("the test never let the driver go")
        return self.machine.run_link_tests(tests)

    async def run_link_tests(self, tests: Iterable[LinkTestKind] = ()) -> list[LinkTestResult]:
        return await asyncio.to_thread(self._driver_link_tests, tuple(tests))


@pytest.fixture
async def slow_host() -> AsyncIterator[tuple[AgentHost, BlockingDriverBackend]]:
    backend = BlockingDriverBackend(EmulatedMachine("hw1"))
    host = AgentHost(backend, ephemeral_plan().addresses(1)[0], fault_injection=True)
    await host.start()
    try:
        yield host, backend
    finally:
        backend.go.set()
        await host.stop(0)


async def test_a_blocked_driver_call_does_not_stop_other_rpcs(
    slow_host: tuple[AgentHost, BlockingDriverBackend],
) -> None:
    host, backend = slow_host
    async with (
        AgentClient(host.address, agent_id="hw1", timeout=10, key=host.key) as slow,
        AgentClient(host.address, agent_id="hw1", timeout=10, key=host.key) as other,
    ):
        link_tests = asyncio.create_task(slow.run_link_tests())
        assert await asyncio.to_thread(backend.entered.wait, DRIVER_PATIENCE_S)
        # The driver holds its thread; the event loop must still answer these.
        identity = await other.get_identity()
        health = await other.health()
        assert identity.agent_id == "hw1"
        assert len(health.ipus) == 4
        assert not link_tests.done()
        backend.go.set()
        results = await link_tests
    assert [r.test for r in results] == list(LinkTestKind)
    assert all(r.passed for r in results)


async def test_a_backend_without_software_ipuof_runs_no_ipuof_listeners(
    slow_host: tuple[AgentHost, BlockingDriverBackend],
) -> None:
    host, _ = slow_host
    assert host.ipuof_ports == ()
    async with AgentClient(host.address, agent_id="hw1", timeout=10, key=host.key) as client:
        identity = await client.get_identity()
    assert identity.management_address == host.address


async def test_machine_faults_need_emulator_controls_agent_faults_do_not(
    slow_host: tuple[AgentHost, BlockingDriverBackend],
) -> None:
    """The host was given no emulator controls, as for hardware: fault injection is on,
    yet an IPU fault is refused with a sentence; the agent's own faults still work."""
    host, _ = slow_host
    async with AgentClient(host.address, agent_id="hw1", timeout=10, key=host.key) as client:
        with pytest.raises(AgentRefused) as refused:
            await client.inject_fault(Fault(FaultKind.IPU, device_id=0))
        assert refused.value.reason is Reason.FAULT_INJECTION_DISABLED
        assert "cannot fake IPU or link faults" in refused.value.message
        slow = Fault(FaultKind.AGENT_SLOW, delay_s=0.001)
        assert await client.inject_fault(slow) == [slow]
        assert await client.clear_fault() == []
        assert all(i.healthy for i in (await client.health()).ipus)


async def test_the_nvml_backend_reads_the_driver_in_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NVML behind the GPU seam: a sample whose driver call blocks leaves the loop free.
    (The NVML library is the faked boundary; calls not faked fail as on a host without
    a driver and read as unsupported.)"""
    entered, go = threading.Event(), threading.Event()

    def blocking_uuid(_handle: object) -> str:
        entered.set()
        if not go.wait(DRIVER_PATIENCE_S):
            raise TimeoutError("the test never let the driver go")
        return "GPU-blocked"

    monkeypatch.setattr(pynvml, "nvmlDeviceGetUUID", blocking_uuid)
    monkeypatch.setattr(
        pynvml,
        "nvmlDeviceGetMemoryInfo",
        lambda _handle: SimpleNamespace(used=2**30, total=80 * 2**30),
    )
    backend = NvmlBackend()
    backend._handles = [object()]
    sample = asyncio.create_task(backend.sample())
    assert await asyncio.to_thread(entered.wait, DRIVER_PATIENCE_S)
    ticked = asyncio.Event()
    asyncio.get_running_loop().call_soon(ticked.set)
    await ticked.wait()  # the loop runs other work while the driver holds its thread
    assert not sample.done()
    go.set()
    (reading,) = await sample
    assert (reading.uuid, reading.memory_used_mib, reading.memory_total_mib) == (
        "GPU-blocked",
        1024,
        80 * 1024,
    )
