"""Hardware catalog: the machines vpod manages and their published figures.

Figures are the vendors' seed figures (vipu-system.md §1). They are data, not
behaviour: placement only needs ``ipus_per_machine``; the CLIs, the agent's IPU
attributes and the cloud layer's flavors read the rest.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class MachineType(enum.StrEnum):
    """The IPU-Machine models an agent can drive."""

    M2000 = "IPU-M2000"
    BOW2000 = "Bow-2000"


IPUS_PER_MACHINE = 4


@dataclass(frozen=True, slots=True)
class IpuMachineSpec:
    """One IPU-Machine model as the datasheet gives it."""

    machine_type: MachineType
    ipu_type: str
    ipu_arch_id: int
    ipus: int
    clock_mhz: int
    ipu_cores: int
    worker_threads: int
    ai_pflops: float
    fp32_pflops: float
    in_processor_memory_gb: float
    streaming_memory_gb: int
    ipu_links: int
    gw_links: int
    board_type: str
    ipu_version: str


@dataclass(frozen=True, slots=True)
class GpuServerSpec:
    """One GPU server type offered by the cloud layer."""

    key: str
    gpu_model: str
    gpus: int
    gpu_memory_gb: int
    cpus: str
    ram_gb: int
    storage: str
    network: str
    infiniband: bool


_M2000 = IpuMachineSpec(
    machine_type=MachineType.M2000,
    ipu_type="Colossus GC200",
    ipu_arch_id=2,
    ipus=IPUS_PER_MACHINE,
    clock_mhz=1325,
    ipu_cores=5888,
    worker_threads=35328,
    ai_pflops=1.0,
    fp32_pflops=0.25,
    in_processor_memory_gb=3.6,
    streaming_memory_gb=256,
    ipu_links=8,
    gw_links=2,
    board_type="M2000",
    ipu_version="ipu2",
)

# The Bow-2000 is the IPU-M2000 with the Bow IPU (the GC200 on a power-delivery wafer): the
# same cores, memory and links, a faster clock.
_BOW2000 = replace(
    _M2000,
    machine_type=MachineType.BOW2000,
    ipu_type="Bow IPU",
    clock_mhz=1850,
    ai_pflops=1.394,
    fp32_pflops=0.349,
    board_type="Bow-2000",
    ipu_version="ipu21",
)

IPU_MACHINES: dict[MachineType, IpuMachineSpec] = {
    spec.machine_type: spec for spec in (_M2000, _BOW2000)
}


_A100_IB = GpuServerSpec(
    key="a100-ib",
    gpu_model="A100",
    gpus=8,
    gpu_memory_gb=80,
    cpus="2 x Xeon 8468",
    ram_gb=2048,
    storage="NVMe",
    network="800 Gbit/s InfiniBand",
    infiniband=True,
)

GPU_SERVERS: dict[str, GpuServerSpec] = {
    spec.key: spec
    for spec in (
        GpuServerSpec(
            key="h100-ib",
            gpu_model="H100",
            gpus=8,
            gpu_memory_gb=80,
            cpus="2 x Xeon 8480+",
            ram_gb=2048,
            storage="2 x 960 GB + 8 x 3.84 TB NVMe",
            network="3.2 Tbit/s InfiniBand, 2 x 100 Gbit/s Ethernet",
            infiniband=True,
        ),
        _A100_IB,
        # The same server on Ethernet only.
        replace(_A100_IB, key="a100", network="2 x 100 Gbit/s Ethernet", infiniband=False),
        GpuServerSpec(
            key="l40s",
            gpu_model="L40S",
            gpus=8,
            gpu_memory_gb=48,
            cpus="2 x Xeon 8468",
            ram_gb=2048,
            storage="4 x 7.68 TB NVMe",
            network="2 x 25 Gbit/s Ethernet",
            infiniband=False,
        ),
    )
}


def machine_spec(machine_type: MachineType | str) -> IpuMachineSpec:
    """Look up an IPU-Machine model by enum or by its name (case-insensitive)."""
    if isinstance(machine_type, MachineType):
        return IPU_MACHINES[machine_type]
    wanted = machine_type.strip().lower()
    for kind, spec in IPU_MACHINES.items():
        if wanted in (kind.value.lower(), kind.name.lower(), spec.board_type.lower()):
            return spec
    known = ", ".join(k.value for k in IPU_MACHINES)
    raise ValueError(f"unknown IPU-Machine type {machine_type!r}: use one of {known}")
