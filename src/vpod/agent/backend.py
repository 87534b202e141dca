"""What the agent needs from the IPU-Machine it manages.

:class:`MachineBackend` is the seam between the agent's protocol handling and
the hardware. :class:`~vpod.agent.emulated.EmulatedMachine` implements it in
memory; a hardware backend would drive the IPU-Gateway (link training,
isolation, sync groups, IPU reset) behind the same methods.

Calls are synchronous and made from the agent's event loop, one at a time,
so an implementation needs no locking; one that talks to hardware should keep
calls short or hand slow work to a thread behind the same interface. Every
mutating method is idempotent, because the controller repeats calls that
timed out. Refusals are :class:`~vpod.agent.errors.MachineRefusal`
subclasses; any other exception is a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .model import (
    AgentEvent,
    ConfiguredPartition,
    ConfigureOutcome,
    EventBatch,
    Fault,
    Holder,
    IpuAttachment,
    IpuHealth,
    LinkTestKind,
    LinkTestResult,
    MachineHealth,
    MachineIdentity,
    PartitionConfig,
)


class MachineBackend(Protocol):
    """One IPU-Machine: four IPUs, their links, partitions, attachments and faults."""

    @property
    def agent_id(self) -> str: ...

    def identity(self) -> MachineIdentity:
        """Who the machine is: serials, addresses, IPUs, software versions, boot id."""
        ...

    def ipu_attributes(self) -> dict[int, dict[str, str]]:
        """Attributes of each IPU by device id, as ``gc-info`` names them."""
        ...

    def configure(self, config: PartitionConfig) -> ConfigureOutcome:
        """Make ``config`` the machine's configuration of that partition; it is active on return.

        The same (partition_id, generation) again is a no-op (``changed`` False);
        a higher generation replaces the old configuration; a lower one is refused.
        """
        ...

    def release(self, partition_id: str) -> bool:
        """Remove a partition's configuration; False when it was not configured."""
        ...

    def reset(self, partition_id: str) -> ConfiguredPartition:
        """Put the partition's IPUs back into their initial state, detaching applications."""
        ...

    def configurations(self) -> list[ConfiguredPartition]:
        """Every configured partition, by partition id."""
        ...

    def run_link_tests(self, tests: Iterable[LinkTestKind] = ()) -> list[LinkTestResult]:
        """Run the named tests (all when empty) in :class:`LinkTestKind` order."""
        ...

    def health(self, since_event: int = 0) -> MachineHealth:
        """Per-IPU and per-link state, active faults, events after ``since_event``."""
        ...

    def events_since(self, sequence: int) -> EventBatch: ...

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Call ``listener`` on every event; returns the function that unsubscribes."""
        ...

    def attach(
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

    def set_load(self, attachment_id: int, load: float) -> bool:
        """The attached application reports how busy its IPU is (0..1); False if it ended."""
        ...

    def ipu_status(self, device_id: int) -> IpuHealth:
        """One IPU's health, partition, holder and telemetry."""
        ...

    def detach(self, attachment_id: int, *, evicted: bool = False, detail: str = "") -> bool:
        """End an attachment; False when it had ended already."""
        ...

    def attachments(self) -> list[IpuAttachment]:
        """Every application attached now, by device id."""
        ...

    def inject_fault(self, fault: Fault) -> list[Fault]:
        """Start a machine fault (IPU or link); returns the active machine faults."""
        ...

    def clear_fault(self, fault: Fault | None) -> list[Fault]:
        """End the fault with the same target, or every machine fault when ``None``."""
        ...

    def faults(self) -> list[Fault]: ...
