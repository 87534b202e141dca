"""Every backend satisfies the protocol it claims, in shape and in behaviour.

The shape check is shared by the IPU and GPU seams: an implementation has
every member of the protocol (``runtime_checkable``) and each method is
async exactly where the protocol's is, so nothing blocking can hide behind
a synchronous method on the agent's event loop. The behaviour check is the
suite a new IPU-Machine backend runs against: it drives a backend only
through :class:`MachineBackend` (and :class:`EmulatorControls` to make a
fault, where the backend has them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

from vpod.agent.backend import EmulatorControls, IpuofSessions, MachineBackend
from vpod.agent.emulated import EmulatedMachine
from vpod.agent.emulated_backend import EmulatedBackend
from vpod.agent.errors import MachineConflict, Reason, UnknownPartition
from vpod.agent.gpu.backend import GpuBackend
from vpod.agent.gpu.emulated import EmulatedNvml
from vpod.agent.gpu.nvml import NvmlBackend
from vpod.agent.model import (
    AgentEvent,
    EventKind,
    Fault,
    FaultKind,
    IpuAssignment,
    LinkTestKind,
    PartitionConfig,
)


def protocol_mismatches(implementation: object, protocol: type) -> list[str]:
    """What keeps ``implementation`` from being a ``protocol``: a missing member, or a
    method whose async-ness differs from the protocol's. Empty when it conforms."""
    wrong: list[str] = []
    for name, member in vars(protocol).items():
        if name.startswith("_") or not (callable(member) or isinstance(member, property)):
            continue
        if not hasattr(implementation, name):
            wrong.append(f"{name}: missing")
            continue
        if isinstance(member, property):
            continue
        wanted = inspect.iscoroutinefunction(member)
        if inspect.iscoroutinefunction(getattr(implementation, name)) != wanted:
            wrong.append(f"{name}: must {'' if wanted else 'not '}be async")
    return wrong


def emulated_ipu_backend() -> EmulatedBackend:
    return EmulatedBackend(EmulatedMachine("ag1", clock=lambda: 1000.0))


IPU_BACKENDS: dict[str, Callable[[], MachineBackend]] = {"emulated": emulated_ipu_backend}
"""The IPU-Machine backends this repository has; a hardware one joins this table."""


@pytest.mark.parametrize(
    ("make", "protocols"),
    [
        pytest.param(
            lambda _tmp: emulated_ipu_backend(),
            (MachineBackend, IpuofSessions, EmulatorControls),
            id="emulated-ipu-machine",
        ),
        pytest.param(
            lambda tmp: EmulatedNvml("h1", "h100-80", 2, tmp), (GpuBackend,), id="emulated-nvml"
        ),
        # Built without opening NVML: the shape is checked on any host.
        pytest.param(lambda _tmp: NvmlBackend(), (GpuBackend,), id="nvml"),
    ],
)
def test_each_backend_has_the_shape_of_its_protocols(
    make: Callable[[Path], object], protocols: tuple[type, ...], tmp_path: Path
) -> None:
    backend = make(tmp_path)
    for protocol in protocols:
        assert isinstance(backend, protocol), protocol.__name__
        assert protocol_mismatches(backend, protocol) == [], protocol.__name__


def test_the_synchronous_emulator_is_not_a_backend() -> None:
    """The emulator's own methods block the caller; only its adapter is the seam."""
    mismatches = protocol_mismatches(EmulatedMachine("ag1"), MachineBackend)
    assert "identity: must be async" in mismatches
    assert "configure: must be async" in mismatches


def test_the_hardware_protocol_carries_no_emulator_controls() -> None:
    hardware = {n for n in vars(MachineBackend) if not n.startswith("_")}
    emulator_only = {n for n in vars(EmulatorControls) if not n.startswith("_")}
    assert {"inject_fault", "clear_fault", "faults"} <= emulator_only
    assert not hardware & emulator_only
    assert "set_load" not in hardware
    assert "attach" not in hardware


def config(partition_id: str, generation: int, *devices: int) -> PartitionConfig:
    return PartitionConfig(
        partition_id=partition_id,
        generation=generation,
        partition_size=len(devices),
        ipus=tuple(IpuAssignment(device_id=d, routing_id=i) for i, d in enumerate(devices)),
    )


@pytest.fixture(params=sorted(IPU_BACKENDS))
def backend(request: pytest.FixtureRequest) -> MachineBackend:
    return IPU_BACKENDS[request.param]()


@pytest.mark.anyio
async def test_configure_is_idempotent_by_generation(backend: MachineBackend) -> None:
    first = await backend.configure(config("p1", 1, 0, 1))
    again = await backend.configure(config("p1", 1, 0, 1))
    assert first.changed
    assert not again.changed
    newer = await backend.configure(config("p1", 2, 0, 1, 2, 3))
    assert newer.changed
    assert newer.partition.config.generation == 2
    with pytest.raises(MachineConflict) as stale:
        await backend.configure(config("p1", 1, 0, 1))
    assert stale.value.reason is Reason.STALE_GENERATION
    assert [c.config.partition_id for c in await backend.configurations()] == ["p1"]


@pytest.mark.anyio
async def test_release_and_reset_name_what_is_configured(backend: MachineBackend) -> None:
    assert await backend.release("p9") is False
    with pytest.raises(UnknownPartition):
        await backend.reset("p9")
    await backend.configure(config("p1", 1, 2))
    assert (await backend.reset("p1")).reset_count == 1
    assert await backend.release("p1") is True
    assert await backend.configurations() == []


@pytest.mark.anyio
async def test_readings_events_and_identity_come_through_the_seam(
    backend: MachineBackend,
) -> None:
    heard: list[AgentEvent] = []
    unsubscribe = backend.subscribe(heard.append)
    await backend.configure(config("p1", 1, 0))
    unsubscribe()
    await backend.release("p1")
    assert [e.kind for e in heard] == [EventKind.CONFIGURED]
    batch = await backend.events_since(0)
    assert [e.kind for e in batch.events] == [EventKind.CONFIGURED, EventKind.RELEASED]
    health = await backend.health(since_event=batch.events[0].sequence)
    assert len(health.ipus) == 4
    assert all(i.healthy for i in health.ipus)
    assert [e.kind for e in health.events.events] == [EventKind.RELEASED]
    assert (await backend.ipu_status(3)).device_id == 3
    identity = await backend.identity()
    assert identity.agent_id == backend.agent_id
    assert len(identity.ipus) == 4
    assert set(await backend.ipu_attributes()) == {0, 1, 2, 3}
    results = await backend.run_link_tests([LinkTestKind.CABLING])
    assert [r.test for r in results] == [LinkTestKind.CABLING]
    assert await backend.attachments() == []
    assert await backend.detach(12345) is False


@pytest.mark.anyio
async def test_an_emulated_fault_shows_in_the_hardware_readings(backend: MachineBackend) -> None:
    if not isinstance(backend, EmulatorControls):
        pytest.skip("this backend cannot fake faults (hardware)")
    await backend.inject_fault(Fault(FaultKind.IPU, device_id=1, reason="test"))
    assert not (await backend.ipu_status(1)).healthy
    with pytest.raises(MachineConflict) as refused:
        await backend.configure(config("p1", 1, 1))
    assert refused.value.reason is Reason.IPU_FAULTED
    assert await backend.clear_fault(None) == []
    assert (await backend.health()).faults == ()
