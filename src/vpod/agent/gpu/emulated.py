"""Emulated GPUs: an NVML stand-in for hosts without GPUs (``vpod up``, the tests).

An :class:`EmulatedNvml` host has ``count`` GPUs of one model. Its device
nodes are stand-in files under ``device_dir`` (``nvidia0``..., ``nvidiactl``,
``nvidia-uvm``, ``nvidia-uvm-tools``), so a sandbox can bind them where a
real host binds ``/dev/nvidiaN`` and a test can check what a server sees.
UUIDs and PCI bus ids are derived from the host id: the same host finds the
same GPUs again after a restart.

What the hardware would do on its own (an XID, overheating, ECC errors, load)
is set through :class:`EmulatorControls`, the test interface, kept apart from
the backend protocol: it writes ``device_dir/emulator.json``, which the
backend reads at every sample, so a test (or an operator rehearsing a
failure) can make a GPU of a running agent process fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import CONTROL_DEVICES, DeviceNode, GpuInfo, GpuReading, HostInventory


@dataclass(frozen=True)
class EmulatedModel:
    name: str
    memory_mib: int
    nvlink: bool
    power_idle_w: float
    slowdown_c: int


MODELS: dict[str, EmulatedModel] = {
    "h100-80": EmulatedModel("NVIDIA H100 80GB HBM3", 81559, True, 72.0, 90),
    "a100-80": EmulatedModel("NVIDIA A100-SXM4-80GB", 81920, True, 61.0, 90),
    "a100-40": EmulatedModel("NVIDIA A100-PCIE-40GB", 40960, False, 38.0, 90),
    "l40s-48": EmulatedModel("NVIDIA L40S", 46068, False, 35.0, 90),
}
"""Emulated models by the cloud's host model names."""

DRIVER_VERSION = "550.90.07"
CUDA_VERSION = "12.4"
CONTROLS_FILE = "emulator.json"
_NAMESPACE = uuid.UUID("6c1f5e2a-5d3b-4f0e-9a51-0b8f3c2d7e11")


def emulated_uuid(host_id: str, index: int) -> str:
    return f"GPU-{uuid.uuid5(_NAMESPACE, f'{host_id}/{index}')}"


def _bus_id(index: int) -> str:
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


class EmulatedNvml:
    """``count`` emulated GPUs of ``model`` on host ``host_id``."""

    def __init__(self, host_id: str, model: str, count: int, device_dir: Path) -> None:
        if model not in MODELS:
            raise ValueError(f"no emulated GPU model {model!r}: use {', '.join(MODELS)}")
        if not 1 <= count <= 64:
            raise ValueError(f"an emulated host has 1 to 64 GPUs, not {count}")
        self.host_id = host_id
        self.model = MODELS[model]
        self.count = count
        self.device_dir = device_dir.resolve()
        self._make_nodes()

    def _make_nodes(self) -> None:
        self.device_dir.mkdir(parents=True, exist_ok=True)
        names = [f"nvidia{i}" for i in range(self.count)]
        names += [Path(p).name for p in CONTROL_DEVICES]
        for name in names:
            node = self.device_dir / name
            if not node.exists():
                node.write_text(f"stand-in for /dev/{name} of emulated host {self.host_id}\n")
                node.chmod(0o666)

    def device_nodes(self, index: int) -> tuple[DeviceNode, ...]:
        own = DeviceNode(f"/dev/nvidia{index}", str(self.device_dir / f"nvidia{index}"))
        control = (DeviceNode(p, str(self.device_dir / Path(p).name)) for p in CONTROL_DEVICES)
        return (own, *control)

    async def inventory(self) -> HostInventory:
        gpus = []
        for i in range(self.count):
            peers = tuple(_bus_id(j) for j in range(self.count) if j != i) * self.model.nvlink
            link = "NVLINK" if self.model.nvlink else "NODE"
            topology = tuple(
                (j, link if self.model.nvlink or (i // 4 == j // 4) else "SYS")
                for j in range(self.count)
                if j != i
            )
            gpus.append(
                GpuInfo(
                    index=i,
                    uuid=emulated_uuid(self.host_id, i),
                    name=self.model.name,
                    memory_mib=self.model.memory_mib,
                    pci_bus_id=_bus_id(i),
                    minor=i,
                    mig_mode=False
                    if "A100" in self.model.name or "H100" in self.model.name
                    else None,
                    nvlink_peers=peers,
                    topology=topology,
                    devices=self.device_nodes(i),
                )
            )
        return HostInventory(
            hostname=self.host_id,
            driver_version=DRIVER_VERSION,
            cuda_version=CUDA_VERSION,
            backend="emulated",
            gpus=tuple(gpus),
        )

    async def sample(self) -> list[GpuReading]:
        controls = await asyncio.to_thread(read_controls, self.device_dir)
        readings = []
        for i in range(self.count):
            c = controls.get(str(i), {})
            busy = int(c.get("utilization_pct", 0))
            readings.append(
                GpuReading(
                    index=i,
                    uuid=emulated_uuid(self.host_id, i),
                    utilization_pct=busy,
                    memory_used_mib=int(c.get("memory_used_mib", 0)),
                    memory_total_mib=self.model.memory_mib,
                    temperature_c=int(c.get("temperature_c", 33 + i % 4)),
                    slowdown_temperature_c=self.model.slowdown_c,
                    power_w=float(c.get("power_w", self.model.power_idle_w + 3.5 * busy)),
                    last_xid=int(c.get("xid", 0)),
                    ecc_uncorrected=int(c.get("ecc_uncorrected", 0)),
                    retired_pages_pending=bool(c.get("retired_pages_pending", False)),
                    throttle_reasons=tuple(c.get("throttle_reasons", ())),
                    lost=bool(c.get("lost", False)),
                )
            )
        return readings

    async def close(self) -> None:
        return None


def read_controls(device_dir: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((device_dir / CONTROLS_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class EmulatorControls:
    """The test interface of an emulated host: make its GPUs fail, heat up or work.

    Works across processes (it edits ``device_dir/emulator.json`` under a lock); the
    agent's next sample shows the change."""

    def __init__(self, device_dir: Path) -> None:
        self.device_dir = device_dir

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, dict[str, Any]]]:
        self.device_dir.mkdir(parents=True, exist_ok=True)
        with open(self.device_dir / ".emulator.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = read_controls(self.device_dir)
            yield data
            tmp = self.device_dir / f".{CONTROLS_FILE}.tmp"
            tmp.write_text(json.dumps(data, indent=1) + "\n")
            os.replace(tmp, self.device_dir / CONTROLS_FILE)

    def set(self, index: int, **values: Any) -> None:
        """Set readings of GPU ``index``: ``xid``, ``temperature_c``, ``ecc_uncorrected``,
        ``retired_pages_pending``, ``utilization_pct``, ``memory_used_mib``, ``power_w``,
        ``throttle_reasons``, ``lost``."""
        with self._editing() as data:
            data.setdefault(str(index), {}).update(values)

    def inject_xid(self, index: int, xid: int) -> None:
        self.set(index, xid=xid)

    def make_hot(self, index: int, temperature_c: int = 95) -> None:
        self.set(index, temperature_c=temperature_c)

    def clear(self, index: int | None = None) -> None:
        """GPU ``index`` (every GPU: None) back to its idle, healthy readings."""
        with self._editing() as data:
            if index is None:
                data.clear()
            else:
                data.pop(str(index), None)
