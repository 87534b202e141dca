"""Quota arithmetic: what a request needs, and whether it fits a project's limits. Pure.

A project has one limit per quota name (:data:`QUOTA_NAMES`); ``-1`` means
unlimited. Usage counts every cluster and volume the project holds, whatever
its status: a suspended vPOD still counts its IPUs, so that resuming it can
never be refused by a quota (only by capacity). ``check_limits`` answers
before creation; the store repeats the check inside the transaction that
records the cluster, so two concurrent requests cannot both squeeze in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .flavors import GPU_FAMILIES, Flavor
from .model import errors
from .model.tenants import Project

UNLIMITED = -1
MAX_LIMIT = 10**9
"""The largest finite quota (anything larger is as good as unlimited: say -1)."""

QUOTA_NAMES: tuple[str, ...] = (
    "clusters",
    "ipus",
    *(f"gpus_{family}" for family in GPU_FAMILIES),
    "volumes",
    "volume_gib",
    "reserved_units",
    "keypairs",
    "dataset_storages",
)

DEFAULT_QUOTAS: Mapping[str, int] = {
    "clusters": 10,
    "ipus": 128,
    "gpus_h100": 32,
    "gpus_a100": 32,
    "gpus_l40s": 32,
    "volumes": 40,
    "volume_gib": 20_000,
    "reserved_units": 16,
    "keypairs": 100,
    "dataset_storages": 20,
}
"""What a new project gets unless the administrator says otherwise."""

QUOTA_HELP: Mapping[str, str] = {
    "clusters": "AI clusters, in any status",
    "ipus": "IPUs of the project's vPODs (suspended ones included)",
    "gpus_h100": "H100 GPUs of the project's GPU clusters",
    "gpus_a100": "A100 GPUs of the project's GPU clusters",
    "gpus_l40s": "L40S GPUs of the project's GPU clusters",
    "volumes": "volumes, boot and data",
    "volume_gib": "GiB of all volumes together",
    "reserved_units": "units (vPODs or GPU servers) of the project's active reservations",
    "keypairs": "SSH keypairs, made or imported",
    "dataset_storages": "registered dataset storages (S3 endpoints and their credentials)",
}


def check_quota_names(limits: Mapping[str, int]) -> dict[str, int]:
    """``limits`` with every name known and every value -1 or more; InvalidArgument otherwise."""
    unknown = sorted(set(limits) - set(QUOTA_NAMES))
    if unknown:
        raise errors.InvalidArgument(
            f"unknown quota {unknown[0]!r}: the quotas are {', '.join(QUOTA_NAMES)}"
        )
    for name, value in limits.items():
        if not UNLIMITED <= value <= MAX_LIMIT:
            raise errors.InvalidArgument(
                f"quota {name} = {value} is not a limit: use 0 to {MAX_LIMIT}, or -1 for unlimited"
            )
    return dict(limits)


def with_defaults(limits: Mapping[str, int]) -> dict[str, int]:
    return {name: limits.get(name, DEFAULT_QUOTAS[name]) for name in QUOTA_NAMES}


def cluster_demand(
    flavor: Flavor, server_count: int, new_volume_gib: Iterable[int] = ()
) -> dict[str, int]:
    """What creating one cluster takes from the quotas (new volumes included)."""
    demand = {"clusters": 1}
    demand.update(server_demand(flavor, server_count))
    demand.update(volume_demand(new_volume_gib))
    return demand


def server_demand(flavor: Flavor, server_count: int) -> dict[str, int]:
    """IPUs or GPUs of a cluster of ``server_count`` servers (resize asks for the difference)."""
    if flavor.is_vpod:
        return {"ipus": flavor.ipus}
    family = flavor.gpu_family
    assert family is not None
    return {f"gpus_{family}": flavor.gpus_per_server * server_count}


def volume_demand(sizes_gib: Iterable[int]) -> dict[str, int]:
    sizes = list(sizes_gib)
    if not sizes:
        return {}
    return {"volumes": len(sizes), "volume_gib": sum(sizes)}


class QuotaExceeded(errors.NoCapacity):
    """A request would overrun a project's quota (HTTP 409 ``RESOURCE_EXHAUSTED``)."""


@dataclass(frozen=True)
class Exceeded:
    """One quota a request would overrun."""

    quota: str
    limit: int
    used: int
    requested: int

    def sentence(self) -> str:
        left = max(self.limit - self.used, 0)
        return (
            f"quota {self.quota} is {self.limit} and {self.used} are in use, so {left} are"
            f" left but {self.requested} were asked for"
        )


def check_limits(
    limits: Mapping[str, int], used: Mapping[str, int], requested: Mapping[str, int]
) -> list[Exceeded]:
    """Every quota ``requested`` would overrun, in :data:`QUOTA_NAMES` order (empty: fits)."""
    full = with_defaults(limits)
    over = []
    for name in QUOTA_NAMES:
        want = requested.get(name, 0)
        limit = full[name]
        if want <= 0 or limit == UNLIMITED:
            continue
        have = used.get(name, 0)
        if have + want > limit:
            over.append(Exceeded(quota=name, limit=limit, used=have, requested=want))
    return over


def refuse_if_exceeded(project_id: str, over: list[Exceeded]) -> None:
    """Raise QuotaExceeded naming every overrun quota (nothing when ``over`` is empty)."""
    if over:
        raise QuotaExceeded(
            f"project {project_id} is over quota: "
            + "; ".join(e.sentence() for e in over)
            + ": delete something, or ask the administrator for more"
        )


def admit_within(demand: Mapping[str, int]) -> Callable[[Project, Mapping[str, int]], None]:
    """The admission of a request for ``demand``, run inside the transaction that records it
    (with the project and its usage as they are there): QuotaExceeded naming every quota it
    would overrun."""

    def admit(project: Project, used: Mapping[str, int]) -> None:
        refuse_if_exceeded(project.id, check_limits(project.quotas, used, demand))

    return admit
