"""What a GPU host agent knows and says: its inventory and its GPUs' samples.

Plain values with a JSON shape of their own (:meth:`to_json` / ``from_json``): the
agent sends them to the controller's cloud API, which reads them back with the same
functions, so both sides agree on one shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

CONTROL_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
"""Device nodes every process using a GPU needs beside its ``/dev/nvidiaN``."""


@dataclass(frozen=True)
class DeviceNode:
    """A device node as a server sees it (``path``) and where it is on the host (``source``:
    the same for real GPUs, a stand-in file for emulated ones)."""

    path: str
    source: str


@dataclass(frozen=True)
class GpuInfo:
    index: int
    uuid: str
    name: str
    """NVML's product name, e.g. ``NVIDIA H100 80GB HBM3``."""
    memory_mib: int
    pci_bus_id: str
    minor: int
    """N of ``/dev/nvidiaN``."""
    mig_mode: bool | None
    """MIG enabled (None: the GPU has no MIG)."""
    nvlink_peers: tuple[str, ...] = ()
    """PCI bus ids at the far end of its active NVLinks."""
    topology: tuple[tuple[int, str], ...] = ()
    """(other GPU's index, path): ``NVLINK``, or the closest common ancestor (``PIX``,
    ``PXB``, ``PHB``, ``NODE``, ``SYS``), as ``nvidia-smi topo -m`` names them."""
    devices: tuple[DeviceNode, ...] = ()
    """Its own node and the control nodes: what a server holding it must see."""


@dataclass(frozen=True)
class HostInventory:
    hostname: str
    driver_version: str
    cuda_version: str
    """The CUDA version the driver supports, e.g. ``12.4``."""
    backend: str
    """``nvml`` or ``emulated``."""
    gpus: tuple[GpuInfo, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> HostInventory:
        gpus = tuple(
            GpuInfo(
                **{
                    **g,
                    "nvlink_peers": tuple(g.get("nvlink_peers", ())),
                    "topology": tuple((int(i), str(p)) for i, p in g.get("topology", ())),
                    "devices": tuple(DeviceNode(**d) for d in g.get("devices", ())),
                }
            )
            for g in data["gpus"]
        )
        return HostInventory(**{**data, "gpus": gpus})


@dataclass(frozen=True)
class GpuReading:
    """What the hardware says of one GPU at one moment (before any judgement)."""

    index: int
    uuid: str
    utilization_pct: int = 0
    memory_used_mib: int = 0
    memory_total_mib: int = 0
    temperature_c: int = 0
    slowdown_temperature_c: int = 0
    """Where the GPU starts slowing itself down (0: unknown)."""
    power_w: float = 0.0
    last_xid: int = 0
    """The last XID error reported since the agent started (0: none)."""
    ecc_uncorrected: int = 0
    """Volatile uncorrectable ECC errors (since the last driver load)."""
    ecc_corrected: int = 0
    retired_pages: int = 0
    retired_pages_pending: bool = False
    remapped_rows_pending: bool = False
    remapping_failed: bool = False
    throttle_reasons: tuple[str, ...] = ()
    lost: bool = False
    """NVML cannot reach the GPU any more (fallen off the bus, ``GPU is lost``)."""


@dataclass(frozen=True)
class GpuSample:
    """A reading and the agent's verdict on it."""

    reading: GpuReading
    healthy: bool
    problems: tuple[str, ...] = ()
    """Why it is unhealthy, one sentence each."""
    warnings: tuple[str, ...] = field(default=())
    """What an operator should know that does not take it out of service (throttling)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> GpuSample:
        reading = dict(data["reading"])
        reading["throttle_reasons"] = tuple(reading.get("throttle_reasons", ()))
        return GpuSample(
            reading=GpuReading(**reading),
            healthy=bool(data["healthy"]),
            problems=tuple(data.get("problems", ())),
            warnings=tuple(data.get("warnings", ())),
        )
