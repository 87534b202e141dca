"""The seam between the GPU host agent and its GPUs: hardware duties only.

:class:`GpuBackend` is what the agent asks of a host's GPUs. :mod:`.nvml`
implements it with NVML (``nvidia-ml-py``) on real GPUs, :mod:`.emulated`
in files where there are none; what makes an emulated GPU fail (an XID, a
hot GPU) is a separate test interface (:class:`.emulated.EmulatorControls`),
never part of this protocol.

It is the GPU-shaped sibling of the IPU agent's
:class:`~vpod.agent.backend.MachineBackend` (decision, docs/agent-protocol.md):
a GPU host is handed out whole and only read (inventory, samples), while an
IPU-Machine is configured, reset and link-tested per partition, so the two
share no method worth a common protocol. They share the rule: every call is
async, and a backend whose library blocks (NVML) runs each call in a thread.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .model import GpuReading, HostInventory


class GpuBackendError(Exception):
    """The backend cannot answer (no driver, NVML not loadable): a sentence saying why."""


@runtime_checkable
class GpuBackend(Protocol):
    async def inventory(self) -> HostInventory:
        """The host's GPUs: model, UUID, memory, PCI bus id, NVLink and peer topology, MIG
        mode, driver and CUDA versions, and the device nodes a process using each GPU must
        see (``/dev/nvidiaN`` and the control nodes)."""
        ...

    async def sample(self) -> list[GpuReading]:
        """One reading of every GPU (utilisation, memory, temperature, power, last XID,
        ECC and retired or remapped pages, throttle reasons)."""
        ...

    async def close(self) -> None: ...
