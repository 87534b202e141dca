"""The emulated machine behind the agent's async seam.

:class:`EmulatedBackend` implements all three protocols of
:mod:`vpod.agent.backend` over one :class:`~vpod.agent.emulated.EmulatedMachine`.
The emulator keeps its state in memory and never blocks, so each call runs
on the event loop directly (no thread: a thread would only add a hop and
would need a lock around the machine's state). The emulator stays
synchronous so that it is tested without an event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .emulated import EmulatedMachine
from .events import EventListener
from .model import (
    ConfiguredPartition,
    ConfigureOutcome,
    EventBatch,
    Fault,
    Holder,
    IpuAttachment,
    IpuHealth,
    LinkTestKind,
    LinkTestResult,
    MachineEndpoints,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)


class EmulatedBackend:
    """One emulated IPU-Machine as a machine backend, IPUoF sessions and emulator controls."""

    def __init__(self, machine: EmulatedMachine) -> None:
        self.machine = machine

    @property
    def agent_id(self) -> str:
        return self.machine.agent_id

    # ------------------------------------------------------ MachineBackend

    async def identity(self) -> MachineIdentity:
        return self.machine.identity()

    async def ipu_attributes(self) -> dict[int, dict[str, str]]:
        return self.machine.ipu_attributes()

    async def set_endpoints(self, endpoints: MachineEndpoints) -> None:
        self.machine.set_endpoints(endpoints)

    async def configure(self, config: PartitionConfig) -> ConfigureOutcome:
        return self.machine.configure(config)

    async def release(self, partition_id: str) -> bool:
        return self.machine.release(partition_id)

    async def reset(
        self, partition_id: str, *, unless_attached: bool = False
    ) -> ConfiguredPartition:
        return self.machine.reset(partition_id, unless_attached=unless_attached)

    async def configurations(self) -> list[ConfiguredPartition]:
        return self.machine.configurations()

    async def run_link_tests(self, tests: Iterable[LinkTestKind] = ()) -> list[LinkTestResult]:
        return self.machine.run_link_tests(tests)

    async def health(self, since_event: int = 0) -> MachineHealth:
        return self.machine.health(since_event)

    async def ipu_status(self, device_id: int) -> IpuHealth:
        return self.machine.ipu_status(device_id)

    async def events_since(self, sequence: int) -> EventBatch:
        return self.machine.events_since(sequence)

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        return self.machine.subscribe(listener)

    async def attachments(self) -> list[IpuAttachment]:
        return self.machine.attachments()

    async def detach(self, attachment_id: int, *, evicted: bool = False, detail: str = "") -> bool:
        return self.machine.detach(attachment_id, evicted=evicted, detail=detail)

    # ------------------------------------------------------- IpuofSessions

    async def attach(
        self,
        partition_id: str | None,
        device_id: int,
        client: str,
        holder: Holder | None = None,
    ) -> IpuAttachment:
        return self.machine.attach(partition_id, device_id, client, holder)

    async def set_load(self, attachment_id: int, load: float) -> bool:
        return self.machine.set_load(attachment_id, load)

    # ---------------------------------------------------- EmulatorControls

    async def inject_fault(self, fault: Fault) -> list[Fault]:
        return self.machine.inject_fault(fault)

    async def clear_fault(self, fault: Fault | None) -> list[Fault]:
        return self.machine.clear_fault(fault)

    async def faults(self) -> list[Fault]:
        return self.machine.faults()
