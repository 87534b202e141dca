"""The seam between the GPU host agent and its GPUs: hardware duties only.

:class:`GpuBackend` is what the agent asks of a host's GPUs. :mod:`.nvml`
implements it with NVML (``nvidia-ml-py``) on real GPUs, :mod:`.emulated`
in files where there are none; what makes an emulated GPU fail (an XID, a
hot GPU) is a separate test interface (:class:`.emulated.EmulatorControls`),
never part of this protocol.
"""

from __future__ import annotations

from typing import Protocol

from .model import DeviceNode, GpuReading, HostInventory


class GpuBackendError(Exception):
    """The backend cannot answer (no driver, NVML not loadable): a sentence saying why."""


class GpuBackend(Protocol):
    async def inventory(self) -> HostInventory:
        """The host's GPUs: model, UUID, memory, PCI bus id, NVLink and peer topology, MIG
        mode, driver and CUDA versions, device nodes."""

    async def sample(self) -> list[GpuReading]:
        """One reading of every GPU (utilisation, memory, temperature, power, last XID,
        ECC and retired or remapped pages, throttle reasons)."""

    def device_nodes(self, index: int) -> tuple[DeviceNode, ...]:
        """What a process using GPU ``index`` must see: ``/dev/nvidiaN`` and the control
        nodes (``nvidiactl``, ``nvidia-uvm``, ``nvidia-uvm-tools``)."""

    async def close(self) -> None: ...
