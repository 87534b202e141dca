"""What the agent needs from the IPU-Machine it manages: the hardware seam.

Three protocols, split by who has the duty (decision; docs/agent-protocol.md):

- :class:`MachineBackend`: what real hardware does and any backend implements:
  identity and inventory, configure / release / reset the IPUs of a
  partition, link tests, health and telemetry readings, events, and seeing
  and evicting the applications attached over IPUoF.
- :class:`IpuofSessions`: the hooks a software IPUoF server
  (:class:`~vpod.agent.ipuof.IpuofEndpoints`) needs to take applications in.
  On an IPU-M the IPUoF server is the machine's own, so a hardware backend
  does not implement this and the agent runs no IPUoF listeners.
- :class:`EmulatorControls`: what only an emulator can do (inject and clear
  machine faults). The agent service reaches it only when started with
  ``--enable-fault-injection``.

Every call that can touch hardware is async. The emulated backend
(:class:`~vpod.agent.emulated_backend.EmulatedBackend`) answers from memory
and runs on the event loop; a backend whose driver blocks (ioctl, a vendor
library) runs each call in a thread (``asyncio.to_thread``) behind the same
methods, as the GPU agent's NVML backend does, so one slow call never stalls
the other machines and RPCs the agent serves. The agent may make calls
concurrently; a backend that cannot take that serialises them itself.

Every mutating method is idempotent, because the controller repeats calls
that timed out. Refusals are :class:`~vpod.agent.errors.MachineRefusal`
subclasses; any other exception is a bug. The composition root (the fleet,
:mod:`vpod.agent.fleet`) picks the backend; the host and the service know
only these protocols (an import-linter contract keeps it so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class MachineBackend(Protocol):
    """One IPU-Machine: four IPUs, their links, partitions, attachments and readings."""

    @property
    def agent_id(self) -> str: ...

    async def identity(self) -> MachineIdentity:
        """Who the machine is: serials, addresses, IPUs, software versions, boot id."""
        ...

    async def ipu_attributes(self) -> dict[int, dict[str, str]]:
        """Attributes of each IPU by device id, as ``gc-info`` names them."""
        ...

    async def set_endpoints(self, endpoints: MachineEndpoints) -> None:
        """Where the agent serves this machine (known once its listeners are bound);
        :meth:`identity` reports it."""
        ...

    async def configure(self, config: PartitionConfig) -> ConfigureOutcome:
        """Make ``config`` the machine's configuration of that partition; it is active on return.

        The same (partition_id, generation) again is a no-op (``changed`` False);
        a higher generation replaces the old configuration; a lower one is refused.
        """
        ...

    async def release(self, partition_id: str) -> bool:
        """Remove a partition's configuration; False when it was not configured."""
        ...

    async def reset(
        self, partition_id: str, *, unless_attached: bool = False
    ) -> ConfiguredPartition:
        """Put the partition's IPUs back into their initial state, detaching applications.

        ``unless_attached``: refuse instead (:class:`MachineConflict`, ``IPU_ATTACHED``) while
        an application holds one of them, checked in the same step as the reset.
        """
        ...

    async def configurations(self) -> list[ConfiguredPartition]:
        """Every configured partition, by partition id."""
        ...

    async def run_link_tests(self, tests: Iterable[LinkTestKind] = ()) -> list[LinkTestResult]:
        """Run the named tests (all when empty) in :class:`LinkTestKind` order."""
        ...

    async def health(self, since_event: int = 0) -> MachineHealth:
        """Per-IPU and per-link state and telemetry, active faults, events after
        ``since_event``."""
        ...

    async def ipu_status(self, device_id: int) -> IpuHealth:
        """One IPU's health, partition, holder and telemetry."""
        ...

    async def events_since(self, sequence: int) -> EventBatch: ...

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        """Call ``listener`` on the agent's event loop on every event; returns the function
        that unsubscribes. (A backend that learns of events in a thread hands them over
        with ``loop.call_soon_threadsafe``.)"""
        ...

    async def attachments(self) -> list[IpuAttachment]:
        """Every application attached now, by device id."""
        ...

    async def detach(self, attachment_id: int, *, evicted: bool = False, detail: str = "") -> bool:
        """End an attachment (the agent evicts an application); False when it had ended."""
        ...


@runtime_checkable
class IpuofSessions(Protocol):
    """What a software IPUoF server asks of the machine it serves applications for."""

    @property
    def agent_id(self) -> str: ...

    async def attach(
        self,
        partition_id: str | None,
        device_id: int,
        client: str,
        holder: Holder | None = None,
    ) -> IpuAttachment:
        """An application attaches to one IPU over IPUoF (one application per IPU).

        ``partition_id`` None attaches whatever active partition holds the IPU
        (a static IPUoF config names no partition); ``holder`` is who the
        application says it is, shown to whoever asks who holds the IPU.
        """
        ...

    async def set_load(self, attachment_id: int, load: float) -> bool:
        """The attached application reports how busy its IPU is (0..1); False if it ended.
        (Emulated telemetry follows it; real hardware measures instead.)"""
        ...

    async def detach(self, attachment_id: int, *, evicted: bool = False, detail: str = "") -> bool:
        """End an attachment; False when it had ended already."""
        ...

    async def ipu_status(self, device_id: int) -> IpuHealth:
        """One IPU's health, partition, holder and telemetry (an IPUoF ``STATUS`` line)."""
        ...

    def subscribe(self, listener: EventListener) -> Callable[[], None]:
        """As :meth:`MachineBackend.subscribe`: the server closes evicted connections."""
        ...


@runtime_checkable
class EmulatorControls(Protocol):
    """The test interface of an emulated machine: faults real hardware only suffers."""

    async def inject_fault(self, fault: Fault) -> list[Fault]:
        """Start a machine fault (IPU or link); returns the active machine faults."""
        ...

    async def clear_fault(self, fault: Fault | None) -> list[Fault]:
        """End the fault with the same target, or every machine fault when ``None``."""
        ...

    async def faults(self) -> list[Fault]:
        """The machine faults injected and not cleared."""
        ...
