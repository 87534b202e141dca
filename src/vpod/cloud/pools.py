"""The hardware pools every flavor draws from, and what each cluster holds or is about to take.
Pure.

This is the one account of capacity that reservations are checked against:
whatever the flavor kind (virtual or dedicated vPOD, GPU bare metal or VM),
a create, resize or resume asks for :func:`draws` units of each pool, and a
cluster counts in a pool from the moment it is admitted (*pending*: recorded,
its task not yet holding the hardware) until it gives the hardware back
(*held*). Counting pending clusters is what keeps two requests admitted one
after the other from both being promised the same free units.

Pools: ``ipu-machines`` (the cloud's V-IPU clusters, 4 IPUs a machine; both
vPOD kinds draw from it) and ``baremetal:MODEL`` (whole bare-metal hosts of a
model: GPU bare-metal servers, and the Poplar hosts of dedicated vPODs). GPU
VMs share hypervisors' slots, which no reservation holds: they draw from no
pool here and only host placement limits them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .flavors import Flavor, HostRole
from .model.records import Cluster, Server
from .model.statuses import ClusterStatus

IPU_MACHINE_POOL = "ipu-machines"
IPUS_PER_MACHINE = 4

_ADMITTED = frozenset({ClusterStatus.NEW, ClusterStatus.CREATING})
"""A vPOD in these statuses without an allocation yet is about to take one."""
_GONE = frozenset({ClusterStatus.ERROR, ClusterStatus.DELETED})
"""A server of a cluster in these statuses that has no host will never take one."""


def host_pool(model: str) -> str:
    return f"baremetal:{model}"


def draws(flavor: Flavor, count: int) -> dict[str, int]:
    """Units of each pool that ``count`` clusters (vPODs) or servers (GPU) of ``flavor`` take."""
    taken: dict[str, int] = {}
    if flavor.is_vpod:
        taken[IPU_MACHINE_POOL] = count * (flavor.ipus // IPUS_PER_MACHINE)
    if flavor.host_role is HostRole.BAREMETAL and flavor.host_model is not None:
        per = flavor.poplar_count if flavor.is_vpod else 1
        taken[host_pool(flavor.host_model)] = count * per
    return taken


def draws_on_resume(flavor: Flavor) -> dict[str, int]:
    """What a suspended cluster of ``flavor`` takes back on resume: a vPOD its IPU-Machines
    (its servers kept their hosts, powered off or shelved); anything else nothing."""
    return {IPU_MACHINE_POOL: draws(flavor, 1)[IPU_MACHINE_POOL]} if flavor.is_vpod else {}


def pools_of(flavors: Iterable[Flavor]) -> list[str]:
    """Every pool some of ``flavors`` draw from, in a stable order."""
    return sorted({pool for flavor in flavors for pool in draws(flavor, 1)})


@dataclass
class Claims:
    """What the cloud's clusters hold and are about to take, per pool, and what each
    (project, flavor) uses of its flavor (what reservations of that flavor cover)."""

    held: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    pending: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    using: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))


def claims_of(
    clusters: Iterable[tuple[Cluster, Flavor]],
    servers: Sequence[Server],
    resuming: Iterable[str],
) -> Claims:
    """Add up every cluster's claims; ``resuming``: ids of clusters a resume task is bringing
    back (they stay SUSPENDED until it ends)."""
    claims = Claims()
    back = set(resuming)
    by_cluster: dict[str, list[Server]] = defaultdict(list)
    for server in servers:
        by_cluster[server.cluster_id].append(server)
    for cluster, flavor in clusters:
        own = by_cluster.get(cluster.id, [])
        uses = 0
        if flavor.is_vpod:
            machines = draws(flavor, 1)[IPU_MACHINE_POOL]
            if cluster.allocation_id is not None:
                claims.held[IPU_MACHINE_POOL] += machines
                uses = 1
            elif cluster.status in _ADMITTED or cluster.id in back:
                claims.pending[IPU_MACHINE_POOL] += machines
                uses = 1
        elif cluster.status not in _GONE:
            uses = cluster.server_count
        if flavor.host_role is HostRole.BAREMETAL and flavor.host_model is not None:
            pool = host_pool(flavor.host_model)
            claims.held[pool] += sum(1 for s in own if s.host_id is not None)
            if cluster.status not in _GONE:
                claims.pending[pool] += sum(1 for s in own if s.host_id is None)
        if uses:
            claims.using[(cluster.project_id, flavor.name)] += uses
    return claims
