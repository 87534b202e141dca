"""The flavor catalog: what a tenant can order, what it gives and what it costs. Pure.

Four kinds of AI cluster (``ClusterKind``):

- a *virtual vPOD*: a VM Poplar server (or several) plus a V-IPU allocation
  of 4, 8, 16 or 64 IPUs; takes external volumes; suspension releases
  everything but the volumes and stops billing;
- a *dedicated vPOD*: the same with bare-metal Poplar servers; no external
  volumes; billed from creation to deletion, suspended or not;
- a *GPU bare-metal* cluster: N whole GPU servers (8 GPUs each), in one
  InfiniBand fabric when the flavor has IB; billed from creation to deletion;
- a *GPU VM* cluster: N VMs each holding a slice of a GPU host.

Names follow the public pattern (``bm1-ai-small-v1pod-4``,
``g2a-ai-fast-v1pod-8``, ``bm3-ai-1xlarge-h100-80-8``,
``g3-ai-24-232-1250-h100-80-1``). Prices are per cluster-hour for vPODs and
per server-hour for GPU clusters; the monthly price is informational (730
hours with the discount printed in the catalog), billing is per minute from
the hourly price (see :mod:`.billing`).
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from decimal import Decimal

from .model import errors

CURRENCY = "USD"
HOURS_PER_MONTH = 730


class ClusterKind(enum.StrEnum):
    VIRTUAL_VPOD = "virtual_vpod"
    DEDICATED_VPOD = "dedicated_vpod"
    GPU_BAREMETAL = "gpu_baremetal"
    GPU_VM = "gpu_vm"


class HostRole(enum.StrEnum):
    """What a registered host is for: whole bare-metal servers, or VMs sharing its GPUs."""

    BAREMETAL = "baremetal"
    HYPERVISOR = "hypervisor"


HOST_MODELS: dict[str, str] = {
    "poplar": "Poplar server (2 × AMD EPYC 7763, no GPU)",
    "h100-80": "NVIDIA H100 SXM 80 GB",
    "a100-80": "NVIDIA A100 SXM 80 GB",
    "a100-40": "NVIDIA A100 PCIe 40 GB",
    "l40s-48": "NVIDIA L40S 48 GB",
}
"""Host models the cloud knows; GPU models are named ``family-memory``."""

GPU_FAMILIES = ("h100", "a100", "l40s")
"""GPU quotas are per family (``gpus_h100`` covers both H100 flavors)."""


def gpu_family(model: str) -> str:
    return model.split("-", 1)[0]


@dataclass(frozen=True)
class Flavor:
    """One orderable shape. ``vcpus``, ``ram_gib`` and ``disk_gib`` are per server."""

    name: str
    kind: ClusterKind
    description: str
    vcpus: int
    ram_gib: int
    disk_gib: int
    network: str
    accelerators: str
    price_per_hour: Decimal
    price_per_month: Decimal
    ipus: int = 0
    """IPUs of the vPOD's V-IPU allocation (vPODs only)."""
    poplar_count: int = 0
    """Poplar servers of a vPOD (0 for GPU clusters)."""
    host_model: str | None = None
    """Model of the host a server takes: ``poplar`` (dedicated vPODs) or a GPU model."""
    gpus_per_server: int = 0
    infiniband: bool = False
    """GPU servers of one cluster must share an InfiniBand fabric."""

    @property
    def is_vpod(self) -> bool:
        return self.kind in (ClusterKind.VIRTUAL_VPOD, ClusterKind.DEDICATED_VPOD)

    @property
    def is_gpu(self) -> bool:
        return not self.is_vpod

    @property
    def bare_metal(self) -> bool:
        return self.kind in (ClusterKind.DEDICATED_VPOD, ClusterKind.GPU_BAREMETAL)

    @property
    def takes_volumes(self) -> bool:
        """Only VMs take external (Cinder-like) volumes; bare metal boots from local disk."""
        return not self.bare_metal

    @property
    def billed_while_suspended(self) -> bool:
        """Bare metal and dedicated vPODs are billed from creation to deletion."""
        return self.bare_metal

    @property
    def suspendable(self) -> bool:
        """vPODs release their IPUs; GPU VMs are shelved; GPU bare metal cannot be."""
        return self.kind is not ClusterKind.GPU_BAREMETAL

    @property
    def resizable(self) -> bool:
        """GPU clusters change their number of servers; a vPOD's shape is its flavor."""
        return self.is_gpu

    @property
    def host_role(self) -> HostRole | None:
        """Which hosts the servers take (None: VM Poplar servers need no registered host)."""
        if self.kind is ClusterKind.VIRTUAL_VPOD:
            return None
        return HostRole.BAREMETAL if self.bare_metal else HostRole.HYPERVISOR

    @property
    def gpu_family(self) -> str | None:
        return gpu_family(self.host_model) if self.is_gpu and self.host_model else None

    def price_of(self, server_count: int) -> Decimal:
        """Hourly price of a cluster: per cluster for vPODs, per server for GPU clusters."""
        return self.price_per_hour if self.is_vpod else self.price_per_hour * server_count

    def meter_quantity(self, server_count: int) -> int:
        """What one metering record counts: 1 vPOD, or N GPU servers."""
        return 1 if self.is_vpod else server_count


def _vpod(
    name: str,
    kind: ClusterKind,
    ipus: int,
    poplar: int,
    hour: str,
    vcpus: int,
    ram: int,
    disk: int = 1920,
) -> Flavor:
    dedicated = kind is ClusterKind.DEDICATED_VPOD
    server = "bare-metal" if dedicated else "VM"
    return Flavor(
        name=name,
        kind=kind,
        description=f"{'Dedicated' if dedicated else 'Virtual'} vPOD-{ipus}: {poplar} {server}"
        f" Poplar server{'s' if poplar > 1 else ''} and {ipus} Bow IPUs",
        vcpus=vcpus,
        ram_gib=ram,
        disk_gib=disk,
        network="2 × 100 GbE RoCE to the IPU-Machines, 10 GbE external",
        accelerators=f"vPOD-{ipus}: {ipus} × Bow IPU ({ipus // 4} IPU-Machine"
        + ("s)" if ipus > 4 else ")"),
        price_per_hour=Decimal(hour),
        price_per_month=(Decimal(hour) * HOURS_PER_MONTH * Decimal("0.85")).quantize(
            Decimal("0.01")
        ),
        ipus=ipus,
        poplar_count=poplar,
        host_model="poplar" if dedicated else None,
    )


def _gpu(
    name: str,
    kind: ClusterKind,
    model: str,
    gpus: int,
    hour: str,
    vcpus: int,
    ram: int,
    disk: int,
    *,
    infiniband: bool = False,
) -> Flavor:
    network = f"{gpus} × 400 Gb/s InfiniBand, 2 × 100 GbE" if infiniband else "2 × 100 GbE"
    what = "Bare-metal server" if kind is ClusterKind.GPU_BAREMETAL else "VM"
    return Flavor(
        name=name,
        kind=kind,
        description=f"{what} with {gpus} × {HOST_MODELS[model]}"
        + (" on InfiniBand" if infiniband else ""),
        vcpus=vcpus,
        ram_gib=ram,
        disk_gib=disk,
        network=network,
        accelerators=f"{gpus} × {HOST_MODELS[model]}",
        price_per_hour=Decimal(hour),
        price_per_month=(Decimal(hour) * HOURS_PER_MONTH * Decimal("0.85")).quantize(
            Decimal("0.01")
        ),
        host_model=model,
        gpus_per_server=gpus,
        infiniband=infiniband,
    )


V, D, BM, VM = (
    ClusterKind.VIRTUAL_VPOD,
    ClusterKind.DEDICATED_VPOD,
    ClusterKind.GPU_BAREMETAL,
    ClusterKind.GPU_VM,
)

# fmt: off
CATALOG: tuple[Flavor, ...] = (
    _vpod("g2a-ai-fast-v1pod-4", V, 4, 1, "2.40", 32, 256, 200),
    _vpod("g2a-ai-fast-v1pod-8", V, 8, 1, "4.60", 48, 384, 400),
    _vpod("g2a-ai-fast-v1pod-16", V, 16, 1, "8.90", 64, 512, 800),
    _vpod("g2a-ai-fast-v1pod-64", V, 64, 2, "34.00", 96, 768, 1600),
    _vpod("bm1-ai-small-v1pod-4", D, 4, 1, "3.10", 128, 512),
    _vpod("bm1-ai-medium-v1pod-16", D, 16, 1, "10.80", 128, 512),
    _vpod("bm1-ai-large-v1pod-64", D, 64, 2, "39.50", 128, 1024),
    _gpu("bm3-ai-1xlarge-h100-80-8", BM, "h100-80", 8, "24.00", 224, 2048, 30720, infiniband=True),
    _gpu("bm3-ai-1xlarge-a100-80-8", BM, "a100-80", 8, "14.50", 128, 2048, 7680, infiniband=True),
    _gpu("bm2-ai-large-a100-40-8", BM, "a100-40", 8, "9.80", 64, 1024, 3840),
    _gpu("bm3-ai-large-l40s-48-8", BM, "l40s-48", 8, "8.20", 64, 1024, 3840),
    _gpu("g3-ai-24-232-1250-h100-80-1", VM, "h100-80", 1, "3.20", 24, 232, 1250),
    _gpu("g3-ai-48-464-2500-h100-80-2", VM, "h100-80", 2, "6.40", 48, 464, 2500),
    _gpu("g3-ai-16-116-600-a100-80-1", VM, "a100-80", 1, "1.95", 16, 116, 600),
    _gpu("g3-ai-12-96-400-l40s-48-1", VM, "l40s-48", 1, "1.10", 12, 96, 400),
)
# fmt: on
"""Every flavor, in the order the catalog lists them."""

_BY_NAME = {flavor.name: flavor for flavor in CATALOG}


def find_flavor(name: str) -> Flavor:
    """The flavor called ``name``; InvalidArgument naming close alternatives if unknown."""
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    close = difflib.get_close_matches(name, list(_BY_NAME), n=3, cutoff=0.75)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise errors.InvalidArgument(f"there is no flavor {name!r}{hint}: `vpod flavors` lists them")


# -- images -----------------------------------------------------------------------------

POPLAR_IMAGES = ("ubuntu-22.04-poplar-3.4", "ubuntu-20.04-poplar-3.3")
GPU_IMAGES = ("ubuntu-22.04-cuda-12.4", "ubuntu-22.04-cuda-12.6")


def images_for(flavor: Flavor) -> tuple[str, ...]:
    """The images a flavor's servers boot (the first is the default)."""
    return POPLAR_IMAGES if flavor.is_vpod else GPU_IMAGES


def check_image(flavor: Flavor, image: str | None) -> str:
    """The image to boot: ``image`` if the flavor takes it, else the default."""
    allowed = images_for(flavor)
    if image is None or image == "":
        return allowed[0]
    if image not in allowed:
        raise errors.InvalidArgument(
            f"image {image!r} does not run on {flavor.name}: use one of {', '.join(allowed)}"
        )
    return image


# -- volumes ----------------------------------------------------------------------------

VOLUME_PRICE_PER_GIB_HOUR: dict[str, Decimal] = {
    "standard": Decimal("0.00012"),
    "ssd": Decimal("0.00025"),
}
"""Volumes cost their size from creation to deletion (about 0.09 and 0.18 per GiB-month)."""


def volume_item(volume_type: str) -> str:
    """How a volume appears on an invoice."""
    return f"volume:{volume_type}"
