"""What the cloud accepts from a GPU host agent, and what it makes of it. Pure.

- :func:`host_model_of`: the cloud's host model (``h100-80``) of a GPU NVML
  names (``NVIDIA H100 80GB HBM3``, 81559 MiB): the family in the name, the
  nearest memory size the catalog has for it;
- :func:`check_inventory`: refuses an inventory a server could not safely be
  given: GPU indexes 0..N-1, one UUID each, device nodes only NVIDIA's
  (``/dev/nvidiaN``, ``nvidiactl``, ``nvidia-uvm``, ``nvidia-uvm-tools``)
  from absolute host paths, so an agent can never have a server shown
  another device of the host;
- :func:`unusable_slots`: which slots of a host must not be handed out now,
  and why (unhealthy GPUs; every GPU of a host whose agent went silent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vpod.agent.gpu.model import HostInventory

from .flavors import HOST_MODELS, gpu_family
from .model import errors

MAX_GPUS = 64
DEVICE_PATH = re.compile(r"/dev/nvidia([0-9]{1,3}|ctl|-uvm|-uvm-tools)")
_UUID = re.compile(r"(GPU|MIG)-[0-9A-Za-z-]{1,60}")
_SOURCE = re.compile(r"/[^\0\n]{1,254}")


def host_model_of(name: str, memory_mib: int) -> str | None:
    """The catalog's model for a GPU (None: no family of the catalog matches its name)."""
    lowered = name.lower().replace(" ", "")
    for model in HOST_MODELS:
        family = gpu_family(model)
        if model != "poplar" and family in lowered:
            sizes = [m for m in HOST_MODELS if gpu_family(m) == family]
            gib = memory_mib / 1024
            return min(sizes, key=lambda m: (abs(int(m.split("-")[1]) - gib), m))
    return None


def _short(value: str, what: str, limit: int = 64) -> None:
    if not value or len(value) > limit or any(ord(c) < 32 for c in value):
        raise errors.InvalidArgument(f"{what} {value[:70]!r} is empty, too long or not printable")


def check_inventory(inventory: HostInventory) -> None:
    """InvalidArgument with a sentence for an inventory the cloud cannot use."""
    gpus = inventory.gpus
    if not 1 <= len(gpus) <= MAX_GPUS:
        raise errors.InvalidArgument(
            f"a GPU host reports 1 to {MAX_GPUS} GPUs, not {len(gpus)}: is the driver loaded?"
        )
    if sorted(g.index for g in gpus) != list(range(len(gpus))):
        raise errors.InvalidArgument("GPU indexes must be 0 to N-1, each once")
    uuids = [g.uuid for g in gpus]
    if len(set(uuids)) != len(uuids):
        raise errors.InvalidArgument("two GPUs of the inventory have the same UUID")
    for text, what in (
        (inventory.driver_version, "driver version"),
        (inventory.cuda_version, "CUDA version"),
        (inventory.backend, "backend"),
    ):
        _short(text, what)
    _short(inventory.hostname, "host name", 255)
    for gpu in gpus:
        if _UUID.fullmatch(gpu.uuid) is None:
            raise errors.InvalidArgument(f"GPU {gpu.index}: {gpu.uuid[:70]!r} is not a GPU UUID")
        _short(gpu.name, f"GPU {gpu.index}: name")
        _short(gpu.pci_bus_id, f"GPU {gpu.index}: PCI bus id")
        if gpu.memory_mib <= 0:
            raise errors.InvalidArgument(f"GPU {gpu.index}: memory {gpu.memory_mib} MiB")
        if not gpu.devices:
            raise errors.InvalidArgument(f"GPU {gpu.index} has no device nodes")
        for node in gpu.devices:
            if DEVICE_PATH.fullmatch(node.path) is None:
                raise errors.InvalidArgument(
                    f"GPU {gpu.index}: {node.path[:70]!r} is not an NVIDIA device node"
                    " (/dev/nvidiaN, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools)"
                )
            if _SOURCE.fullmatch(node.source) is None or "/../" in node.source + "/":
                raise errors.InvalidArgument(
                    f"GPU {gpu.index}: device source {node.source[:70]!r} is not an absolute path"
                )


@dataclass(frozen=True)
class GpuState:
    """One GPU of an agent's host, as the store holds it."""

    idx: int
    uuid: str
    healthy: bool
    problems: str


def describe(host_id: str, gpu: GpuState) -> str:
    """``GPU 3 (GPU-…) of host bm-1: XID 79 (GPU has fallen off the bus)``."""
    return f"GPU {gpu.idx} ({gpu.uuid}) of host {host_id}: {gpu.problems or 'unhealthy'}"


def unusable_slots(
    host_id: str, gpus: Iterable[GpuState], silent_for_s: float | None, slots: int
) -> Mapping[int, str]:
    """Slot -> why it must not be handed out, for a host with an agent (``silent_for_s``:
    how long its agent has been silent, None while it reports)."""
    by_slot = {g.idx: g for g in gpus}
    unusable: dict[int, str] = {}
    for slot in range(slots):
        gpu = by_slot.get(slot)
        if silent_for_s is not None:
            unusable[slot] = f"the GPU agent of host {host_id} is silent ({silent_for_s:.0f} s)"
        elif gpu is None:
            unusable[slot] = f"GPU {slot} of host {host_id} is missing from its inventory"
        elif not gpu.healthy:
            unusable[slot] = describe(host_id, gpu)
    return unusable
