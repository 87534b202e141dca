"""Real GPUs through NVML (``nvidia-ml-py``, imported as ``pynvml``).

NVML calls block, so each runs in a worker thread (``asyncio.to_thread``)
behind the async :class:`~.backend.GpuBackend` protocol: the agent's event
loop never waits on the driver. XID errors arrive as NVML
events: a thread waits on an event set registered for critical XIDs of every
GPU and remembers each GPU's last one, which stays in its readings (and so
keeps the GPU unhealthy) until the agent restarts: an XID of the hardware
kind needs a GPU reset, after which the operator restarts the agent. A GPU
NVML reports lost (``GPU is lost``) reads as ``lost``.

Nothing here runs without the NVIDIA driver; :meth:`NvmlBackend.open` says
why in a sentence (:class:`~.backend.GpuBackendError`) when NVML cannot load.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pynvml

from .backend import GpuBackendError
from .model import CONTROL_DEVICES, DeviceNode, GpuInfo, GpuReading, HostInventory

log = logging.getLogger("vpod.agent.gpu")
T = TypeVar("T")

_TOPOLOGY = {0: "SELF", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
"""NVML's common-ancestor levels as ``nvidia-smi topo -m`` names them."""
_THROTTLE = {
    "sw_power_cap": pynvml.nvmlClocksThrottleReasonSwPowerCap,
    "hw_slowdown": pynvml.nvmlClocksThrottleReasonHwSlowdown,
    "sw_thermal_slowdown": pynvml.nvmlClocksThrottleReasonSwThermalSlowdown,
    "hw_thermal_slowdown": pynvml.nvmlClocksThrottleReasonHwThermalSlowdown,
    "hw_power_brake_slowdown": pynvml.nvmlClocksThrottleReasonHwPowerBrakeSlowdown,
}
"""Throttle reasons worth an operator's eye (idle, application clocks and sync boost are not)."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(default: T, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, or ``default`` where the GPU does not support it."""
    try:
        return call(*args)
    except pynvml.NVMLError:
        return default


class NvmlBackend:
    """Every GPU NVML sees on this host."""

    def __init__(self) -> None:
        self._handles: list[Any] = []
        self._xids: dict[int, int] = {}
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    @classmethod
    async def open(cls) -> NvmlBackend:
        backend = cls()
        await asyncio.to_thread(backend._open)
        return backend

    def _open(self) -> None:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise GpuBackendError(
                f"NVML cannot start ({exc}): is the NVIDIA driver installed and loaded"
                " (`nvidia-smi` works)?"
            ) from None
        count = pynvml.nvmlDeviceGetCount()
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self._watcher = threading.Thread(target=self._watch_xids, name="nvml-xid", daemon=True)
        self._watcher.start()

    def _watch_xids(self) -> None:
        """Remember each GPU's last critical XID (NVML's event set, polled every second)."""
        try:
            events = pynvml.nvmlEventSetCreate()
        except pynvml.NVMLError as exc:
            log.warning("NVML events unavailable, XIDs will not be seen: %s", exc)
            return
        index_of: dict[str, int] = {}
        for index, handle in enumerate(self._handles):
            try:
                pynvml.nvmlDeviceRegisterEvents(
                    handle, pynvml.nvmlEventTypeXidCriticalError, events
                )
                index_of[_text(pynvml.nvmlDeviceGetUUID(handle))] = index
            except pynvml.NVMLError as exc:
                log.warning("GPU %d: XID events unavailable: %s", index, exc)
        while not self._stop.is_set():
            try:
                event = pynvml.nvmlEventSetWait_v2(events, 1000)
            except pynvml.NVMLError_Timeout:
                continue
            except pynvml.NVMLError as exc:
                log.warning("waiting for NVML events failed: %s", exc)
                self._stop.wait(1.0)
                continue
            uuid = _text(_optional("", pynvml.nvmlDeviceGetUUID, event.device))
            found = index_of.get(uuid)
            if found is not None:
                self._xids[found] = int(event.eventData)
                log.error("GPU %d (%s): XID %d", found, uuid, event.eventData)
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlEventSetFree(events)

    def _device_nodes(self, index: int) -> tuple[DeviceNode, ...]:
        """The nodes GPU ``index`` needs. Calls NVML: only from a worker thread."""
        minor = _optional(index, pynvml.nvmlDeviceGetMinorNumber, self._handles[index])
        own = f"/dev/nvidia{minor}"
        return (DeviceNode(own, own), *(DeviceNode(p, p) for p in CONTROL_DEVICES))

    async def inventory(self) -> HostInventory:
        return await asyncio.to_thread(self._inventory)

    def _inventory(self) -> HostInventory:
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        bus_ids = [_text(pynvml.nvmlDeviceGetPciInfo(h).busId) for h in self._handles]
        gpus = []
        for index, handle in enumerate(self._handles):
            peers = []
            for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
                active = _optional(0, pynvml.nvmlDeviceGetNvLinkState, handle, link)
                if active == pynvml.NVML_FEATURE_ENABLED:
                    remote = pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link)
                    peers.append(_text(remote.busId))
            topology = []
            for other, other_handle in enumerate(self._handles):
                if other == index:
                    continue
                if bus_ids[other] in peers:
                    topology.append((other, "NVLINK"))
                    continue
                level = _optional(
                    50, pynvml.nvmlDeviceGetTopologyCommonAncestor, handle, other_handle
                )
                topology.append((other, _TOPOLOGY.get(int(level), "SYS")))
            mig = _optional(None, pynvml.nvmlDeviceGetMigMode, handle)
            gpus.append(
                GpuInfo(
                    index=index,
                    uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                    name=_text(pynvml.nvmlDeviceGetName(handle)),
                    memory_mib=int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // 2**20,
                    pci_bus_id=bus_ids[index],
                    minor=_optional(index, pynvml.nvmlDeviceGetMinorNumber, handle),
                    mig_mode=None if mig is None else bool(mig[0]),
                    nvlink_peers=tuple(peers),
                    topology=tuple(topology),
                    devices=self._device_nodes(index),
                )
            )
        return HostInventory(
            hostname=socket.gethostname(),
            driver_version=_text(pynvml.nvmlSystemGetDriverVersion()),
            cuda_version=f"{cuda // 1000}.{cuda % 1000 // 10}",
            backend="nvml",
            gpus=tuple(gpus),
        )

    async def sample(self) -> list[GpuReading]:
        return await asyncio.to_thread(self._sample)

    def _sample(self) -> list[GpuReading]:
        return [self._read(index, handle) for index, handle in enumerate(self._handles)]

    def _read(self, index: int, handle: Any) -> GpuReading:
        try:
            uuid = _text(pynvml.nvmlDeviceGetUUID(handle))
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        except pynvml.NVMLError_GpuIsLost:
            return GpuReading(index=index, uuid="", last_xid=self._xids.get(index, 0), lost=True)
        remapped = _optional((0, 0, 0, 0), pynvml.nvmlDeviceGetRemappedRows, handle)
        reasons = _optional(0, pynvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
        pending = _optional(0, pynvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
        nvml = pynvml
        retired: list[Any] = _optional(
            [],
            nvml.nvmlDeviceGetRetiredPages,
            handle,
            nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
        )
        utilization = _optional(None, nvml.nvmlDeviceGetUtilizationRates, handle)
        return GpuReading(
            index=index,
            uuid=uuid,
            utilization_pct=int(utilization.gpu) if utilization is not None else 0,
            memory_used_mib=int(memory.used) // 2**20,
            memory_total_mib=int(memory.total) // 2**20,
            temperature_c=int(
                _optional(0, nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
            ),
            slowdown_temperature_c=int(
                _optional(
                    0,
                    nvml.nvmlDeviceGetTemperatureThreshold,
                    handle,
                    nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
                )
            ),
            power_w=_optional(0, nvml.nvmlDeviceGetPowerUsage, handle) / 1000.0,
            last_xid=self._xids.get(index, 0),
            ecc_uncorrected=int(
                _optional(
                    0,
                    nvml.nvmlDeviceGetTotalEccErrors,
                    handle,
                    nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                    nvml.NVML_VOLATILE_ECC,
                )
            ),
            ecc_corrected=int(
                _optional(
                    0,
                    nvml.nvmlDeviceGetTotalEccErrors,
                    handle,
                    nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                    nvml.NVML_VOLATILE_ECC,
                )
            ),
            retired_pages=len(retired),
            retired_pages_pending=pending == pynvml.NVML_FEATURE_ENABLED,
            remapped_rows_pending=bool(remapped[2]),
            remapping_failed=bool(remapped[3]),
            throttle_reasons=tuple(name for name, bit in _THROTTLE.items() if reasons & bit),
        )

    async def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.join, 3.0)
        with contextlib.suppress(pynvml.NVMLError):
            await asyncio.to_thread(pynvml.nvmlShutdown)
